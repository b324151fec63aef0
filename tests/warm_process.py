"""Looking at a warm process from outside, as a test of the fast start needs to."""

from __future__ import annotations

import fcntl
import socket
from pathlib import Path

__all__ = ["handed_over_commands", "warm_listening", "warm_lock_held"]


def warm_listening(runtime: Path) -> bool:
    """True once a warm process accepts connections in the runtime folder ``runtime``."""
    for path in runtime.glob("*.sock"):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            try:
                conn.connect(str(path))
            except OSError:
                continue
            return True
    return False


def warm_lock_held(runtime: Path) -> bool:
    """True while a warm process holds its lock in the runtime folder ``runtime`` (from
    its start, before it listens, until it has left)."""
    for lock in runtime.glob("*.lock"):
        with lock.open("rb") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
    return False


def handed_over_commands(runtime: Path) -> list[str]:
    """The commands the warm process took, from its log (one line each)."""
    return [
        line.split(": ", 1)[1]
        for log in runtime.glob("*.log")
        for line in log.read_text().splitlines()
        if " pid " in line and ": " in line
    ]
