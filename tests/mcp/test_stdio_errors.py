"""Over stdio every line gets an answer, and every refusal is a one-line tool error.

The server runs as ``agent-mem-vault serve``, a real subprocess; lines are
written to its stdin as raw bytes, as a client with a bug (or a hostile one)
would write them, and each test waits for the answer on its stdout.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_mem_vault.mcp import ERROR_META_KEY
from agent_mem_vault.vault import Vault
from tests.mcp_wire import RawServer, serving

from .conftest import NS


@pytest.fixture
def server(vault: Vault) -> Iterator[RawServer]:
    with serving(vault.path, "--namespace", NS) as raw:
        yield raw


def still_serving(server: RawServer, id_: int) -> None:
    assert server.request(id_, "ping", {}) == {"jsonrpc": "2.0", "id": id_, "result": {}}


def test_a_lone_surrogate_escape_is_answered_with_a_parse_error_for_its_request(
    server: RawServer,
) -> None:
    server.send(
        b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": '
        b'{"name": "save_memory", "arguments": {"title": "a\\ud800", "content": "x"}}}'
    )
    answer = server.answer()
    assert answer["id"] == 7
    assert answer["error"]["code"] == -32700
    assert "surrogate" in answer["error"]["message"]
    still_serving(server, 8)


def test_nesting_past_the_parsers_limit_is_answered_with_a_parse_error(server: RawServer) -> None:
    for id_, depth in ((3, 300), (4, 100_000)):
        nested = b"[" * depth + b"]" * depth
        server.send(
            b'{"jsonrpc": "2.0", "id": %d, "method": "ping", "params": {"x": %s}}' % (id_, nested)
        )
        answer = server.answer()
        assert answer["error"]["code"] == -32700
        assert "nesting" in answer["error"]["message"]
        # Where even the lenient parser gives up, the id cannot be known: null, per JSON-RPC 2.0.
        assert answer["id"] == (id_ if depth == 300 else None)
    still_serving(server, 5)


def test_a_line_that_is_not_json_gets_a_parse_error_with_id_null(server: RawServer) -> None:
    server.send(b"{this is not json")
    answer = server.answer()
    assert answer["id"] is None and "id" in answer
    assert answer["error"]["code"] == -32700
    assert answer["error"]["message"].startswith("parse error: ")
    still_serving(server, 1)


def test_json_that_is_no_json_rpc_message_gets_invalid_request_with_its_id(
    server: RawServer,
) -> None:
    server.send(b'{"id": 12, "hello": "there"}')
    answer = server.answer()
    assert answer["id"] == 12
    assert answer["error"]["code"] == -32600
    still_serving(server, 13)


def test_nul_in_a_tool_argument_is_refused_as_over_http_and_nothing_is_saved(
    server: RawServer, vault_path: Path
) -> None:
    result = server.call(20, "save_memory", {"title": "a\x00b", "content": "x"})
    assert result["isError"] is True
    error = result["_meta"][ERROR_META_KEY]
    assert error["code"] == "invalid_string"
    assert "title" in error["message"] and "U+0000" in error["message"]
    created = server.call(
        21, "create_handoff", {"to": "claude-code", "summary": "s", "context": "x\x00"}
    )
    assert created["_meta"][ERROR_META_KEY]["code"] == "invalid_string"
    assert not list(vault_path.rglob("memories/*.md"))
    assert not list(vault_path.rglob("handoffs/*.md"))


@pytest.mark.parametrize("tool", ["list_handoffs", "search_memory"])
def test_an_offset_of_2_to_the_63_is_invalid_offset_not_a_generic_tool_error(
    server: RawServer, tool: str
) -> None:
    arguments: dict[str, Any] = {"query": "batch"} if tool == "search_memory" else {}
    result = server.call(30, tool, {**arguments, "offset": 2**63})
    assert result["isError"] is True
    assert result["_meta"][ERROR_META_KEY]["code"] == "invalid_offset"
    assert result["content"][0]["text"].startswith("error: offset must be a whole number")


def test_a_100_kb_value_comes_back_as_200_characters_and_its_length(server: RawServer) -> None:
    huge = "x" * 100_000
    refused = server.call(40, "create_handoff", {"to": huge, "summary": "s", "context": "c"})
    assert refused["_meta"][ERROR_META_KEY]["code"] == "invalid_agent"
    unknown = server.call(
        41, "create_handoff", {huge: 1, "to": "codex", "summary": "s", "context": "c"}
    )
    assert unknown["_meta"][ERROR_META_KEY]["code"] == "invalid_arguments"
    for result in (refused, unknown):
        body = json.dumps(result)
        assert "x" * 200 + "… (100" in result["content"][0]["text"]
        assert "x" * 201 not in body
        assert len(body) < 3_000


def test_a_file_where_a_namespace_folder_belongs_is_a_bad_path_tool_error(
    server: RawServer, vault_path: Path
) -> None:
    blocked = vault_path / NS
    blocked.parent.mkdir(parents=True, exist_ok=True)
    blocked.write_text("a file, not a folder\n")
    arguments = {"to": "claude-code", "summary": "s", "context": "c"}
    result = server.call(50, "create_handoff", arguments)
    assert result["isError"] is True
    error = result["_meta"][ERROR_META_KEY]
    assert error["code"] == "bad_path"
    assert str(blocked) in error["message"]
    assert blocked.read_text() == "a file, not a folder\n"
    still_serving(server, 51)
