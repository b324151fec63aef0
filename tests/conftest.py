"""Shared fixtures: real backends on real files (and real PostgreSQL where asked)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from agent_mem_vault.store import Persistence, memory_persistence, sqlite_persistence

# Property tests explore anew on every local run; CI replays one fixed sample
# so that a submission is judged on its code, not on the luck of the draw.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")

# Search by meaning is opted into by the tests that are about it (tests/vault/test_search.py),
# with the model a test package ships; elsewhere searches stay full-text, and nothing
# ever tries to download a model.
os.environ.setdefault("AGENT_MEM_VAULT_EMBEDDINGS", "off")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
INTEROP = Path(os.environ.get("AMV_INTEROP_TESTS", SHARED / "atproto-interop-tests"))

# Backends every persistence-backed suite runs on. PostgreSQL joins when the
# test run has a database for it (see tests/postgres_support.py).
BACKENDS = ["memory", "sqlite"]


# `serve` and the session hook hand over to a warm process (cli/warm.py); the CLI
# subprocesses of this run share one in a folder of their own, which goes (and the
# warm process with it, within a second) when the run ends.
os.environ["AGENT_MEM_VAULT_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="amv-warm-")


@pytest.fixture(scope="session", autouse=True)
def _warm_processes_end_with_the_run() -> Iterator[None]:
    yield
    shutil.rmtree(os.environ["AGENT_MEM_VAULT_RUNTIME_DIR"], ignore_errors=True)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """An empty HOME of the test's own, for a process whose files there the test reads
    (the default vault, a client's configuration) and the tester's must not see."""
    path = tmp_path / "home"
    path.mkdir()
    return path


def _postgres_dsn() -> str | None:
    return os.environ.get("AMV_TEST_POSTGRES_DSN")


if _postgres_dsn():
    BACKENDS.append("postgres")


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def persistence_factory(
    backend: str, tmp_path: Path
) -> AsyncIterator[Callable[[], Persistence]]:
    """Opens a new handle on the same store each call, as a second host would."""
    if backend == "memory":
        shared = memory_persistence()
        yield lambda: shared
    elif backend == "sqlite":
        db = tmp_path / "store.db"
        yield lambda: sqlite_persistence(db)
    else:
        from tests.postgres_support import postgres_factory

        factory = postgres_factory(tmp_path)
        yield factory
        # Handles a test forgot to close would hold server connections
        # (max_connections is finite) until garbage collection.
        await factory.aclose()


@pytest.fixture
async def persistence(
    persistence_factory: Callable[[], Persistence],
) -> AsyncIterator[Persistence]:
    store = persistence_factory()
    yield store
    await store.close()
