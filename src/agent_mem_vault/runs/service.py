"""The runs operations as the CLI (and any other interface) calls them: one function each.

Each opens the registry on a store, calls it, keeps the vault's handoff notes
in step, and closes the store. Where runs live: a SQLite file, by default
``<vault>/.runs/runs.sqlite3`` — not in the vault's ``.agent-mem-vault/`` folder,
which holds only derived data that may be deleted, while the run history is the
truth and cannot be rebuilt from the notes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..store import sqlite_persistence
from .models import AgentStatus, HandoffEntry, RunState
from .notes import HandoffNotes
from .records import Generator
from .registry import RunRegistry, validate_agent

if TYPE_CHECKING:
    from .publish import Published

__all__ = ["RunsHome", "default_store_path"]

STORE_FILE = "runs.sqlite3"


def default_store_path(vault: str | Path) -> Path:
    """Where the CLI keeps runs when no ``--store`` is given."""
    return Path(vault).expanduser().absolute() / ".runs" / STORE_FILE


@dataclass(frozen=True)
class RunsHome:
    """Where runs are stored and which vault shows their handoff notes."""

    store: Path
    vault: Path

    @classmethod
    def at(cls, vault: str | Path, store: str | Path | None = None) -> RunsHome:
        vault_path = Path(vault).expanduser().absolute()
        store_path = Path(store).expanduser().absolute() if store else default_store_path(vault)
        return cls(store_path, vault_path)

    @asynccontextmanager
    async def _registry(self, agent: str | None) -> AsyncIterator[RunRegistry]:
        """The registry on this store, writing vault notes; closes the store afterwards.

        ``agent`` is checked first: a bad name is refused before the store is opened
        (which would make its file)."""
        if agent is not None:
            validate_agent(agent)
        notes = HandoffNotes(self.vault)
        registry = RunRegistry(sqlite_persistence(self.store), on_handoff=notes.write)
        try:
            yield registry
        finally:
            await registry.store.close()

    async def _settle(self, registry: RunRegistry, agent: str) -> list[HandoffEntry]:
        """Write what lapsed runs owe, and any note a crash left unwritten.

        Returns the agent's handoff records as they stand afterwards (read once
        for the notes, so callers that want them need not read them again).
        """
        validate_agent(agent)
        await registry.reap(agent)
        entries = await registry.handoffs(agent)
        HandoffNotes(self.vault).sync(entries)
        return entries

    async def start(
        self,
        agent: str,
        *,
        generator: Generator | None = None,
        lease_seconds: float | None = None,
        pid: int | None = None,
    ) -> str:
        """Start a run of ``agent`` (taking it over); returns the new run's TID.

        ``pid``: the process doing the run (default: this one).
        """
        async with self._registry(agent) as registry:
            run = await registry.start_run(agent, generator, lease_seconds=lease_seconds, pid=pid)
            await self._settle(registry, agent)
            return run.tid

    async def stop(self, agent: str, run: str | None = None) -> str:
        """Stop ``run`` of ``agent`` (default: the current one); returns the stopped run's TID."""
        async with self._registry(agent) as registry:
            info = await registry.stop_run(agent, run)
            await self._settle(registry, agent)
            return info.run

    async def status(self, agent: str | None = None) -> list[AgentStatus]:
        """The status of one agent, or of every agent."""
        async with self._registry(agent) as registry:
            agents = [agent] if agent else await registry.agents()
            out = []
            for name in agents:
                await self._settle(registry, name)
                out.append(await registry.status(name))
            return out

    async def list_runs(self, agent: str) -> list[RunState]:
        """Every run of ``agent``, oldest first."""
        async with self._registry(agent) as registry:
            await self._settle(registry, agent)
            return await registry.list_runs(agent)

    async def handoffs(self, agent: str) -> list[HandoffEntry]:
        """``agent``'s handoff records, in record-key order."""
        async with self._registry(agent) as registry:
            return await self._settle(registry, agent)

    async def export(self, agent: str) -> list[dict[str, Any]]:
        """The agent's handoff records as AT Protocol JSON."""
        return [entry.record for entry in await self.handoffs(agent)]

    async def pending(self, agent: str) -> list[RunState]:
        """Runs of ``agent`` taken over whose handoff record is not written yet.

        Each is written when the run writes it itself, is stopped, or its lease
        lapses (``lease_expires_at``; None: already lapsed, written on the next command).
        """
        async with self._registry(agent) as registry:
            await self._settle(registry, agent)
            runs = await registry.list_runs(agent)
            return [r for r in runs if r.state == "taken_over" and not r.handoff_written]

    async def wait_for_pending(self, agent: str, *, poll: float = 0.5) -> None:
        """Return once no handoff record of ``agent`` is pending (each lease lapsed, or written)."""
        import asyncio

        from ..core.clock import SYSTEM_CLOCK

        while pending := await self.pending(agent):
            due = [r.lease_expires_at for r in pending if r.lease_expires_at is not None]
            now = SYSTEM_CLOCK.now()
            wait = min((d - now).total_seconds() for d in due) if due else 0.0
            await asyncio.sleep(min(max(wait, poll), 5.0))

    async def publish(
        self,
        agent: str,
        *,
        pds: str,
        identifier: str,
        password: str,
        mode: Literal["create", "put"] = "create",
        pds_timeout: float = 15.0,
        validate: bool | None = None,
    ) -> list[Published]:
        """Log in to the PDS with an app password and publish the agent's handoff records.

        ``pds_timeout``: seconds to wait for each answer of the PDS.
        """
        from ..atproto.pds import PdsClient
        from .publish import publish_handoffs

        async with self._registry(agent) as registry, PdsClient(pds, timeout=pds_timeout) as client:
            await self._settle(registry, agent)
            await client.login(identifier, password)
            return await publish_handoffs(registry, client, agent, mode=mode, validate=validate)
