"""MCP listings say when they are cut: the total, and the offset of the next page."""

from __future__ import annotations

from typing import Any

from agent_mem_vault.vault import Vault

from .conftest import NS, in_process


def text_of(result: Any) -> str:
    return "".join(block.text for block in result.content)


async def test_list_handoffs_says_how_many_match_and_gives_the_next_offset(vault: Vault) -> None:
    for i in range(5):
        vault.create_handoff(to="codex", summary=f"s{i}", context="c", namespace=NS, from_="a")
    async with in_process(vault) as client:
        first = await client.call_tool("list_handoffs", {"limit": 2})
        second = await client.call_tool("list_handoffs", {"limit": 2, "offset": 2})
        last = await client.call_tool("list_handoffs", {"limit": 2, "offset": 4})
        whole = await client.call_tool("list_handoffs", {})
        bad = await client.call_tool("list_handoffs", {"offset": -1})
    page = first.structured_content
    assert [h["summary"] for h in page["handoffs"]] == ["s4", "s3"]
    assert (page["count"], page["total"], page["more"], page["next_offset"]) == (2, 5, True, 2)
    assert "Showing 1-2 of 5 handoffs; pass offset=2 for the next page." in text_of(first)
    assert [h["summary"] for h in second.structured_content["handoffs"]] == ["s2", "s1"]
    assert last.structured_content["next_offset"] is None
    assert last.structured_content["more"] is False
    assert text_of(last).endswith("Showing 5-5 of 5 handoffs.")
    assert whole.structured_content["total"] == 5 and "Showing" not in text_of(whole)
    assert bad.is_error and "offset" in text_of(bad)


async def test_search_memory_says_how_many_match_and_gives_the_next_offset(vault: Vault) -> None:
    for i in range(3):
        vault.save_memory(namespace=NS, title=f"deploy {i}", content="deploy step")
    async with in_process(vault) as client:
        first = await client.call_tool("search_memory", {"query": "deploy", "limit": 2})
        rest = await client.call_tool("search_memory", {"query": "deploy", "limit": 2, "offset": 2})
    page = first.structured_content
    assert (page["count"], page["total"], page["more"], page["next_offset"]) == (2, 3, True, 2)
    assert "pass offset=2 for the next page" in text_of(first)
    ids = {h["memory"]["id"] for h in page["hits"] + rest.structured_content["hits"]}
    assert len(ids) == 3 and rest.structured_content["more"] is False
