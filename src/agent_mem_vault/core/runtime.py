"""The private folder where this user's helper processes keep their sockets.

The warm process (``cli/warm.py``) and the vault keeper (``vault/index/keeper.py``)
listen on Unix sockets. A socket path is limited to about 100 bytes, so they
live in a short per-user folder rather than beside the vault, and the folder
must be private: whoever can connect can ask the process to act for its user.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["CALLER_ENV", "DIR_ENV", "process_alive", "runtime_dir", "start_detached"]

CALLER_ENV = "AGENT_MEM_VAULT_CALLER_PID"
"""Set in a command the warm process runs: the pid of the process the client spawned
(the session hook walks up from it to find the client, not from the warm process)."""
DIR_ENV = "AGENT_MEM_VAULT_RUNTIME_DIR"
"""Where the sockets live (default: ``$XDG_RUNTIME_DIR`` or the temp folder)."""


def runtime_dir(create: bool = True) -> Path:
    """The private folder of this user's helper processes; refuses one others can open.

    With ``create=False`` (a process that only looks for a helper) a missing folder
    is not made: its path is returned, and nothing listens there.
    """
    given = os.environ.get(DIR_ENV)
    if given:
        folder = Path(given)
    else:
        xdg = os.environ.get("XDG_RUNTIME_DIR")
        if xdg and os.path.isdir(xdg):
            base = Path(xdg)
        else:
            import tempfile

            base = Path(tempfile.gettempdir())
        folder = base / f"agent-mem-vault-{os.getuid()}"
    if create:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        info = folder.stat()
    except FileNotFoundError:
        if create:
            raise
        return folder
    if info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise PermissionError(f"{folder} is not private to this user")
    return folder


def process_alive(pid: int) -> bool:
    """Whether a process ``pid`` runs (of any user): for files a process left behind."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def start_detached(code: str, *args: str) -> bool:
    """Start a helper process (Python running ``code`` with ``args``), detached; True if
    it was started.

    ``sh`` puts it in the background and leaves at once, so the helper is nobody's
    child (no zombie in a long-lived caller) and this call costs a few milliseconds.
    ``-P`` and ``/``: no module of the caller's working folder shadows one the helper
    imports, and the helper does not hold that folder.
    """
    import subprocess
    import sys

    argv = [sys.executable, "-P", "-c", code, *args]
    try:
        subprocess.run(
            ["/bin/sh", "-c", '"$@" &', "sh", *argv],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            check=False,
            timeout=10,
            cwd="/",
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return True
