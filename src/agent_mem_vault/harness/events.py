"""Events: a session's stream is its thread's log; a host's stream is its host log.

Each log record is one event with the record's type as its ``name`` (so
``harness.handoff``, ``message``, ``wait.opened``, ``run.finished``, …) and
its sequence number as its ``id``: a client that reconnects passes the last
id it saw as ``after`` and misses nothing, and sees nothing twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Self

from ..core.clock import format_datetime
from ..store import LogRecord

__all__ = ["HARNESS_EVENTS", "HOST_STREAM", "Event", "HostEvent"]

HOST_STREAM = "harness-host"
"""The log stream of host-level events (``transferred``), shared by all hosts."""


class HARNESS_EVENTS:
    """Event names, as the harness design spells them."""

    handoff = "harness.handoff"
    transferred = "harness.transferred"
    refused = "harness.refused"
    message = "message"
    input = "input"
    run_started = "run.started"
    run_finished = "run.finished"
    wait_opened = "wait.opened"
    wait_closed = "wait.closed"
    usage = "usage"


@dataclass(frozen=True, slots=True)
class _StreamEvent:
    """One record of a log stream seen as an event; ``seq`` is where to resume after."""

    seq: int
    name: str
    value: dict[str, Any]
    at: str

    @property
    def id(self) -> str:
        return str(self.seq)

    @classmethod
    def from_record(cls, record: LogRecord) -> Self:
        return cls(record.seq, record.type, record.data, format_datetime(record.at))

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "value": self.value, "at": self.at}


@dataclass(frozen=True, slots=True)
class HostEvent(_StreamEvent):
    """A host-level event, e.g. ``transferred`` with the transfer's endpoints.

    Resume with ``host.events(after=event.seq)``.
    """


@dataclass(frozen=True, slots=True)
class Event(_StreamEvent):
    """One event of a session: ``name``, ``value``, and ``seq``/``id`` to resume after.

    Read from a thread's log; ``run_id`` is the turn the event belongs to.
    """

    @property
    def run_id(self) -> str | None:
        run_id = self.value.get("runId")
        return run_id if isinstance(run_id, str) else None

    def to_json(self) -> dict[str, Any]:
        """The wire form (the SSE ``data:``): the stream event's fields plus ``runId``."""
        # Named base: zero-argument super() fails in a slotted dataclass.
        return {**_StreamEvent.to_json(self), "runId": self.run_id}
