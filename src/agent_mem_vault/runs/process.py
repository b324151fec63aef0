"""Which process does a run, and whether that process is known to be dead.

A run that crashed is found by its lease lapsing, which takes a lease (30 s by
default). On the same machine we can know sooner: a run records the process
doing it, and a takeover checks whether that process still exists. A pid alone
is not enough, since pids are reused; so a run records the pid *and* the
process's start time (``/proc/<pid>/stat``, in clock ticks since boot) and the
boot id. The process is known dead when, in the same boot, no process has that
pid or the one that has it started at another time. On another machine or
another boot, or where ``/proc`` is missing, nothing is known and the lease
decides.

>>> me = process_of()  # doctest: +SKIP
>>> is_known_dead(me)  # doctest: +SKIP
False
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["ProcStat", "ProcessId", "is_known_dead", "parent_pid", "process_of", "read_stat"]

_PROC = Path("/proc")


@dataclass(frozen=True, slots=True)
class ProcessId:
    """A process, told apart from later processes that get the same pid."""

    pid: int
    start: int
    """Start time in clock ticks since boot (field 22 of ``/proc/<pid>/stat``)."""
    boot: str
    """The kernel's boot id: the same on this machine until it reboots."""

    def to_json(self) -> dict[str, Any]:
        return {"pid": self.pid, "start": self.start, "boot": self.boot}

    @classmethod
    def from_json(cls, data: Any) -> ProcessId | None:
        if not isinstance(data, dict):
            return None
        try:
            return cls(int(data["pid"]), int(data["start"]), str(data["boot"]))
        except (KeyError, TypeError, ValueError):
            return None


@functools.cache
def _boot_id() -> str | None:
    """Read once per process: it is the same until the machine reboots, and so is this process."""
    try:
        return (_PROC / "sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


@dataclass(frozen=True, slots=True)
class ProcStat:
    """The fields of ``/proc/<pid>/stat`` that tell a process apart and place it in the tree."""

    comm: str
    """The program's name (field 2), at most 15 bytes, as the kernel keeps it."""
    state: str
    """``R``, ``S``, ``D``, ``Z`` (a zombie: ended, not yet reaped), ``X``, …"""
    ppid: int
    start: int
    """Start time in clock ticks since boot (field 22)."""


def read_stat(pid: int) -> ProcStat | None:
    """``/proc/<pid>/stat`` parsed, or None where there is no such process (or no ``/proc``).

    The one reader of that file: the name (field 2) is in parentheses and may
    hold spaces and parentheses itself, so the fields are split after its last
    ``)``.
    """
    try:
        stat = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    try:
        close = stat.rindex(")")
        comm, fields = stat[stat.index("(") + 1 : close], stat[close + 2 :].split()
        return ProcStat(comm, fields[0], int(fields[1]), int(fields[19]))
    except (ValueError, IndexError):  # not the kernel's format: nothing is known
        return None


def _start_ticks(pid: int) -> int | None:
    """The start time of ``pid``, or None if there is no such process or it has exited.

    A process killed a moment ago stays in ``/proc`` as a zombie (state ``Z``)
    until its parent reaps it, and a killed parent's children wait for init:
    that process has ended, whatever ``/proc`` still shows.
    """
    stat = read_stat(pid)
    if stat is None or stat.state in ("Z", "X", "x"):
        return None
    return stat.start


def process_of(pid: int | None = None) -> ProcessId | None:
    """The process ``pid`` (default: this one), or None where it cannot be identified."""
    pid = os.getpid() if pid is None else pid
    boot, start = _boot_id(), _start_ticks(pid)
    if boot is None or start is None:
        return None
    return ProcessId(pid, start, boot)


def is_known_dead(process: ProcessId | None) -> bool:
    """True only when ``process`` surely ended: same boot, and its pid is gone or reused."""
    if process is None or _boot_id() != process.boot:
        return False
    return _start_ticks(process.pid) != process.start


def parent_pid(pid: int) -> int | None:
    """The parent of process ``pid``, or None where it cannot be read."""
    stat = read_stat(pid)
    return None if stat is None else stat.ppid
