"""A process's side of the vault keeper: ask it whether the index is current, start it.

The keeper itself (the process that watches the notes) is ``keeper.py``, whose
docstring tells the whole story; this module is what every process imports to
talk to one, so it stays light. The answer of a keeper is trusted only when it
names this vault folder (device and inode) and this version (``code_key``).
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ...core.errors import InvalidInputError
from ...core.runtime import process_alive, runtime_dir, start_detached
from ..folder.layout import DOT_DIR, MODULES
from .watch import watchable

# ``socket`` and ``hashlib`` are imported where used: every process imports this
# module, few of them talk to a keeper.

__all__ = [
    "ASK_FROM",
    "START_FROM",
    "SWITCH_ENV",
    "KeeperLink",
    "Told",
    "code_key",
    "keeper_mode",
    "keeper_status",
    "socket_for",
    "stop_keeper",
]

SWITCH_ENV = "AGENT_MEM_VAULT_KEEPER"
"""``0``, ``off``, ``no`` or ``false``: never ask or start a keeper. ``always``: ask
it at every check, however few notes (``ASK_FROM``): for a vault whose notes are
edited by tools that keep their size and mtime, which only a watch sees. Unset (or
``1``, ``on``, ``yes``, ``true``): as the number of notes makes worth it. Read by
``keeper_mode`` only."""
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
LOCK_NAME = "keeper.lock"
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
    could read notes differently or write another index layout, so it is not asked,
    and is told to leave. ``MODULES`` is in it: a keeper started before the package's
    modules moved imports some of them late, by their old names, and must not stay."""
    from ...core.version import __version__
    from .schema import MIGRATIONS

    return f"{__version__}/{MIGRATIONS[-1][0]}/{MODULES}"


@dataclass(slots=True)
class Told:
    """The keeper's answer: the index is current once ``files`` and ``dirs`` (relative
    paths the keeper could not apply itself, its lock being taken) are applied."""

    files: set[str] = field(default_factory=set)
    dirs: set[str] = field(default_factory=set)


def _dot(root: Path) -> Path:

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


def socket_for(root: Path, create: bool = False) -> Path:
    """The keeper socket of the vault at ``root`` (one per vault folder), in this user's
    private runtime folder: only this user's keeper can listen there."""
    import hashlib

    key = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:20]
    return runtime_dir(create) / f"keeper-{key}.sock"


_ENTRY = (
    "import sys; from pathlib import Path; "
    "from agent_mem_vault.vault.plug import run_keeper; "
    "sys.exit(run_keeper(Path(sys.argv[1])))"
)
"""What a started keeper runs (``-c``, not ``-m``: the module is imported by the
package before ``-m`` would run it): the keeper as the service wires it, so that
what its watch applies reaches the vault's sync (``vault/plug.py``)."""
