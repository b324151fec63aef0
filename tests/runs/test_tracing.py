"""The runs registry's takeovers and handoff records are spans."""

from __future__ import annotations

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent_mem_vault.runs import RunRegistry
from agent_mem_vault.store import Persistence
from tests.otel import exporter

__all__ = ["exporter"]


async def test_a_takeover_and_the_handoff_record_it_brings_are_spans(
    persistence: Persistence, exporter: InMemorySpanExporter
) -> None:
    registry = RunRegistry(persistence)
    old = await registry.start_run("bot")
    new = await registry.start_run("bot")
    await old.write_handoff()
    await old.write_handoff()  # at most once: the second finds the record
    names = [s.name for s in exporter.get_finished_spans()]
    assert names == ["runs.start", "runs.takeover", "runs.write_handoff_record"]
    start, takeover, record = (dict(s.attributes or {}) for s in exporter.get_finished_spans())
    assert start["agent_mem_vault.runs.run"] == old.tid
    assert takeover["agent_mem_vault.runs.run"] == new.tid
    assert takeover["agent_mem_vault.runs.previous"] == old.tid
    assert record["agent_mem_vault.runs.rkey"] == new.tid
    assert record["agent_mem_vault.runs.from_run"] == old.tid
    assert record["agent_mem_vault.runs.created"] is True
