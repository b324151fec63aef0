"""The vault design's exchange performed by the real Claude Code and Codex.

Claude Code (``claude -p``) leaves ``create_handoff(to="codex", …)``; Codex's next
session (``codex exec``) sees it in its session-start hook, takes it with
``read_handoff`` and gets the design's text. Setup is ``agent-mem-vault install``
and the model-provider settings a user of a local model would also have.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .conftest import BRIEF, NAMESPACE, World, client, codex_config
from .model_server import Reply, ScriptedModel, Seen

pytestmark = pytest.mark.slow

SUMMARY = "Batch the orders backfill"
CONTEXT = (
    "The backfill in migrations/0007 needs batching. Start with 1000 rows and measure lock time."
)
EXPECTED = f"## Summary\n{SUMMARY}\n\n## Full Context\n{CONTEXT}"


def _tool_named(tools: Any, suffix: str) -> str | None:
    """The name under which the client offers our tool (clients prefix MCP tools)."""
    for tool in tools if isinstance(tools, list) else []:
        name = tool.get("name") if isinstance(tool, dict) else None
        if name is None and isinstance(tool, dict):
            name = (tool.get("function") or {}).get("name")
        if isinstance(name, str) and "agent" in name and name.endswith(suffix):
            return name
    return None


def _namespaced(tools: Any, suffix: str) -> tuple[str, str] | None:
    """Codex: (namespace, tool name) of our tool inside the mcp__agent_mem_vault namespace.

    Codex 0.171 offers an MCP server's tools as one Responses ``namespace`` tool
    whose ``tools`` are plain functions. A model calls one the way the Responses
    API returns a namespaced call: ``function_call`` with the inner ``name`` and
    the ``namespace`` field; the flat ``mcp__agent_mem_vault__read_handoff`` is
    answered "unsupported call". Both parts are taken from what Codex offered.
    """
    for tool in tools if isinstance(tools, list) else []:
        if (
            isinstance(tool, dict)
            and tool.get("type") == "namespace"
            and "agent_mem_vault" in str(tool.get("name"))
        ):
            for inner in tool.get("tools", []):
                if isinstance(inner, dict) and str(inner.get("name", "")).endswith(suffix):
                    return str(tool["name"]), str(inner["name"])
    return None


def _tool_output(output: Any) -> dict[str, Any]:
    """The structured result Codex hands back for an MCP call.

    Codex wraps a tool's result as "Wall time: …\nOutput:\n<result>", where the
    result is the call's structuredContent as JSON; a list of content items is
    joined first.
    """
    if isinstance(output, list):
        output = "".join(str(i.get("text", "")) for i in output if isinstance(i, dict))
    text = str(output)
    _, marker, rest = text.partition("Output:\n")
    try:
        data = json.loads(rest if marker else text)
    except json.JSONDecodeError:
        data = None
    assert isinstance(data, dict), f"Codex answered the call with: {text}"
    return data


WAIT_FOR_SERVERS = "WaitForMcpServers"
"""Claude Code's tool for MCP servers that are still connecting.

``claude -p`` sends its first request after a short wait for its MCP servers; a
server still starting then (a cold Python start, a busy machine) is offered as
this tool, and its own tools arrive once the model has called it.
"""


def claude_hands_off(first: list[Seen]) -> Callable[[Seen], Reply]:
    """The scripted model of a Claude Code session that leaves the handoff with
    create_handoff: the first request that offers the tool is kept in ``first``; a
    later session (``first`` holds one already) hands nothing off.

    Asked for a handoff before the vault's tools are offered, it waits for them
    with WaitForMcpServers, as a real model does: whether the server is up within
    Claude Code's own short wait depends on the machine's speed.
    """

    def claude_model(seen: Seen) -> Reply:
        tools = seen.body.get("tools")
        tool = _tool_named(tools, "create_handoff")
        if tool is None:
            if any(isinstance(t, dict) and t.get("name") == WAIT_FOR_SERVERS for t in tools or []):
                return Reply(tool=WAIT_FOR_SERVERS)
            return Reply(text="ok")  # a side request (title, summary): not the session
        if _called(seen.body, tool):
            return Reply(text="Handed off to codex.")
        first.append(seen)
        if len(first) > 1:
            return Reply(text="Nothing to hand off.")
        return Reply(
            tool=tool,
            args={"to": "codex", "summary": SUMMARY, "context": CONTEXT, "namespace": NAMESPACE},
        )

    return claude_model


def _called(body: Any, tool: str) -> bool:
    """Whether the model already called ``tool`` in this Anthropic Messages conversation."""
    messages = body.get("messages", []) if isinstance(body, dict) else []
    return any(
        isinstance(block, dict) and block.get("type") == "tool_use" and block.get("name") == tool
        for message in messages
        if isinstance(message, dict) and message.get("role") == "assistant"
        for block in message.get("content") or []
    )


def run_claude(
    world: World, claude: Path, model: ScriptedModel
) -> subprocess.CompletedProcess[str]:
    """``claude -p`` asked to hand the backfill to codex, against the scripted ``model``."""
    return world.run(
        claude,
        "-p",
        "Hand the orders backfill to codex.",
        "--allowedTools",
        "mcp__agent-mem-vault__create_handoff",
        env={
            "ANTHROPIC_BASE_URL": model.url,
            "ANTHROPIC_API_KEY": "sk-ant-scripted",
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "ENABLE_TOOL_SEARCH": "false",
        },
    )


def codex_takes_a_handoff(outputs: list[Any], first: list[Seen]) -> Callable[[Seen], Reply]:
    """The scripted model of a Codex session that takes the next handoff with
    read_handoff: the first request that offers the tool is kept in ``first``, the
    call's output in ``outputs``."""

    def codex_model(seen: Seen) -> Reply:
        found = _namespaced(seen.body.get("tools"), "read_handoff")
        if found is None:
            return Reply(text="ok")
        namespace, tool = found
        items = seen.body.get("input", [])
        done = [i for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"]
        if done:
            outputs.append(done[-1].get("output"))
            return Reply(text="Took the handoff.")
        first.append(seen)
        return Reply(
            tool=tool, namespace=namespace, args={"agent": "codex", "namespace": NAMESPACE}
        )

    return codex_model


def install_codex(world: World) -> None:
    world.amv("install", "codex")


def codex_continues(
    world: World, install: Callable[[World], object]
) -> tuple[ScriptedModel, list[Seen], list[Any]]:
    """A Codex session in ``world``, set up by ``install``, that takes the next handoff.

    Returns the model (its requests, its transcript), the first request that
    offered read_handoff and the tool's outputs; the session must exit 0.
    """
    outputs: list[Any] = []
    first: list[Seen] = []
    with ScriptedModel("responses", codex_takes_a_handoff(outputs, first)) as model:
        codex_config(world, model.url)
        install(world)
        proc = world.exec_codex("Continue the work.")
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}\n{model.transcript()}"
    return model, first, outputs


def test_claude_code_leaves_a_handoff_that_codex_takes_with_read_handoff(world: World) -> None:
    claude = client("claude")
    client("codex")  # skip before Claude Code runs where Codex is not installed
    first: list[Seen] = []
    world.amv("install", "claude-code", "--scope", "user")
    with ScriptedModel("anthropic", claude_hands_off(first)) as model:
        proc = run_claude(world, claude, model)
        transcript = model.transcript()
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}\n{transcript}"
    assert first, f"Claude Code never offered create_handoff to the model\n{transcript}"
    # The hook's output (brief + pending handoffs) is in the first request.
    assert BRIEF.strip() in first[0].text, transcript
    assert "Pending handoffs for claude-code" in first[0].text, transcript
    sent = world.handoffs()
    assert [(h["to"], h["summary"], h["status"]) for h in sent] == [
        ("codex", SUMMARY, "pending")
    ], sent

    model, codex_first, outputs = codex_continues(world, install_codex)
    transcript = model.transcript()
    offered = [
        json.dumps(t)[:160]
        for s in model.requests
        if isinstance(s.body, dict)
        for t in s.body.get("tools", [])
    ]
    assert codex_first, f"Codex never offered read_handoff to the model: {offered}\n{transcript}"
    # The session-start hook's output (brief + the pending handoff) is in the first request.
    assert SUMMARY in codex_first[0].text and BRIEF.strip() in codex_first[0].text, transcript
    assert "Pending handoffs for codex" in codex_first[0].text, transcript
    assert len(outputs) == 1, transcript
    result = _tool_output(outputs[0])
    # Who left it, for whom, when and its id; then the design's text.
    handoff = result["handoff"]
    heading = f"Handoff {handoff['id']} from {handoff['from']} to codex, {handoff['created_at']}"
    assert result["text"] == f"{heading}\n\n{EXPECTED}", transcript
    assert result["handoff"]["summary"] == SUMMARY, result
    taken = world.handoffs()
    assert [(h["to"], h["status"]) for h in taken] == [("codex", "read")], taken
