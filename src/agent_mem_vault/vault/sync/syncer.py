"""Finding, starting and stopping the background syncer (the process: ``background.py``).

A write must not wait for the network, and most writers (a CLI command, a
session hook) are gone a moment later. So every write only appends to the
journal (``journal.py``) and makes sure this process runs: it looks at the
journal every ``POLL`` seconds, commits what it names, and pushes each route
that has something new, fetching and merging only when a push is refused. On
a reachable remote a write is out within a second (docs/benchmarks.md).

While an agent of the machine is in use (``mark_in_use``: a session start, a
listing), it also fetches and merges every few seconds, so that a session start
lists what another machine sent without asking the remote itself (``view.py``).

A remote that cannot be reached is tried again after 1, 2, 4 … up to 60
seconds, for as long as something waits to go out: nothing written offline is
lost (the notes are on disk, committed), and it goes out at the first chance.
The syncer leaves after ``IDLE_ENV`` seconds (default 600) with nothing to do,
or as soon as the vault, its sync folder or the runtime folder it registered in
goes. It starts by staging every note of each route (a change whose journal
entry was lost is picked up then).

It holds an ``flock`` on ``<sync dir>/syncer.lock`` for its life (one per
vault; a killed one is seen at once) and writes there its pid and the layout of
the package's modules it was started from (``folder.layout.MODULES``). A syncer
outlives ``pip install -U`` and imports some modules late; one of another layout
(an older release wrote only its pid) is asked to leave by the next write, and
the syncer started in its place takes the vault once it has gone.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from pathlib import Path

from ...core.runtime import start_detached
from ..folder.layout import MODULES
from .routes import SYNC_DIR

__all__ = [
    "AUTO_ENV",
    "IDLE_ENV",
    "LOCK",
    "ensure_syncer",
    "idle_limit",
    "in_use_at",
    "mark_in_use",
    "stop_syncer",
    "syncer_running",
]

AUTO_ENV = "AGENT_MEM_VAULT_SYNC_AUTO"
"""``0``, ``off``, ``no`` or ``false``: no background syncer; notes go out only with
``agent-mem-vault sync`` (and a read's claim, which must reach the remote)."""
IDLE_ENV = "AGENT_MEM_VAULT_SYNC_IDLE"
"""Seconds the syncer waits with nothing to push before it leaves (default 600)."""
POLL = 0.1
"""Seconds between two looks at the journal."""
RETRY_MAX = 60.0
LOCK = "syncer.lock"
IN_USE = "in-use"
"""A file whose mtime is when an agent of this machine last looked at the vault (a
session start, a listing): while that is recent, the syncer watches the remote."""
_ENTRY = (
    "import sys; from agent_mem_vault.vault.sync.background import main; "
    "sys.exit(main(sys.argv[1]))"
)
_spawned: dict[str, float] = {}


def lock_path(root: Path) -> Path:
    return root / SYNC_DIR / LOCK


def stamp() -> bytes:
    """What a syncer writes into its lock file: its pid and the modules' layout."""
    return f"{os.getpid()} {MODULES}".encode()


def holder(root: Path) -> tuple[int, str] | None:
    """(pid, layout) of the vault's running syncer, or None if none runs; the pid is -1
    if it cannot be read, the layout '' for a syncer of a release that wrote none."""
    try:
        fd = os.open(lock_path(root), os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            pid, _, layout = os.read(fd, 128).decode("ascii", "replace").strip().partition(" ")
            return (int(pid) if pid.isdigit() else -1), layout
        return None
    finally:
        os.close(fd)


def idle_limit() -> float:
    """Seconds the syncer stays with nothing to send and nobody looking (``IDLE_ENV``)."""
    try:
        return float(os.environ.get(IDLE_ENV, "") or 600.0)
    except ValueError:
        return 600.0


def mark_in_use(root: Path) -> None:
    """Say that an agent of this machine is looking at the vault now: the syncer then
    fetches every few seconds (``view.WATCH_EVERY``) until it has been idle a while."""
    path = root / SYNC_DIR / IN_USE
    try:
        os.utime(path)
    except FileNotFoundError:
        with contextlib.suppress(OSError):
            path.touch()
    except OSError:
        pass


def in_use_at(root: Path) -> float | None:
    """When an agent of this machine last looked at the vault (``time.time()``), if ever."""
    try:
        return os.stat(root / SYNC_DIR / IN_USE).st_mtime
    except OSError:
        return None


def syncer_running(root: Path) -> int | None:
    """The pid of the vault's syncer (-1 if it cannot be read), or None if none runs."""
    found = holder(root)
    return None if found is None else found[0]


def ensure_syncer(root: Path) -> bool:
    """Start the vault's syncer, detached, unless one runs (or this process started one
    less than a second ago); True if one was started."""
    if os.environ.get(AUTO_ENV, "").strip().lower() in ("0", "off", "no", "false"):
        return False
    key = str(root)
    now = time.monotonic()
    if now - _spawned.get(key, -10.0) < 1.0:
        return False
    running = holder(root)
    if running is not None:
        pid, layout = running
        if layout == MODULES or pid <= 0:
            return False
        _ask_to_leave(pid)  # an older one: ours waits for it (``background.main``)
    _spawned[key] = now
    return start_detached(_ENTRY, str(root))


def _ask_to_leave(pid: int) -> None:
    """SIGTERM: a syncer finishes the push under way, then leaves."""
    import signal

    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGTERM)


def stop_syncer(root: Path, wait: float = 10.0) -> bool:
    """Ask the vault's syncer to leave (it finishes a push under way); True once none runs."""
    pid = syncer_running(root)
    if pid is None:
        return True
    if pid > 0:
        _ask_to_leave(pid)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if syncer_running(root) is None:
            return True
        time.sleep(0.05)
    return False
