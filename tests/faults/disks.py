"""Real small and read-only filesystems for the fault tests, and a way to fill one.

A tmpfs of a few megabytes is mounted for a test (``mount -t tmpfs -o size=…``),
filled to its last page when the test says so, remounted read-only, and always
unmounted at the end, failed test or not (lazily, if a process the test
started still has a file open there). Mounting needs root (or a user namespace
where the user is root); where the machine allows neither, the tests that need
it skip with the reason.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

__all__ = ["Disk", "mounted_tmpfs", "need_mounts"]

_CHUNKS = (1 << 20, 64 << 10, 4 << 10, 512, 1)


def need_mounts() -> None:
    """Skip the calling test, with the reason, where tmpfs cannot be mounted here."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root; run the fault suite as root")
    if shutil.which("mount") is None or shutil.which("umount") is None:
        pytest.skip("mount and umount are not installed here")


class Disk:
    """A mounted tmpfs: its folder, how to fill it, free it, and make it read-only."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fillers: list[Path] = []

    def fill(self, leave: int = 0) -> None:
        """Write until the filesystem refuses (``ENOSPC``): every page is used, but for
        ``leave`` bytes' worth (held by a file while filling, removed after).

        The last files are written in small pieces, so that no page is left over.
        """
        keep = self.path / ".kept" if leave else None
        if keep is not None:
            keep.write_bytes(b"\0" * leave)
        for size in _CHUNKS:
            filler = self.path / f".fill-{len(self._fillers)}"
            self._fillers.append(filler)
            fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError:
                pass  # full for writes of this size: go on with smaller ones
            finally:
                os.close(fd)
        if keep is not None:
            keep.unlink()

    def free(self) -> None:
        """Remove everything ``fill`` wrote: the disk has its space again."""
        for filler in self._fillers:
            filler.unlink(missing_ok=True)
        self._fillers.clear()

    @property
    def free_bytes(self) -> int:
        st = os.statvfs(self.path)
        return st.f_bavail * st.f_frsize

    def read_only(self, on: bool = True) -> None:
        """Remount it read-only (``EROFS`` for every write, to root too), or back."""
        mode = "ro" if on else "rw"
        subprocess.run(["mount", "-o", f"remount,{mode}", str(self.path)], check=True)


@contextmanager
def mounted_tmpfs(path: Path, size: str) -> Iterator[Disk]:
    """A tmpfs of ``size`` (``2m``) mounted at ``path`` for the block; unmounted after."""
    need_mounts()
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(path)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"could not mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield Disk(path)
    finally:
        if subprocess.run(["umount", str(path)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(path)], check=False)
