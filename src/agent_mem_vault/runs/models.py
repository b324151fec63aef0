"""Values the run registry hands out: plain frozen dataclasses, JSON at the edges."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from ..core.wire import CamelJson
from .process import ProcessId
from .records import Generator

__all__ = ["AgentStatus", "HandoffEntry", "RunInfo", "RunState"]


@dataclass(frozen=True, slots=True)
class RunInfo(CamelJson):
    """One run of an agent as the registry recorded it when the run started."""

    agent: str
    run: str
    """The run's TID."""
    seq: int
    """Position in the agent's run log: 1 for the first run ever, +1 per takeover."""
    previous: str | None
    """The run this one took over from (None for the agent's first run)."""
    started_at: str
    generator: Generator | None
    lease_seconds: float
    process: ProcessId | None = None
    """The process doing the run, when known (see :mod:`.process`)."""

    @classmethod
    def from_json(cls, agent: str, seq: int, data: dict[str, Any]) -> RunInfo:
        gen = data.get("generator")
        return cls(
            agent=agent,
            run=str(data["run"]),
            seq=seq,
            previous=data.get("previous"),
            started_at=str(data["startedAt"]),
            generator=None if gen is None else Generator.from_json(gen),
            lease_seconds=float(data.get("leaseSeconds", 0.0)),
            process=ProcessId.from_json(data.get("process")),
        )


@dataclass(frozen=True, slots=True)
class HandoffEntry:
    """A handoff record as stored: the AT Protocol record and where it came from."""

    agent: str
    rkey: str
    """The record key: the new run's TID (``record["toRun"]``)."""
    record: dict[str, Any]
    cid: str
    written_by: Literal["run", "registry"]
    """``run``: the stopped run wrote it; ``registry``: written for a run whose lease lapsed."""

    @property
    def uri_path(self) -> str:
        """``<collection>/<rkey>``, the tail of the record's AT-URI in any repository."""
        return f"{self.record['$type']}/{self.rkey}"


@dataclass(frozen=True, slots=True)
class RunState:
    """A run and what became of it."""

    info: RunInfo
    state: Literal["current", "taken_over"]
    alive: bool
    """Its lease is unexpired: it heartbeats (or started less than a lease ago)."""
    lease_expires_at: datetime | None
    taken_over_by: str | None = None
    handoff_written: bool = False


@dataclass(frozen=True, slots=True)
class AgentStatus:
    """An agent's current run, whether it is alive, and the takeovers still unacknowledged."""

    agent: str
    current: RunState | None
    runs: int
    handoffs: int
    pending: list[str] = field(default_factory=list)
    """Runs taken over that have not written their handoff record yet."""

    def to_json(self) -> dict[str, Any]:
        cur = self.current
        return {
            "agent": self.agent,
            "current": None if cur is None else cur.info.run,
            "alive": None if cur is None else cur.alive,
            "startedAt": None if cur is None else cur.info.started_at,
            "leaseExpiresAt": None
            if cur is None or cur.lease_expires_at is None
            else cur.lease_expires_at.isoformat(),
            "runs": self.runs,
            "handoffs": self.handoffs,
            "pending": self.pending,
        }
