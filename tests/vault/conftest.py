"""Fixtures for the vault: a real vault folder on ``tmp_path`` with a clock the test holds."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_mem_vault.core.clock import ManualClock
from agent_mem_vault.vault import Vault

NS = "project/harbor-api"


class TickingClock(ManualClock):
    """A manual clock that moves 1 ms each time it is read, so every write has its own time."""

    def now(self):  # type: ignore[no-untyped-def]
        return self.advance(0.001)


@pytest.fixture
def clock() -> TickingClock:
    return TickingClock()


@pytest.fixture
def vault_path(tmp_path: Path) -> Path:
    return tmp_path / "vault"


@pytest.fixture
def vault(vault_path: Path, clock: TickingClock) -> Iterator[Vault]:
    v = Vault(vault_path, clock=clock, durable=False)
    v.init()
    yield v
    v.close()


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every file and folder of the vault but the derived index: to show nothing was written."""
    return {
        str(p.relative_to(root)): p.read_bytes() if p.is_file() else None
        for p in sorted(root.rglob("*"))
        if ".agent-mem-vault" not in p.parts
    }
