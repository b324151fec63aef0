"""The vault's MCP tool calls are spans (with opentelemetry-api installed)."""

from __future__ import annotations

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent_mem_vault.vault import Vault
from tests.otel import exporter

from .conftest import in_process

__all__ = ["exporter"]


async def test_each_mcp_tool_call_is_a_span_and_a_tool_error_is_marked(
    vault: Vault, exporter: InMemorySpanExporter
) -> None:
    async with in_process(vault) as client:
        created = await client.call_tool(
            "create_handoff", {"to": "codex", "summary": "Batch it", "context": "Rows: 1000."}
        )
        missing = await client.call_tool("ack_handoff", {"id": "no-such-handoff"})
    assert not created.is_error and missing.is_error
    spans = [s for s in exporter.get_finished_spans() if s.name.startswith("execute_tool")]
    assert [s.name for s in spans] == ["execute_tool create_handoff", "execute_tool ack_handoff"]
    create, ack = (dict(s.attributes or {}) for s in spans)
    assert create["gen_ai.tool.name"] == "create_handoff"
    assert create["gen_ai.operation.name"] == "execute_tool"
    assert "error.type" not in create
    assert ack["error.type"] == "invalid_id"
