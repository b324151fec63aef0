"""Fixtures of the fault suite: small and read-only disks, a private PostgreSQL server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .disks import Disk, mounted_tmpfs
from .private_postgres import PrivatePostgres


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Disk]:
    """A 4 MiB tmpfs, unmounted when the test ends (whatever it did)."""
    with mounted_tmpfs(tmp_path / "disk", "4m") as disk:
        yield disk


@pytest.fixture(scope="session")
def private_postgres() -> Iterator[PrivatePostgres]:
    """A PostgreSQL server of the suite's own, which its tests may stop and kill."""
    server = PrivatePostgres()
    try:
        yield server
    finally:
        server.close()
