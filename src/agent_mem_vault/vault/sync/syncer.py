"""The background syncer: one process per synced vault that commits and pushes each write.

A write must not wait for the network, and most writers (a CLI command, a
session hook) are gone a moment later. So every write only appends to the
journal (``journal.py``) and makes sure this process runs: it looks at the
journal every ``POLL`` seconds, commits what it names, and pushes each route
that has something new, fetching and merging only when a push is refused. On
a reachable remote a write is out within a second (docs/benchmarks.md).

A remote that cannot be reached is tried again after 1, 2, 4 … up to 60
seconds, for as long as something waits to go out: nothing written offline is
lost (the notes are on disk, committed), and it goes out at the first chance.
The syncer leaves after ``IDLE_ENV`` seconds (default 600) with nothing to do,
or as soon as the vault, its sync folder or the runtime folder it registered in
goes. It starts by staging every note of each route (a change whose journal
entry was lost is picked up then).

It holds an ``flock`` on ``<sync dir>/syncer.lock`` for its life (one per
vault; a killed one is seen at once) and writes its pid there.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

from ...core.runtime import runtime_dir, start_detached
from .routes import SYNC_DIR, config_file

__all__ = ["AUTO_ENV", "IDLE_ENV", "ensure_syncer", "main", "stop_syncer", "syncer_running"]

AUTO_ENV = "AGENT_MEM_VAULT_SYNC_AUTO"
"""``0``, ``off``, ``no`` or ``false``: no background syncer; notes go out only with
``agent-mem-vault sync`` (and a read's claim, which must reach the remote)."""
IDLE_ENV = "AGENT_MEM_VAULT_SYNC_IDLE"
"""Seconds the syncer waits with nothing to push before it leaves (default 600)."""
POLL = 0.1
"""Seconds between two looks at the journal."""
RETRY_MAX = 60.0
LOCK = "syncer.lock"
_ENTRY = (
    "import sys; from agent_mem_vault.vault.sync.syncer import main; sys.exit(main(sys.argv[1]))"
)
_spawned: dict[str, float] = {}


def _lock_path(root: Path) -> Path:
    return root / SYNC_DIR / LOCK


def syncer_running(root: Path) -> int | None:
    """The pid of the vault's syncer, or None if none runs."""
    path = _lock_path(root)
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            raw = os.read(fd, 64).decode("ascii", "replace").strip()
            return int(raw) if raw.isdigit() else -1
        return None
    finally:
        os.close(fd)


def ensure_syncer(root: Path) -> bool:
    """Start the vault's syncer, detached, unless one runs (or this process started one
    less than a second ago); True if one was started."""
    if os.environ.get(AUTO_ENV, "").strip().lower() in ("0", "off", "no", "false"):
        return False
    key = str(root)
    now = time.monotonic()
    if now - _spawned.get(key, -10.0) < 1.0 or syncer_running(root) is not None:
        return False
    _spawned[key] = now
    return start_detached(_ENTRY, str(root))


def stop_syncer(root: Path, wait: float = 10.0) -> bool:
    """Ask the vault's syncer to leave (it finishes a push under way); True once none runs."""
    pid = syncer_running(root)
    if pid is None:
        return True
    if pid > 0:
        import signal

        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return True
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if syncer_running(root) is None:
            return True
        time.sleep(0.05)
    return False


def _idle_limit() -> float:
    try:
        return float(os.environ.get(IDLE_ENV, "") or 600.0)
    except ValueError:
        return 600.0


def main(root_arg: str) -> int:
    """The syncer's life; 0 when it leaves (another one runs, idle, or the vault went)."""
    import signal

    root = Path(root_arg)
    try:
        fd = os.open(_lock_path(root), os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        return 0
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return 0  # another syncer has the vault
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode())
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
    from ...core.errors import AgentMemVaultError
    from ..service import Vault
    from .engine import sync_route
    from .journal import journal_file
    from .routes import load_config

    vault = Vault(root)
    idle = _idle_limit()
    last_work = time.monotonic()
    retry_at: float | None = None
    backoff = 0.0
    first = True
    journal = journal_file(root)
    while not stopping:
        if not config_file(root).is_file() or (marker is not None and not marker.exists()):
            return
        now = time.monotonic()
        try:
            waiting = os.stat(journal).st_size > 0
        except FileNotFoundError:
            waiting = False
        due = first or waiting or (retry_at is not None and now >= retry_at)
        if due:
            try:
                config = load_config(root)
                if config is None:
                    return
                for route in config.routes:
                    sync_route(vault, config, route, fetch=False, full=first)
            except (AgentMemVaultError, OSError):
                # Recorded in the route's state (sync --status, doctor); tried again.
                backoff = min(RETRY_MAX, max(1.0, backoff * 2))
                retry_at = time.monotonic() + backoff
            except Exception:  # a bug: tried again later rather than lost
                backoff = RETRY_MAX
                retry_at = time.monotonic() + backoff
            else:
                backoff, retry_at = 0.0, None
            first = False
            last_work = time.monotonic()
        elif retry_at is None and now - last_work > idle:
            return
        time.sleep(POLL)
    vault.close()
