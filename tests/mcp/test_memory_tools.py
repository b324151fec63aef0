"""The memory tools after save and search (list, get, update, forget, restore), driven by
the SDK's own client: in process, and against ``serve`` as a subprocess over stdio."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_mem_vault.vault import Vault
from mcp import Client

from .conftest import NS, in_process, serve_params


def text_of(result: Any) -> str:
    return "".join(block.text for block in result.content)


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, text_of(result)
    return dict(result.structured_content)


async def save(client: Client, title: str, **kw: Any) -> str:
    saved = await call(client, "save_memory", title=title, content=f"{title} text", **kw)
    return str(saved["memory"]["id"])


async def test_list_memories_pages_newest_first_with_filters(vault: Vault) -> None:
    async with in_process(vault) as client:
        ids = [await save(client, f"m{i}", kind="decision" if i % 2 else "note") for i in range(5)]
        page = await call(client, "list_memories", limit=2)
        decisions = await call(client, "list_memories", kind="decision")
    assert [m["id"] for m in page["memories"]] == ids[:2:-1]
    assert (page["total"], page["count"], page["more"], page["next_offset"]) == (5, 2, True, 2)
    assert [m["id"] for m in decisions["memories"]] == [ids[3], ids[1]]
    assert all(m["status"] == "live" for m in page["memories"])


async def test_get_memory_reads_one_and_says_its_status(vault: Vault) -> None:
    async with in_process(vault) as client:
        mid = await save(client, "Batches of 1000", kind="decision")
        result = await client.call_tool("get_memory", {"id": mid})
    assert result.structured_content["memory"]["content"] == "Batches of 1000 text"
    assert text_of(result).startswith(f"memory {mid} [decision, live] in {NS}")


async def test_update_memory_replaces_it_in_search_and_keeps_the_old_as_history(
    vault: Vault,
) -> None:
    async with in_process(vault, agent="codex") as client:
        old = await save(client, "Batches of 1000", kind="decision")
        updated = await call(client, "update_memory", id=old, content="Batches of 500")
        new = updated["memory"]
        hits = await call(client, "search_memory", query="batches")
        history = await call(client, "get_memory", id=old)
        brief = await call(client, "get_project_brief")
    assert new["supersedes"] == [old] and new["agent"] == "codex" and new["status"] == "live"
    assert [h["memory"]["id"] for h in hits["hits"]] == [new["id"]]
    assert history["memory"]["status"] == "superseded"
    assert history["memory"]["superseded_by"] == new["id"]
    assert [d["id"] for d in brief["decisions"]] == [new["id"]]


async def test_forget_and_restore_memory_through_the_client(vault: Vault) -> None:
    async with in_process(vault) as client:
        mid = await save(client, "Staging key rotation", kind="decision")
        forgotten = await call(client, "forget_memory", id=mid)
        gone = await call(client, "search_memory", query="rotation")
        listed = await call(client, "list_memories", status="forgotten")
        restored = await call(client, "restore_memory", id=mid)
        back = await call(client, "search_memory", query="rotation")
    assert forgotten["purged"] is False and forgotten["memory"]["status"] == "forgotten"
    assert gone["hits"] == [] and [m["id"] for m in listed["memories"]] == [mid]
    assert restored["memory"]["status"] == "live"
    assert [h["memory"]["id"] for h in back["hits"]] == [mid]


async def test_forget_memory_with_purge_deletes_the_note(vault: Vault) -> None:
    async with in_process(vault) as client:
        mid = await save(client, "token ghp_example")
        path = vault.path / vault.get_memory(mid).path
        purged = await call(client, "forget_memory", id=mid, purge=True)
        after = await client.call_tool("get_memory", {"id": mid})
    assert purged["purged"] is True and not path.exists()
    assert after.is_error and "[memory_not_found]" in text_of(after)


@pytest.mark.parametrize(
    ("tool", "arguments", "code"),
    [
        ("get_memory", {"id": "3zzzzzzzzzzz2"}, "memory_not_found"),
        ("get_memory", {"id": "not-an-id"}, "invalid_id"),
        ("update_memory", {"id": "3zzzzzzzzzzz2", "content": "x"}, "memory_not_found"),
        ("forget_memory", {"id": "3zzzzzzzzzzz2"}, "memory_not_found"),
        ("restore_memory", {"id": "3zzzzzzzzzzz2"}, "memory_not_found"),
        ("list_memories", {"namespace": "../up"}, "invalid_namespace"),
        ("list_memories", {"kind": "Not A Kind"}, "invalid_kind"),
    ],
)
async def test_memory_tool_errors_are_tool_errors_with_their_code(
    vault: Vault, tool: str, arguments: dict[str, Any], code: str
) -> None:
    async with in_process(vault) as client:
        result = await client.call_tool(tool, arguments)
    assert result.is_error
    assert text_of(result).startswith("error: ") and text_of(result).endswith(f"[{code}]")


async def test_updating_a_superseded_memory_is_a_tool_error_naming_the_live_one(
    vault: Vault,
) -> None:
    async with in_process(vault) as client:
        old = await save(client, "first")
        new = (await call(client, "update_memory", id=old, title="second"))["memory"]["id"]
        result = await client.call_tool("update_memory", {"id": old, "content": "third"})
    assert result.is_error and "[memory_superseded]" in text_of(result) and new in text_of(result)


@pytest.mark.slow
async def test_the_memory_tools_over_stdio_from_a_serve_process(vault_path: Path) -> None:
    async with Client(serve_params(vault_path, "codex", "--namespace", NS)) as client:
        mid = await save(client, "Use tabs", kind="decision")
        new = (await call(client, "update_memory", id=mid, content="Use spaces"))["memory"]
        listed = await call(client, "list_memories", status="all")
        got = await call(client, "get_memory", id=mid)
        await call(client, "forget_memory", id=new["id"])
        live = await call(client, "list_memories")
        await call(client, "restore_memory", id=new["id"])
        again = await call(client, "list_memories")
    assert {m["id"] for m in listed["memories"]} == {mid, new["id"]}
    assert got["memory"]["superseded_by"] == new["id"]
    assert live["memories"] == [] and [m["id"] for m in again["memories"]] == [new["id"]]
    assert Vault(vault_path).get_memory(new["id"]).agent == "codex"
