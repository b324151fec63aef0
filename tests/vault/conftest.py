"""Fixtures for the vault: a real vault folder on ``tmp_path`` with a clock the test holds."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from agent_mem_vault.core.clock import ManualClock
from agent_mem_vault.vault import Handoff, Vault

NS = "project/harbor-api"

HANDOFF = Handoff(
    id="3kzzzzzzzzzz2",
    namespace=NS,
    sender="claude-code",
    recipient="codex",
    summary="Batch the orders backfill",
    context="Start with 1000 rows.\n\nThen measure lock time.",
    status="pending",
    created_at="2026-01-01T00:00:00.000Z",
)
"""A pending handoff as a value, for the tests of the pure rules and the note format."""


def a_handoff(**changes: object) -> Handoff:
    """``HANDOFF`` with ``changes``."""
    return replace(HANDOFF, **changes)  # type: ignore[arg-type]


def eventually(check: Callable[[], bool], seconds: float = 10.0) -> bool:
    """Whether ``check()`` comes true within ``seconds``: a watcher, a keeper or a syncer
    answers within tens of milliseconds, and a busy machine may take longer."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


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


def opened_vault(path: Path, **options: Any) -> Iterator[Vault]:
    """A fixture's vault at ``path``, initialised, written without fsync, closed after the test."""
    v = Vault(path, durable=False, **options)
    v.init()
    yield v
    v.close()


@pytest.fixture
def vault(vault_path: Path, clock: TickingClock) -> Iterator[Vault]:
    yield from opened_vault(vault_path, clock=clock)


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every file and folder of the vault but the derived index: to show nothing was written."""
    return {
        str(p.relative_to(root)): p.read_bytes() if p.is_file() else None
        for p in sorted(root.rglob("*"))
        if ".agent-mem-vault" not in p.parts
    }
