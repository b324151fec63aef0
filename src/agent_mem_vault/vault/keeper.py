"""The vault keeper: one process per vault that watches the notes, so other processes need not.

Without it, every fresh process (a CLI command, a session hook, an MCP server
starting) must ``stat`` each note of the namespace it reads to see notes a
person edited in place (Obsidian saves in place, which leaves the folder's
mtime alone): 10,000 notes cost 30–50 ms on a small machine, at every session
start. The keeper pays for that once: it watches every folder of the vault
(``watch.NoteWatcher``, inotify / FSEvents), applies what changes to the index
as it happens, and answers each process that asks whether the index is
current.

The answer must cover every change made before the question, and an event
can sit in the operating system's queue for a moment before the watcher
reads it. So every look at the watch is a *barrier* (``NoteWatcher._drain``):
on Linux a non-blocking read of the inotify queue, which holds every change
made before the read; elsewhere the watcher makes a file with a new name in a
watched folder of its own, and reads events until that file's event arrives
(the queue is in order, so every change made before the question has been read
by then, and none is dropped: watchfiles drops what it gathered when a wait
times out, so no wait is left to time out). The keeper applies them all to the index
(under the vault lock) and answers ``{"ok": true}``. If the lock is held (by
the asking process itself, inside a write, or by another writer) the keeper
answers with the notes and folders still to apply, and the asking process
applies them under its own lock. Until its first full check of the vault is
done, and while a new folder waits to be watched (a new namespace: a moment,
see ``watch.py``), it answers ``{"ok": false}`` and the caller checks by
``stat`` itself.

Started by the first process that paid for a namespace of at least
``START_FROM`` notes (detached, in its own session); it leaves after
``IDLE_ENV`` seconds without a question (default 1800), or when its socket or
the vault goes. ``agent-mem-vault keeper`` runs one in the foreground, shows
it, or stops it. ``AGENT_MEM_VAULT_KEEPER=off`` turns it off: then nothing
connects or starts one. A process asks it only where a question is cheaper
than checking by ``stat`` (``ASK_FROM``).

The keeper holds an ``flock`` on ``.agent-mem-vault/keeper.lock`` for its life
(so there is one per vault, and a killed one is seen at once) and writes its
pid there. It listens in the user's private runtime folder (``core.runtime``),
on a socket named after the vault's path: a process asks only there, so only a
keeper of its own user can answer, and trusts only an answer that names its
own vault folder (device and inode) and its own version (``code_key``).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sys
import time
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..core.errors import InvalidInputError, UnavailableError
from ..core.runtime import process_alive, runtime_dir, start_detached
from .watch import watchable

if TYPE_CHECKING:
    import socket

# ``socket``, ``select``, ``subprocess`` and ``hashlib`` are imported where used:
# every process imports this module, few of them talk to a keeper.

__all__ = [
    "ASK_FROM",
    "IDLE_ENV",
    "START_FROM",
    "SWITCH_ENV",
    "KeeperLink",
    "Told",
    "keeper_mode",
    "keeper_status",
    "run_keeper",
    "stop_keeper",
]

SWITCH_ENV = "AGENT_MEM_VAULT_KEEPER"
"""``0``, ``off``, ``no`` or ``false``: never ask or start a keeper. ``always``: ask
it at every check, however few notes (``ASK_FROM``): for a vault whose notes are
edited by tools that keep their size and mtime, which only a watch sees. Unset (or
``1``, ``on``, ``yes``, ``true``): as the number of notes makes worth it. Read by
``keeper_mode`` only."""
IDLE_ENV = "AGENT_MEM_VAULT_KEEPER_IDLE"
"""Seconds the keeper waits for a question before it leaves (default 1800)."""
START_FROM = 2000
"""Notes a call checked by ``stat`` from which it starts a keeper for next time."""
ASK_FROM = 1000
"""The ``stat`` calls (one per known folder, one per note of the folders read) from
which asking the keeper is cheaper than checking by ``stat``: a question costs a
fresh process about a millisecond (a socket, a round trip, the keeper's look at
its watch), a ``stat`` a few microseconds. Below it the keeper is not asked."""
ASK_TIMEOUT = 0.5
"""How long a process waits for the keeper's answer before checking by ``stat`` itself
(the keeper answers in milliseconds; one that is busy is not waited for)."""
WATCH_SETUP_LIMIT = 60.0
"""Seconds the keeper waits for its watch to be set up before it gives up and leaves."""
QUIET_TICK = 4.0
"""The longest the keeper goes without a look at the watch when nothing changes."""
TICK = 0.25
"""Seconds between the keeper's looks at the watcher when nobody asks."""

CHECK_EVERY = 600.0
"""Seconds of use between two checks of every note against the index: a safety net
for events the operating system lost."""
BURST = 1000
"""Changes told within ``BURST_WINDOW`` seconds from which the keeper checks
everything again: a burst that fills the kernel's queue of events (16,384 by
default on Linux) loses events, and watchfiles does not pass that notice on."""
BURST_WINDOW = 2.0

LOCK_NAME = "keeper.lock"
_UNSURE = -2
"""``ready_gen`` after a burst: no watch generation matches it."""
_OFF = frozenset({"0", "off", "no", "false"})
_ON = frozenset({"", "1", "on", "yes", "true"})


def keeper_mode(env: Mapping[str, str] | None = None) -> Literal["off", "on", "always"]:
    """``AGENT_MEM_VAULT_KEEPER`` (see ``SWITCH_ENV``): ``off``, ``on`` or ``always``.

    Any other value is an error naming the variable, raised when a vault is opened:
    taken as on, a typo of ``off`` would start keepers someone meant to turn off,
    and one of ``always`` would quietly not ask at every check.
    """
    value = (os.environ if env is None else env).get(SWITCH_ENV, "").strip().lower()
    if value in _OFF:
        return "off"
    if value == "always":
        return "always"
    if value in _ON:
        return "on"
    raise InvalidInputError(
        f"{SWITCH_ENV} must be off (or 0, no, false), on (or unset, 1, yes, true) "
        f"or always, not {value!r}",
        code="invalid_setting",
        field=SWITCH_ENV,
    )


def _enabled(mode: str) -> bool:
    """Whether a keeper may be asked or started: not turned off, and a system it runs on."""
    return mode != "off" and sys.platform in ("linux", "darwin")


def code_key() -> str:
    """The keeper's version: a keeper of another version (an upgrade, another install)
    could read notes differently or write another index layout, so it is not asked."""
    from .. import __version__
    from .index import MIGRATIONS

    return f"{__version__}/{MIGRATIONS[-1][0]}"


@dataclass(slots=True)
class Told:
    """The keeper's answer: the index is current once ``files`` and ``dirs`` (relative
    paths the keeper could not apply itself, its lock being taken) are applied."""

    files: set[str] = field(default_factory=set)
    dirs: set[str] = field(default_factory=set)


def _dot(root: Path) -> Path:
    from .base import DOT_DIR

    return root / DOT_DIR


def _identity(root: Path) -> list[int] | None:
    """Which folder ``root`` is (device and inode): a vault copied elsewhere, or
    removed and made again at the same path, is another folder with another index."""
    try:
        st = os.stat(root)
    except OSError:
        return None
    return [st.st_dev, st.st_ino]


def _inside(path: str) -> bool:
    """A path relative to the vault that stays inside it."""
    return not path.startswith("/") and ".." not in path.split("/")


def _read_info(root: Path) -> dict[str, Any] | None:
    """What the running keeper wrote into its lock file; None if there is none."""
    try:
        info = json.loads((_dot(root) / LOCK_NAME).read_bytes())
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) else None


def _ask(sock_path: str, request: dict[str, Any], timeout: float) -> dict[str, Any] | None:
    """One request, one JSON line back; None if nobody answers within ``timeout``.

    Through ``_socket``, the C module under ``socket``: importing ``socket`` itself
    builds its enums, several milliseconds of a fresh process's first call, more
    than the question costs."""
    import _socket

    deadline = time.monotonic() + timeout
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    conn.settimeout(timeout)
    try:
        conn.connect(sock_path)
        conn.sendall(json.dumps(request).encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            conn.settimeout(left)
            chunk = conn.recv(65536)
            if not chunk:
                return None
            data += chunk
    except OSError:
        return None
    finally:
        conn.close()
    try:
        reply = json.loads(data)
    except ValueError:
        return None
    return reply if isinstance(reply, dict) else None


def _lock_free(path: Path) -> bool:
    """True if no keeper holds (or is taking) the lock file at ``path``."""
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return True  # no keeper ever ran here
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    finally:
        os.close(fd)  # closing releases the lock if it was taken
    return True


class KeeperLink:
    """A process's side: ask the vault's keeper, or start one."""

    def __init__(self, root: Path) -> None:
        self.root = root
        mode = keeper_mode()
        self.enabled = _enabled(mode)
        self.always = mode == "always"
        """Asked at every check, not only where cheaper than a check by ``stat``."""
        self._started = False

    def ask(self) -> Told | None:
        """The keeper's answer to "is the index current?"; None if there is no keeper
        ready (then the caller checks by ``stat``)."""
        if not self.enabled:
            return None
        info = _read_info(self.root)
        pid = info.get("pid") if info is not None else None
        if not isinstance(pid, int) or not process_alive(pid):
            return None  # none runs: the sockets module need not even be imported
        try:
            sock = socket_for(self.root)
        except (OSError, PermissionError):
            return None
        reply = _ask(str(sock), {"sync": True}, ASK_TIMEOUT)
        if reply is None or reply.get("ok") is not True:
            return None
        if reply.get("key") != code_key():
            # Another version: not trusted, and asked to leave, so that a keeper of
            # this version can take its place at the next call that checks by stat.
            _ask(str(sock), {"stop": True}, ASK_TIMEOUT)
            return None
        if reply.get("root") != _identity(self.root):
            return None  # the keeper of another folder: a copied vault, or one made anew
        files, dirs = reply.get("files", []), reply.get("dirs", [])
        if not isinstance(files, list) or not isinstance(dirs, list):
            return None
        told = Told({str(f) for f in files}, {str(d) for d in dirs})
        if not all(_inside(p) for p in told.files | told.dirs):
            return None
        return told

    def start(self) -> bool:
        """Start a keeper for this vault, detached, unless one runs or this process
        already started one; True if one was started."""
        if not self.enabled or self._started:
            return False
        self._started = True
        if not _lock_free(_dot(self.root) / LOCK_NAME) or not watchable(self.root):
            return False
        return start_detached(_ENTRY, str(self.root))


def keeper_status(root: Path) -> dict[str, Any]:
    """Whether a keeper runs for the vault at ``root``, and what it says of itself."""
    info = _read_info(root)
    running = not _lock_free(_dot(root) / LOCK_NAME) if _dot(root).is_dir() else False
    out: dict[str, Any] = {"running": running, "enabled": _enabled(keeper_mode())}
    if running and info is not None:
        sock = str(socket_for(root))
        out.update(pid=info.get("pid"), socket=sock)
        reply = _ask(sock, {"status": True}, ASK_TIMEOUT)
        if reply is not None:
            reply.pop("ok", None)
            out.update(reply)
    return out


def stop_keeper(root: Path, wait: float = 5.0) -> bool:
    """Ask the vault's keeper to leave; True once no keeper holds the vault."""
    if _dot(root).is_dir():
        _ask(str(socket_for(root)), {"stop": True}, ASK_TIMEOUT)
    deadline = time.monotonic() + wait
    lock = _dot(root) / LOCK_NAME
    while time.monotonic() < deadline:
        if not _dot(root).is_dir() or _lock_free(lock):
            return True
        time.sleep(0.05)
    return False


# -- the keeper process ---------------------------------------------------------------


def socket_for(root: Path, create: bool = False) -> Path:
    """The keeper socket of the vault at ``root`` (one per vault folder), in this user's
    private runtime folder: only this user's keeper can listen there."""
    import hashlib

    key = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:20]
    return runtime_dir(create) / f"keeper-{key}.sock"


class _Keeper:
    """The watcher, the index and the questions of one keeper process."""

    def __init__(self, root: Path, sock_path: Path, idle: float) -> None:
        from ..core.clock import SYSTEM_CLOCK
        from .base import INDEX_FILE
        from .files import VaultLock
        from .upkeep import IndexUpkeep
        from .watch import NoteWatcher

        self.root = root
        self.root_id = _identity(root)
        self.sock_path = sock_path
        self.idle = idle
        self.lock = VaultLock(_dot(root) / "lock", timeout=5.0)
        self.upkeep = IndexUpkeep(root, _dot(root) / INDEX_FILE, SYSTEM_CLOCK, self._locked, None)
        self.watcher = NoteWatcher(root)
        self.pending = Told()
        self.ready_gen = -1
        """The watch generation whose start the index was checked against; ready when
        it is the watcher's current one."""
        self.checked_at = 0.0
        self.bursts = 0
        self.recent: deque[tuple[float, int]] = deque()
        """(when, how many) changes each look at the watcher found, for ``BURST``."""
        self.checks = 0
        self.checking = False
        self.last_question = time.monotonic()
        self.stopping = False
        self.answered = 0

    @contextlib.contextmanager
    def _locked(self, wait: float | None = None) -> Iterator[None]:
        from .base import flush_touched

        self.lock.acquire(wait)
        try:
            yield
        finally:
            try:
                # What the watch applied travels too, in a synced vault (base.py).
                flush_touched(self.root, self.upkeep.current)
            finally:
                self.lock.release()

    @property
    def checked(self) -> bool:
        """Watching, checked since the watch began, no check running or due."""
        return (
            self.watcher.active
            and self.ready_gen == self.watcher.generation
            and not self.checking
            and time.monotonic() < self.checked_at + CHECK_EVERY
        )

    @property
    def ready(self) -> bool:
        """Checked, and no new folder waits to be watched (then it is told and applied)."""
        return self.checked and self.watcher.settled

    # -- keeping the index current ---------------------------------------------------

    def check_everything(self, listener: socket.socket) -> None:
        """Every folder and note compared with the index (one ``stat`` each, without
        the lock), then what differs synced under it: when the watch (re)starts,
        after a burst of changes, and every ``CHECK_EVERY`` seconds of use.

        Questions are answered between folders meanwhile, "not ready" (a caller
        checks by ``stat`` rather than wait for this).
        """
        from .scan import ScanStats, folder_signature, sync_changed

        gen = self.watcher.generation
        self.drain()  # changes told from now on are applied on top
        bursts = self.bursts
        self.checking = True
        try:
            idx = self.upkeep.handle()
            known = idx.dirs()
            signatures = idx.dir_signatures()
            stale = []
            for directory, mtime in known.items():
                self.answer_waiting(listener)
                on_disk = folder_signature(self.root, directory, mtime)
                if on_disk != signatures.get(directory, (0, 0)):
                    stale.append(directory)
            with self._locked_soon(listener):
                idx = self.upkeep.handle()
                if not known or not idx.dirs():
                    self.upkeep.full_scan(idx, ScanStats())
                elif stale:
                    with idx.transaction():
                        sync_changed(self.root, idx, stale, ScanStats())
        finally:
            self.checking = False
        self.checked_at = time.monotonic()
        self.checks += 1
        if self.bursts == bursts:  # else a burst came meanwhile: check again
            self.ready_gen = gen

    @contextlib.contextmanager
    def _locked_soon(self, listener: socket.socket) -> Iterator[None]:
        """The vault lock, asked for again and again (answering questions meanwhile)
        rather than waited on: a caller may hold it while it asks."""
        deadline = time.monotonic() + 30
        while True:
            try:
                self.lock.acquire(0.0)
                break
            except UnavailableError:
                if time.monotonic() > deadline:
                    raise
                self.answer_waiting(listener)
                time.sleep(0.02)
        try:
            yield
        finally:
            self.lock.release()

    def drain(self) -> bool:
        """Add what the watcher has told since the last look to ``pending``; False if
        the watch broke."""
        changes = self.watcher.take()
        if changes is None:
            return False
        files, dirs = changes
        self.pending.files |= files
        self.pending.dirs |= dirs
        now = time.monotonic()
        if files or dirs:
            self.recent.append((now, len(files) + len(dirs)))
        while self.recent and self.recent[0][0] < now - BURST_WINDOW:
            self.recent.popleft()
        if sum(n for _t, n in self.recent) >= BURST:
            # The kernel's queue of events may have overflowed (watchfiles drops that
            # notice): vouch for nothing until everything is checked again.
            self.recent.clear()
            self.ready_gen = _UNSURE
            self.bursts += 1
        return True

    def apply(self, wait: float) -> bool:
        """Apply ``pending`` to the index if the vault lock comes within ``wait`` seconds."""
        from .scan import apply_told

        if not self.pending.files and not self.pending.dirs:
            return True
        try:
            with self._locked(wait):
                idx = self.upkeep.handle()
                with idx.transaction():
                    apply_told(self.root, idx, self.pending.dirs, self.pending.files)
        except UnavailableError:
            return False
        self.pending = Told()
        return True

    def catch_up(self, wait: float) -> Told | None:
        """Everything changed before now: applied (an empty ``Told``), left for the
        caller (the lock was taken), or None if this keeper cannot vouch for it."""
        if self.checked and not self.watcher.settled:
            self.drain()  # a new watch may be in place to take over (and tell new folders)
        # Each look at the watcher is a barrier (``NoteWatcher.take``).
        if not self.ready or not self.drain() or not self.ready:
            return None
        if self.apply(wait):
            return Told()
        return Told(set(self.pending.files), set(self.pending.dirs))

    # -- the loop ----------------------------------------------------------------

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        if request.get("stop"):
            self.stopping = True
            return {"ok": True}
        if request.get("status"):
            self.drain()  # a folder made just now makes it unready: say so
            return {
                "ok": True,
                "ready": self.ready,
                "answered": self.answered,
                "checks": self.checks,
                "key": code_key(),
            }
        self.last_question = time.monotonic()
        self.answered += 1
        told = self.catch_up(wait=0.0)
        if told is None:
            return {"ok": False}
        return {
            "ok": True,
            "key": code_key(),
            "root": self.root_id,
            "files": sorted(told.files),
            "dirs": sorted(told.dirs),
        }

    def still_wanted(self, inode: int) -> bool:
        """False once the keeper should leave: stopped, idle, or its socket or vault gone."""
        if self.stopping or time.monotonic() - self.last_question > self.idle:
            return False
        try:
            same_socket = os.stat(self.sock_path).st_ino == inode
        except OSError:
            return False
        return same_socket and _dot(self.root).is_dir() and _identity(self.root) == self.root_id

    def serve(self, listener: socket.socket, inode: int) -> None:
        import select

        inactive_since: float | None = None
        quiet = TICK
        while self.still_wanted(inode):
            if not self.watcher.active and not self.watcher.start(wait=TICK):
                # Being set up (at first, or again after it broke): answer "not ready".
                inactive_since = inactive_since or time.monotonic()
                if time.monotonic() - inactive_since > WATCH_SETUP_LIMIT:
                    return  # no watch possible here: callers check by stat
                self.answer_waiting(listener)
                continue
            inactive_since = None
            if not self.checked:
                # A long write (``reindex``?) holding the vault: try again next time round.
                with contextlib.suppress(UnavailableError):
                    self.check_everything(listener)
                continue
            # While new folders wait for the new watch, look at it more often; when
            # nothing changes, less and less often (each look makes a mark file).
            tick = quiet if self.watcher.settled else TICK / 10
            readable, _w, _x = select.select([listener], [], [], tick)
            if readable:
                self.answer_one(listener)
                continue
            before = len(self.pending.files) + len(self.pending.dirs)
            if not self.drain():
                return
            if len(self.pending.files) + len(self.pending.dirs) > before:
                quiet = TICK
            else:
                quiet = min(quiet * 2, QUIET_TICK)
            if self.pending.files or self.pending.dirs:
                # Apply as changes come, so that a question finds nothing left to do.
                self.apply(wait=0.0)

    def answer_waiting(self, listener: socket.socket) -> None:
        """Answer the questions already waiting, without waiting for more."""
        import select

        while select.select([listener], [], [], 0)[0]:
            self.answer_one(listener)

    def answer_one(self, listener: socket.socket) -> None:
        try:
            conn, _addr = listener.accept()
        except OSError:
            return
        with conn:
            conn.settimeout(ASK_TIMEOUT)
            try:
                data = b""
                while not data.endswith(b"\n") and len(data) < 4096:
                    chunk = conn.recv(4096)
                    if not chunk:
                        return
                    data += chunk
                request = json.loads(data)
                reply = self.answer(request if isinstance(request, dict) else {})
                conn.sendall(json.dumps(reply).encode() + b"\n")
            except (OSError, ValueError):
                return


def run_keeper(root: Path, idle: float | None = None) -> int:
    """Keep the index of the vault at ``root`` current until idle, stopped or gone.

    Returns 0 when it leaves, 0 at once if another keeper holds the vault, 1 if
    the vault or a private runtime folder is missing.
    """
    import signal
    import socket

    root = root.expanduser().absolute()
    if idle is None:
        idle = float(os.environ.get(IDLE_ENV, "1800"))
    dot = _dot(root)
    if not dot.is_dir():
        print(f"agent-mem-vault keeper: no vault at {root}", file=sys.stderr)
        return 1
    if not watchable(root):
        print(
            f"agent-mem-vault keeper: {root} is not on a local filesystem; a watch would "
            "miss changes made from other machines, so calls check by stat",
            file=sys.stderr,
        )
        return 1
    lock_fd = os.open(dot / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        # A moment's grace: someone probing the lock (``keeper_status``) holds it briefly.
        for _ in range(10):
            try:
                fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                time.sleep(0.01)
        else:
            return 0  # another keeper has this vault
        try:
            sock_path = socket_for(root, create=True)
        except PermissionError as exc:
            print(f"agent-mem-vault keeper: {exc}", file=sys.stderr)
            return 1
        sock_path.unlink(missing_ok=True)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(sock_path))
        listener.listen(64)
        inode = os.stat(sock_path).st_ino
        # The pid only: a process finds the socket from the vault's path in its own
        # private folder (``socket_for``), never from a file others could write.
        info = json.dumps({"pid": os.getpid()}).encode()
        os.ftruncate(lock_fd, 0)
        os.pwrite(lock_fd, info, 0)
        keeper = _Keeper(root, sock_path, idle)
        # Handlers that only ask the loop to end: one that raised (SIGINT's default)
        # would make watchfiles drop the changes it gathered.
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: setattr(keeper, "stopping", True))
        try:
            keeper.serve(listener, inode)
        finally:
            os.ftruncate(lock_fd, 0)
            listener.close()
            with contextlib.suppress(OSError):
                if os.stat(sock_path).st_ino == inode:
                    sock_path.unlink()
            keeper.watcher.stop()
            keeper.upkeep.close()
        return 0
    finally:
        os.close(lock_fd)


_ENTRY = (
    "import sys; from pathlib import Path; "
    "from agent_mem_vault.vault.keeper import run_keeper; "
    "sys.exit(run_keeper(Path(sys.argv[1])))"
)
"""What a started keeper runs (``-c``, not ``-m``: the module is imported by the
package before ``-m`` would run it)."""
