"""Every tool's answers, errors included, through the official TypeScript SDK client.

Claude Code, Gemini CLI and opencode are TypeScript clients: they keep each
tool's ``outputSchema`` from ``tools/list`` and check every result's
structured content against it, error results too, throwing ``-32602`` (and
showing the model nothing of ours) where it does not match. The Python SDK
skips that check, so these calls go through the real
``@modelcontextprotocol/sdk`` client (pinned in tests/mcp/clients/), run with
Node, against a real ``serve`` over stdio and over streamable HTTP.

Each error case is a tool called the way a model gets it wrong: an unknown
id, a bad namespace or agent, a field too long or empty, an unknown or
missing argument, a value of the wrong type, an empty query. Each must come
back as an ``isError`` result whose text is our one-line message and code,
with no ``structuredContent``; each success must pass the client's check.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_mem_vault.vault import Vault
from tests.cli_process import cli_env, run_process
from tests.mcp_wire import SERVE

from .conftest import CLIENTS, NODE, NS, TOKEN, needs_clients, serve_http

SDK = CLIENTS / "node_modules" / "@modelcontextprotocol" / "sdk"

pytestmark = needs_clients(SDK, "the MCP TypeScript SDK")

# (tool, arguments, the code of the error it must answer, words of the message)
ERRORS: list[tuple[str, dict[str, Any], str, str]] = [
    ("create_handoff", {"to": "codex"}, "invalid_arguments", "summary: missing"),
    (
        "create_handoff",
        {"to": "codex", "summary": "s", "context": "c", "tags": ["x"]},
        "invalid_arguments",
        "tags: unknown argument",
    ),
    (
        "create_handoff",
        {"to": "codex", "summary": "s", "context": "c", "namespace": "../etc"},
        "invalid_namespace",
        "'..' segments",
    ),
    ("create_handoff", {"to": "codex", "summary": " ", "context": "c"}, "missing_field", "summary"),
    (
        "create_handoff",
        {"to": "codex", "summary": "a\u0000b", "context": "c"},
        "invalid_string",
        "NUL",
    ),
    (
        "create_handoff",
        {"to": "Bad Agent!", "summary": "s", "context": "c"},
        "invalid_agent",
        "not a valid agent name",
    ),
    (
        "create_handoff",
        {"to": "codex", "summary": "s", "context": "c", "supersedes": ["3zzzzzzzzzzzz"]},
        "handoff_not_found",
        "3zzzzzzzzzzzz",
    ),
    (
        "create_handoff",
        {"to": "codex", "summary": "s", "context": "x" * 300_000},
        "too_large",
        "the limit is 200,000",
    ),
    ("read_handoff", {"namespace": "../etc"}, "invalid_namespace", "'..' segments"),
    ("read_handoff", {"agent": "Bad Agent!"}, "invalid_agent", "not a valid agent name"),
    ("peek_handoff", {"agent": 7}, "invalid_arguments", "agent: expected a string"),
    ("list_handoffs", {"status": "maybe"}, "invalid_arguments", "status: expected"),
    ("list_handoffs", {"limit": 0}, "invalid_arguments", "limit"),
    ("list_handoffs", {"offset": -1}, "invalid_arguments", "offset"),
    ("ack_handoff", {"id": "3zzzzzzzzzzzz"}, "handoff_not_found", "list_handoffs"),
    ("ack_handoff", {"id": "not-a-tid"}, "invalid_id", "13-character TIDs"),
    ("ack_handoff", {}, "invalid_arguments", "id: missing"),
    ("reopen_handoff", {"id": "3zzzzzzzzzzzz"}, "handoff_not_found", "list_handoffs"),
    ("save_memory", {"title": "t"}, "invalid_arguments", "content: missing"),
    (
        "save_memory",
        {"title": "t", "content": "c", "kind": "Not A Kind"},
        "invalid_kind",
        "lowercase word",
    ),
    ("save_memory", {"title": "t", "content": "c", "tags": ["#bad tag"]}, "invalid_tag", "tag"),
    ("save_memory", {"title": "", "content": "c"}, "missing_field", "title"),
    ("search_memory", {"query": ""}, "missing_field", "no words to search for"),
    ("search_memory", {"query": "x", "limit": 0}, "invalid_arguments", "limit"),
    ("search_memory", {"query": "x", "namespace": "Bad NS"}, "invalid_namespace", "Bad NS"),
    ("get_project_brief", {"namespace": "../etc"}, "invalid_namespace", "'..' segments"),
    ("get_project_brief", {"x": 1}, "invalid_arguments", "x: unknown argument"),
    ("list_memories", {"status": "maybe"}, "invalid_arguments", "status: expected"),
    ("list_memories", {"kind": "Bad Kind"}, "invalid_kind", "lowercase word"),
    ("list_memories", {"namespace": "../etc"}, "invalid_namespace", "'..' segments"),
    ("get_memory", {"id": "3zzzzzzzzzzzz"}, "memory_not_found", "list_memories"),
    ("get_memory", {"id": "nope"}, "invalid_id", "13-character TIDs"),
    ("update_memory", {"id": "3zzzzzzzzzzzz", "content": "x"}, "memory_not_found", "3zzzzzzzzzzzz"),
    ("update_memory", {"content": "x"}, "invalid_arguments", "id: missing"),
    ("forget_memory", {"id": "3zzzzzzzzzzzz"}, "memory_not_found", "list_memories"),
    ("forget_memory", {"id": "3zzzzzzzzzzzz", "purge": [1]}, "invalid_arguments", "purge"),
    ("restore_memory", {"id": "3zzzzzzzzzzzz"}, "memory_not_found", "list_memories"),
]


def successes(pending_id: str, memory_id: str) -> list[tuple[str, dict[str, Any]]]:
    """A call of every tool that succeeds, each result checked by the client."""
    return [
        ("list_memories", {}),
        ("get_memory", {"id": memory_id}),
        ("forget_memory", {"id": memory_id}),
        ("restore_memory", {"id": memory_id}),
        ("update_memory", {"id": memory_id, "content": "Batches of 500: lock time"}),
        ("create_handoff", {"to": "claude-code", "summary": "Batch it", "context": "0007"}),
        ("peek_handoff", {}),
        ("list_handoffs", {"status": "all"}),
        ("read_handoff", {}),
        ("read_handoff", {}),  # nothing pending: the answer's handoff is null
        ("reopen_handoff", {"id": pending_id}),
        ("ack_handoff", {"id": pending_id}),
        ("save_memory", {"title": "Batches of 1000", "content": "Lock time", "kind": "decision"}),
        ("search_memory", {"query": "batches"}),
        ("get_project_brief", {}),
    ]


def run_client(spec: dict[str, Any]) -> dict[str, Any]:
    done = run_process([NODE, CLIENTS / "call_tools.mjs"], input=json.dumps(spec), timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def spec_calls(pending_id: str, memory_id: str) -> list[dict[str, Any]]:
    calls = [(tool, args) for tool, args, _, _ in ERRORS] + successes(pending_id, memory_id)
    return [{"name": tool, "arguments": args} for tool, args in calls]


def check(answers: dict[str, Any], pending_id: str, memory_id: str) -> None:
    """Each error case answered with our message and code, each success let through."""
    errors, answered = answers["results"][: len(ERRORS)], answers["results"][len(ERRORS) :]
    for (tool, arguments, code, words), answer in zip(ERRORS, errors, strict=True):
        assert "threw" not in answer, (tool, arguments, answer)
        result = answer["result"]
        assert result.get("isError") is True, (tool, result)
        assert "structuredContent" not in result, (tool, result)
        [block] = result["content"]
        error = result["_meta"]["agent-mem-vault/error"]
        assert block["text"] == f"error: {error['message']} [{error['code']}]"
        assert error["code"] == code, (tool, block["text"])
        assert words in block["text"], (tool, block["text"])
    for (tool, arguments), answer in zip(successes(pending_id, memory_id), answered, strict=True):
        assert "threw" not in answer, (tool, arguments, answer)
        assert answer["result"].get("isError") is not True, (tool, answer)
        assert "structuredContent" in answer["result"], (tool, answer)


@pytest.fixture
def pending_id(vault: Vault) -> str:
    """A handoff already read, for ack and reopen to find."""
    handoff = vault.create_handoff(to="codex", summary="older", context="c", namespace=NS)
    vault.ack_handoff(handoff.id)
    return handoff.id


@pytest.fixture
def memory_id(vault: Vault) -> str:
    """A saved decision, for the memory tools to find."""
    memory = vault.save_memory(
        namespace=NS, title="Batches of 1000", content="Lock time", kind="decision", agent="x"
    )
    return memory.id


def test_every_tools_errors_and_answers_through_the_typescript_sdk_over_stdio(
    vault: Vault, pending_id: str, memory_id: str
) -> None:
    answers = run_client(
        {
            "transport": "stdio",
            "command": SERVE[0],
            "args": [*SERVE[1:], "--namespace", NS],
            "env": cli_env(vault=vault.path),
            "calls": spec_calls(pending_id, memory_id),
        }
    )
    assert "create_handoff" in answers["tools"]
    check(answers, pending_id, memory_id)


def test_every_tools_errors_and_answers_through_the_typescript_sdk_over_http(
    vault: Vault, pending_id: str, memory_id: str
) -> None:
    with serve_http(vault.path) as served:
        answers = run_client(
            {
                "transport": "http",
                "url": served.url,
                "token": TOKEN,
                "calls": spec_calls(pending_id, memory_id),
            }
        )
    assert "Traceback" not in served.stderr, served.stderr
    check(answers, pending_id, memory_id)


def test_every_tool_is_covered_by_an_error_case_and_a_success() -> None:
    import anyio

    from agent_mem_vault.mcp import ServerSettings, build_server

    async def names() -> set[str]:
        server = build_server(Vault("/nonexistent"), ServerSettings(agent="codex", namespace=NS))
        return {tool.name for tool in await server.list_tools()}

    tools = anyio.run(names)
    assert {tool for tool, *_ in ERRORS} == tools
    assert {tool for tool, _ in successes("x", "y")} == tools
