"""The background syncer: one process per synced vault that commits and pushes each write.

How it is found, started and stopped, and why it exists, is ``syncer.py``. Here
is its life: it takes the vault's syncer lock (waiting for a syncer of another
layout to leave), stages every note of each route once, then looks at the
journal every ``POLL`` seconds and sends what it names, fetching every
``view.WATCH_EVERY`` seconds while an agent of the machine is in use, backing off
while the remote cannot be reached, until it is idle, stopped, or its vault goes.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

from ...core.errors import AgentMemVaultError
from ...core.runtime import runtime_dir
from ..folder.layout import MODULES
from ..ops.base import VaultBase
from ..ops.port import SyncPort
from .engine import sync_route
from .journal import journal_file
from .port import GitSync
from .routes import config_file, load_config
from .syncer import POLL, RETRY_MAX, holder, idle_limit, in_use_at, lock_path, stamp
from .view import WATCH_EVERY

__all__ = ["TAKE_OVER", "main"]

TAKE_OVER = 30.0
"""Seconds a new syncer waits for one of another layout to finish its push and leave."""


class _SyncerVault(VaultBase):
    """The vault as the syncer drives it: the lock, the index and git's port."""

    def _port(self) -> SyncPort:
        return GitSync(self.path)


def main(root_arg: str) -> int:
    """The syncer's life; 0 when it leaves (another one runs, idle, or the vault went)."""
    import signal

    root = Path(root_arg)
    try:
        fd = os.open(lock_path(root), os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        return 0
    if not _take_over(root, fd):
        os.close(fd)
        return 0  # another syncer of this layout has the vault
    os.ftruncate(fd, 0)
    os.write(fd, stamp())
    stopping: list[bool] = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    marker = _register(root)
    try:
        _run(root, marker, stopping)
    finally:
        if marker is not None:
            marker.unlink(missing_ok=True)
        os.close(fd)
    return 0


def _take_over(root: Path, fd: int) -> bool:
    """The syncer's lock on ``fd``: at once, or once a syncer of another layout (asked to
    leave by ``ensure_syncer``) has gone, within ``TAKE_OVER`` seconds. False when a
    syncer of this layout holds it, or the other one stays."""
    deadline = time.monotonic() + TAKE_OVER
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError:
            pass
        running = holder(root)
        if running is not None and running[1] == MODULES:
            return False
        if time.monotonic() > deadline:
            return False
        time.sleep(POLL)


def _register(root: Path) -> Path | None:
    """A file in the runtime folder naming this syncer: the syncer leaves when the folder
    goes (a test run's, a session's), as the warm process and the keeper do."""
    import hashlib

    try:
        folder = runtime_dir(create=True)
    except OSError:
        return None
    key = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:20]
    marker = folder / f"syncer-{key}.pid"
    try:
        marker.write_text(str(os.getpid()))
    except OSError:
        return None
    return marker


def _run(root: Path, marker: Path | None, stopping: list[bool]) -> None:
    from ..service.vault import Vault

    vault = Vault(root)
    idle = idle_limit()
    last_work = time.monotonic()
    retry_at: float | None = None
    backoff = 0.0
    first = True
    next_watch = 0.0
    journal = journal_file(root)
    while not stopping:
        if not config_file(root).is_file() or (marker is not None and not marker.exists()):
            return
        now = time.monotonic()
        try:
            waiting = os.stat(journal).st_size > 0
        except FileNotFoundError:
            waiting = False
        looked = in_use_at(root)
        watching = looked is not None and time.time() - looked < idle
        retrying = retry_at is not None and now >= retry_at
        # While an agent here is in use, the remote is fetched every WATCH_EVERY seconds
        # (and at each retry after a failure), so its views need not ask it themselves.
        fetch = watching and (retrying or (retry_at is None and now >= next_watch))
        if first or waiting or retrying or fetch:
            try:
                config = load_config(root)
                if config is None:
                    return
                # A look at the remote with nothing to send gives up after the usual
                # network timeout, not a large push's patience: it holds the route's turn.
                patient = first or waiting or not fetch
                for route in config.routes:
                    sync_route(vault, config, route, fetch=fetch, full=first, patient=patient)
            except ImportError:
                # The package was upgraded under this process and its modules moved: it
                # leaves, with every change still on disk and in the journal, and the
                # next write starts a syncer of the new release (``ensure_syncer``).
                return
            except (AgentMemVaultError, OSError):
                # Recorded in the route's state (sync --status, doctor); tried again.
                backoff = min(RETRY_MAX, max(1.0, backoff * 2))
                retry_at = time.monotonic() + backoff
            except Exception:  # a bug: tried again later rather than lost
                backoff = RETRY_MAX
                retry_at = time.monotonic() + backoff
            else:
                backoff, retry_at = 0.0, None
            if fetch:
                next_watch = time.monotonic() + WATCH_EVERY
            if first or waiting or retrying:
                last_work = time.monotonic()
            first = False
        elif retry_at is None and not watching and now - last_work > idle:
            return
        time.sleep(POLL)
    vault.close()
