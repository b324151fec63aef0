"""Runs: one run of an agent at a time, and ``garden.engram.agents.handoff`` records.

>>> from agent_mem_vault.runs import RunRegistry
>>> from agent_mem_vault.store import memory_persistence
>>> registry = RunRegistry(memory_persistence())
>>> old = await registry.start_run("support-bot")  # doctest: +SKIP
>>> new = await registry.start_run("support-bot")  # doctest: +SKIP
>>> await old.ensure_current()  # raises RunTakenOver  # doctest: +SKIP
>>> record = await old.write_handoff()  # {"toRun": new.tid, ...}  # doctest: +SKIP

Starting a run takes the agent over; the replaced run learns it from
``ensure_current()`` or ``heartbeat()`` and writes the handoff record, keyed
by the new run's TID, at most once. Records are never updated or deleted.
"""

from __future__ import annotations

from .errors import RunStillCurrent, RunStopped, RunTakenOver
from .models import AgentStatus, HandoffEntry, RunInfo, RunState
from .records import (
    DEFAULT_GENERATOR,
    HANDOFF_NSID,
    Generator,
    build_handoff_record,
    check_handoff_record,
)
from .registry import Run, RunRegistry, validate_agent

__all__ = [
    "DEFAULT_GENERATOR",
    "HANDOFF_NSID",
    "AgentStatus",
    "Generator",
    "HandoffEntry",
    "Run",
    "RunInfo",
    "RunRegistry",
    "RunState",
    "RunStillCurrent",
    "RunStopped",
    "RunTakenOver",
    "build_handoff_record",
    "check_handoff_record",
    "validate_agent",
]
