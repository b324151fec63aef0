"""The vault's lock as another process sees it: held from the test, and its waiters
read off the kernel's own table (/proc/locks), not guessed from sleeps."""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

__all__ = ["hold_vault_lock", "needs_proc_locks", "vault_lock_held", "wait_for_lock_waiters"]

needs_proc_locks = pytest.mark.skipif(
    not Path("/proc/locks").exists(), reason="waiters are seen in Linux's /proc/locks"
)


def hold_vault_lock(vault_path: Path) -> int:
    """Take the vault's file lock in this process (another process than the one under
    test); the lock goes when the returned descriptor is closed."""
    lock = vault_path / ".agent-mem-vault" / "lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


@contextmanager
def vault_lock_held(vault_path: Path) -> Iterator[None]:
    """The vault's file lock held from the test (:func:`hold_vault_lock`) for the block,
    and let go when it ends, however it ends."""
    fd = hold_vault_lock(vault_path)
    try:
        yield
    finally:
        os.close(fd)


def wait_for_lock_waiters(vault_path: Path, count: int) -> None:
    """Until ``count`` callers are blocked in ``flock`` on the vault's lock file.

    Linux lists each blocked ``flock`` in /proc/locks as a ``->`` line naming
    the file's device and inode: the kernel's own word that a writer waits.
    """
    st = (vault_path / ".agent-mem-vault" / "lock").stat()
    file_id = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    deadline = time.monotonic() + 120  # a liveness bound: a writer that never waits fails here
    while True:
        lines = Path("/proc/locks").read_text().splitlines()
        if sum(1 for line in lines if " -> " in line and file_id in line.split()) >= count:
            return
        assert time.monotonic() < deadline, f"no {count} waiter(s) on the vault lock"
        time.sleep(0.005)  # polling the condition, not timing an event
