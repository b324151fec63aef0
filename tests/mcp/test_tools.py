"""The MCP tools driven by the SDK's own client, in process, on a real vault folder."""

from __future__ import annotations

from typing import Any

import pytest
from mcp.types import CallToolResult

from agent_mem_vault.mcp import ERROR_META_KEY
from agent_mem_vault.vault import Vault
from mcp import Client

from .conftest import NS, in_process

SEED_CONTEXT = (
    "The backfill in migrations/0007 needs batching. Start with 1000 rows and measure lock time."
)


def text_of(result: Any) -> str:
    return "".join(block.text for block in result.content)


async def create(client: Client, **kwargs: Any) -> dict[str, Any]:
    args = {"to": "codex", "summary": "Batch the orders backfill", "context": SEED_CONTEXT}
    result = await client.call_tool("create_handoff", {**args, **kwargs})
    assert not result.is_error, text_of(result)
    return dict(result.structured_content["handoff"])


async def test_tools_have_the_seed_names_and_arguments(vault: Vault) -> None:
    async with in_process(vault) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == {
        "create_handoff",
        "read_handoff",
        "peek_handoff",
        "list_handoffs",
        "ack_handoff",
        "reopen_handoff",
        "save_memory",
        "search_memory",
        "get_project_brief",
        "list_memories",
        "get_memory",
        "update_memory",
        "forget_memory",
        "restore_memory",
    }

    def params(name: str) -> set[str]:
        return set(tools[name].input_schema["properties"])

    # The seed's arguments, and private (a note that never leaves the machine: docs/sync.md).
    assert params("create_handoff") == {
        "to",
        "summary",
        "context",
        "namespace",
        "supersedes",
        "private",
    }
    assert tools["create_handoff"].input_schema["required"] == ["to", "summary", "context"]
    assert params("read_handoff") == {"agent", "namespace"}
    assert params("peek_handoff") == {"agent", "namespace"}
    assert {"namespace", "status", "agent"} <= params("list_handoffs")
    assert params("ack_handoff") == {"id"}
    assert params("reopen_handoff") == {"id"}
    assert params("get_project_brief") == {"namespace"}
    assert {"title", "content", "namespace", "kind", "tags", "private"} == params("save_memory")
    assert params("list_memories") == {"namespace", "status", "kind", "tags", "limit", "offset"}
    assert params("get_memory") == {"id"}
    assert params("update_memory") == {"id", "title", "content", "kind", "tags"}
    assert params("forget_memory") == {"id", "purge"}
    assert params("restore_memory") == {"id"}


async def test_every_tool_has_an_output_schema_a_prompt_and_the_right_hints(vault: Vault) -> None:
    async with in_process(vault) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    for tool in tools.values():
        assert tool.output_schema is not None and tool.output_schema["type"] == "object"
        assert tool.description and len(tool.description) > 40
        assert tool.annotations is not None
        # Only a purge deletes anything (a memory's note).
        assert tool.annotations.destructive_hint is (tool.name == "forget_memory")
    read_only = {n for n, t in tools.items() if t.annotations and t.annotations.read_only_hint}
    assert read_only == {
        "peek_handoff",
        "list_handoffs",
        "search_memory",
        "get_project_brief",
        "list_memories",
        "get_memory",
    }
    idempotent = {n for n, t in tools.items() if t.annotations and t.annotations.idempotent_hint}
    assert idempotent == read_only | {
        "ack_handoff",
        "reopen_handoff",
        "forget_memory",
        "restore_memory",
    }


async def test_create_handoff_is_from_the_servers_agent(vault: Vault) -> None:
    async with in_process(vault, agent="claude-code") as client:
        handoff = await create(client, namespace=NS)
    assert handoff["from"] == "claude-code"
    assert handoff["to"] == "codex"
    assert handoff["status"] == "pending"
    assert vault.get_handoff(handoff["id"]).sender == "claude-code"


async def test_create_handoff_answers_with_its_id_and_where_it_went_not_the_text_sent(
    vault: Vault,
) -> None:
    async with in_process(vault, agent="claude-code") as client:
        result = await client.call_tool(
            "create_handoff",
            {"to": "codex", "summary": "Batch the orders backfill", "context": SEED_CONTEXT},
        )
    handoff = result.structured_content["handoff"]
    stored = vault.get_handoff(handoff["id"])
    assert handoff == {
        "id": stored.id,
        "namespace": stored.namespace,
        "from": "claude-code",
        "to": "codex",
        "status": "pending",
        "created_at": stored.created_at,
        "supersedes": [],
        "path": stored.path,
    }
    assert text_of(result) == f"handoff {stored.id} to codex in {stored.namespace}: pending"
    assert stored.context == SEED_CONTEXT


async def test_read_handoff_returns_the_seed_text_and_marks_it_read(vault: Vault) -> None:
    async with in_process(vault, agent="claude-code") as client:
        created = await create(client, namespace=NS)
    async with in_process(vault, agent="codex") as client:
        result = await client.call_tool("read_handoff", {"agent": "codex", "namespace": NS})
        # Who left it, for whom, when and its id; then the seed's text.
        heading = f"Handoff {created['id']} from claude-code to codex, {created['created_at']}"
        seed = f"## Summary\nBatch the orders backfill\n\n## Full Context\n{SEED_CONTEXT}"
        assert text_of(result) == f"{heading}\n\n{seed}"
        assert result.structured_content["text"] == text_of(result)
        handoff = result.structured_content["handoff"]
        assert handoff["read"] is True and handoff["read_at"]
        again = await client.call_tool("read_handoff", {"agent": "codex", "namespace": NS})
    assert not again.is_error
    assert again.structured_content["handoff"] is None
    assert text_of(again) == f"No pending handoff for codex in {NS}."


async def test_peek_handoff_does_not_consume(vault: Vault) -> None:
    async with in_process(vault) as client:
        created = await create(client)
        first = await client.call_tool("peek_handoff", {"agent": "codex"})
        second = await client.call_tool("peek_handoff", {"agent": "codex"})
    assert text_of(first) == text_of(second)
    assert first.structured_content["handoff"]["id"] == created["id"]
    assert vault.get_handoff(created["id"]).status == "pending"


async def test_agent_names_are_matched_exactly(vault: Vault) -> None:
    async with in_process(vault) as client:
        await create(client, to="Codex")
        result = await client.call_tool("read_handoff", {"agent": "codex"})
    assert result.structured_content["handoff"] is None


async def test_read_and_peek_default_to_the_servers_agent_and_namespace(vault: Vault) -> None:
    async with in_process(vault, agent="claude-code") as client:
        await create(client)
    async with in_process(vault, agent="codex") as client:
        result = await client.call_tool("peek_handoff", {})
    assert result.structured_content["handoff"]["namespace"] == NS
    assert result.structured_content["handoff"]["to"] == "codex"


async def test_list_handoffs_by_status_and_agent(vault: Vault) -> None:
    async with in_process(vault) as client:
        a = await create(client, summary="first")
        b = await create(client, summary="second", to="reviewer")
        await client.call_tool("ack_handoff", {"id": a["id"]})
        pending = await client.call_tool("list_handoffs", {"status": "pending"})
        read = await client.call_tool("list_handoffs", {"status": "read"})
        everything = await client.call_tool("list_handoffs", {"status": "all"})
        to_codex = await client.call_tool("list_handoffs", {"status": "all", "agent": "codex"})

    def ids(result: CallToolResult) -> list[str]:
        assert result.structured_content is not None
        return [h["id"] for h in result.structured_content["handoffs"]]

    assert ids(pending) == [b["id"]]
    assert ids(read) == [a["id"]]
    assert ids(everything) == [b["id"], a["id"]]  # newest first
    assert ids(to_codex) == [a["id"]]
    assert everything.structured_content["count"] == 2
    assert b["id"] in text_of(pending)


async def test_ack_marks_read_and_reopen_makes_it_pending_again(vault: Vault) -> None:
    async with in_process(vault) as client:
        h = await create(client)
        acked = await client.call_tool("ack_handoff", {"id": h["id"]})
        assert acked.structured_content["handoff"]["status"] == "read"
        assert acked.structured_content["handoff"]["read_at"]
        reopened = await client.call_tool("reopen_handoff", {"id": h["id"]})
    assert reopened.structured_content["handoff"]["status"] == "pending"
    assert reopened.structured_content["handoff"]["read_at"] is None


async def test_supersede_makes_the_older_handoff_read_with_superseded_by(vault: Vault) -> None:
    async with in_process(vault) as client:
        old = await create(client, summary="Batch the orders backfill")
        new = await create(client, summary="Use 500 rows instead", supersedes=[old["id"]])
        peek = await client.call_tool("peek_handoff", {"agent": "codex"})
    assert new["supersedes"] == [old["id"]]
    older = vault.get_handoff(old["id"])
    assert older.status == "read" and older.superseded_by == new["id"]
    assert peek.structured_content["handoff"]["id"] == new["id"]


async def test_save_memory_and_search_memory(vault: Vault) -> None:
    async with in_process(vault, agent="codex") as client:
        saved = await client.call_tool(
            "save_memory",
            {
                "title": "Backfill batch size",
                "content": "Batch the orders backfill at 1000 rows; lock time stays under 50 ms.",
                "kind": "decision",
                "tags": ["migrations"],
            },
        )
        assert not saved.is_error, text_of(saved)
        found = await client.call_tool("search_memory", {"query": "backfill lock"})
    memory = saved.structured_content["memory"]
    assert memory["agent"] == "codex" and memory["kind"] == "decision"
    assert memory["namespace"] == NS and memory["tags"] == ["migrations"]
    hits = found.structured_content["hits"]
    assert [h["memory"]["id"] for h in hits] == [memory["id"]]
    assert found.structured_content["count"] == 1


async def test_get_project_brief_has_decisions_and_pending_handoffs(vault: Vault) -> None:
    async with in_process(vault) as client:
        await client.call_tool(
            "save_memory",
            {"title": "Use batches", "content": "Batches of 1000.", "kind": "decision"},
        )
        h = await create(client)
        brief = await client.call_tool("get_project_brief", {})
    assert not brief.is_error, text_of(brief)
    body = brief.structured_content
    assert body["namespace"] == NS
    assert [d["title"] for d in body["decisions"]] == ["Use batches"]
    assert [p["id"] for p in body["pending"]] == [h["id"]]
    assert text_of(brief) == body["text"]
    assert "Use batches" in body["text"]


async def test_a_vault_error_is_a_tool_error_with_the_cli_message_and_the_server_keeps_serving(
    vault: Vault,
) -> None:
    async with in_process(vault) as client:
        unknown = await client.call_tool("ack_handoff", {"id": "3l6qyvzp7ns2c"})
        bad_ns = await client.call_tool("read_handoff", {"namespace": "../etc"})
        empty = await client.call_tool(
            "create_handoff", {"to": "codex", "summary": " ", "context": "x"}
        )
        still = await client.call_tool("list_handoffs", {})
    for result in (unknown, bad_ns, empty):
        assert result.is_error
        assert result.structured_content is None  # not the shape of the tool's answer
        error = result.meta[ERROR_META_KEY]
        assert text_of(result) == f"error: {error['message']} [{error['code']}]"
    assert unknown.meta[ERROR_META_KEY]["code"] == "handoff_not_found"
    assert "list_handoffs with status 'all'" in text_of(unknown)
    assert bad_ns.meta[ERROR_META_KEY]["code"] == "invalid_namespace"
    assert not still.is_error
    assert still.structured_content["count"] == 0


async def test_without_a_default_namespace_the_tool_says_namespace_is_required(
    vault: Vault,
) -> None:
    async with in_process(vault, namespace=None) as client:
        result = await client.call_tool("read_handoff", {})
    assert result.is_error
    assert "namespace is required" in text_of(result)
    assert result.meta[ERROR_META_KEY]["code"] == "invalid_input"


async def test_bad_arguments_are_a_tool_error_not_a_crash(vault: Vault) -> None:
    async with in_process(vault) as client:
        result = await client.call_tool("list_handoffs", {"status": "maybe"})
        after = await client.call_tool("list_handoffs", {})
    assert result.is_error
    assert "status" in text_of(result)
    assert not after.is_error


@pytest.mark.parametrize(
    ("tool", "arguments", "problems"),
    [
        (
            "create_handoff",
            {"to": "codex", "summary": "s", "context": "c", "tags": ["a"]},
            [
                "tags: unknown argument (this tool takes: to, summary, context, namespace, "
                "supersedes, private)"
            ],
        ),
        (
            "create_handoff",
            {"to": "codex", "summary": 1, "context": "c", "supersedes": "x"},
            ["summary: expected a string", "supersedes: expected a list of strings"],
        ),
        ("ack_handoff", {}, ["id: missing, expected a string"]),
        (
            "list_handoffs",
            {"status": "maybe", "limit": 0},
            [
                "status: expected 'pending', 'read' or 'all'",
                "limit: expected greater than or equal to 1",
            ],
        ),
        ("search_memory", {"query": "x", "limit": "many"}, ["limit: expected an integer"]),
    ],
    ids=["unknown", "wrong types", "missing", "constraints", "not a number"],
)
async def test_bad_arguments_are_refused_in_one_line_naming_field_and_expectation(
    vault: Vault, tool: str, arguments: dict[str, Any], problems: list[str]
) -> None:
    async with in_process(vault) as client:
        result = await client.call_tool(tool, arguments)
        listed = await client.call_tool("list_handoffs", {"status": "all"})
    assert result.is_error
    assert text_of(result) == f"error: {tool}: {'; '.join(problems)} [invalid_arguments]"
    assert result.meta[ERROR_META_KEY]["details"]["problems"] == problems
    assert listed.structured_content["count"] == 0


async def test_resources_give_the_brief_and_an_agents_pending_handoffs(vault: Vault) -> None:
    async with in_process(vault, agent="codex") as client:
        await create(client, summary="Pending for codex")
        listed = {str(r.uri) for r in (await client.list_resources()).resources}
        templates = {
            t.uri_template for t in (await client.list_resource_templates()).resource_templates
        }
        brief = await client.read_resource(f"vault://brief/{NS}")
        mine = await client.read_resource("vault://handoffs")
        theirs = await client.read_resource(f"vault://handoffs/codex/{NS}")
        nobody = await client.read_resource(f"vault://handoffs/nobody/{NS}")
    assert {"vault://brief", "vault://handoffs"} <= listed
    assert {"vault://brief/{+namespace}", "vault://handoffs/{agent}/{+namespace}"} <= templates
    assert NS in brief.contents[0].text  # type: ignore[union-attr]
    assert "Pending for codex" in mine.contents[0].text  # type: ignore[union-attr]
    assert "Pending for codex" in theirs.contents[0].text  # type: ignore[union-attr]
    assert nobody.contents[0].text == "No handoffs match."  # type: ignore[union-attr]


async def test_prompts_load_project_memory_and_prepare_a_handoff(vault: Vault) -> None:
    async with in_process(vault, agent="codex") as client:
        names = {p.name for p in (await client.list_prompts()).prompts}
        load = await client.get_prompt("load-project-memory", {})
        prepare = await client.get_prompt("prepare-handoff", {"to": "claude-code"})
    assert names == {"load-project-memory", "prepare-handoff"}
    load_text = load.messages[0].content.text  # type: ignore[union-attr]
    assert "get_project_brief" in load_text and "read_handoff(agent='codex'" in load_text
    prepare_text = prepare.messages[0].content.text  # type: ignore[union-attr]
    assert "save_memory" in prepare_text and "create_handoff(to='claude-code'" in prepare_text


async def test_list_handoffs_by_sender_shows_what_was_sent(vault: Vault) -> None:
    async with in_process(vault, agent="claude-code") as client:
        mine = await create(client, summary="from claude")
    async with in_process(vault, agent="codex") as client:
        await create(client, to="claude-code", summary="from codex")
        sent = await client.call_tool("list_handoffs", {"status": "all", "sender": "claude-code"})
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert [h["id"] for h in sent.structured_content["handoffs"]] == [mine["id"]]
    assert "sender" in tools["list_handoffs"].input_schema["properties"]
