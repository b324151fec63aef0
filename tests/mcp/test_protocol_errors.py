"""The protocol's own error rules, on both transports, as a strict client checks them.

``prompts/get`` for a prompt that does not exist or without a required
argument is ``-32602`` with no traceback; an id that is neither a string nor
an integer is ``-32600`` and nothing runs; a batch is refused with one clean
``-32600``; a cursor the server never issued is ``-32602``. Over stdio the
server is a real ``serve`` on bare pipes; over HTTP a real ``serve --http``
spoken to in the handshake era, as the TypeScript SDK (Claude Code, Gemini
CLI, opencode) speaks it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_mem_vault.vault import Vault
from tests.mcp_wire import RawServer, serving

from .conftest import NS, HttpSession, serve_http

pytestmark = pytest.mark.slow

INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
PARSE_ERROR = -32700

BAD_IDS = [None, True, 1.5]


@pytest.fixture
def stdio(vault: Vault) -> Iterator[RawServer]:
    with serving(vault.path, "--namespace", NS) as raw:
        yield raw


@pytest.fixture
def http(vault_path: Path) -> Iterator[HttpSession]:
    with serve_http(vault_path) as served:
        yield HttpSession(served)
    assert "Traceback" not in served.stderr, served.stderr


def request(id_: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": params or {}}


def assert_error(answer: dict[str, Any], code: int, id_: Any, *words: str) -> None:
    assert answer.get("id") == id_ and "error" in answer, answer
    assert answer["error"]["code"] == code, answer
    message = answer["error"]["message"]
    assert "\n" not in message and "pydantic" not in message, message
    for word in words:
        assert word in message, message


PROMPT_CASES = [
    ({"name": "no-such-prompt"}, ("unknown prompt 'no-such-prompt'", "prepare-handoff")),
    ({"name": "prepare-handoff", "arguments": {}}, ("to: missing",)),
    ({"name": "prepare-handoff", "arguments": {"to": "codex", "tags": "x"}}, ("tags: unknown",)),
    ({"name": "prepare-handoff", "arguments": {"to": 7}}, ("to: expected a string",)),
]


@pytest.mark.parametrize(("params", "words"), PROMPT_CASES)
def test_prompts_get_errors_are_invalid_params_over_stdio(
    stdio: RawServer, params: dict[str, Any], words: tuple[str, ...]
) -> None:
    answer = stdio.request(5, "prompts/get", params)
    assert_error(answer, INVALID_PARAMS, 5, *words)


@pytest.mark.parametrize(("params", "words"), PROMPT_CASES)
def test_prompts_get_errors_are_invalid_params_over_http(
    http: HttpSession, params: dict[str, Any], words: tuple[str, ...]
) -> None:
    assert_error(http.answer(request(5, "prompts/get", params)), INVALID_PARAMS, 5, *words)


def test_a_prompt_with_its_arguments_is_still_served(stdio: RawServer) -> None:
    answer = stdio.request(6, "prompts/get", {"name": "prepare-handoff", "arguments": {"to": "x"}})
    assert "create_handoff(to='x'" in answer["result"]["messages"][0]["content"]["text"]


def test_an_unknown_tool_is_invalid_params_naming_the_tools_there_are(stdio: RawServer) -> None:
    answer = stdio.request(6, "tools/call", {"name": "create_handof", "arguments": {}})
    assert_error(answer, INVALID_PARAMS, 6, "unknown tool 'create_handof'", "create_handoff")


def test_an_unknown_tool_is_invalid_params_over_http(http: HttpSession) -> None:
    answer = http.answer(request(6, "tools/call", {"name": "nope", "arguments": {}}))
    assert_error(answer, INVALID_PARAMS, 6, "unknown tool 'nope'")


LISTS = ["tools/list", "prompts/list", "resources/list", "resources/templates/list"]


@pytest.mark.parametrize("method", LISTS)
def test_a_cursor_the_server_never_issued_is_invalid_params_over_stdio(
    stdio: RawServer, method: str
) -> None:
    answer = stdio.request(7, method, {"cursor": "bogus"})
    assert_error(answer, INVALID_PARAMS, 7, "invalid cursor 'bogus'", "without one")
    whole = stdio.request(8, method, {})
    assert "result" in whole, whole


def test_a_cursor_the_server_never_issued_is_invalid_params_over_http(http: HttpSession) -> None:
    answer = http.answer(request(7, "tools/list", {"cursor": "bogus"}))
    assert_error(answer, INVALID_PARAMS, 7, "invalid cursor")


@pytest.mark.parametrize("bad_id", BAD_IDS)
def test_an_id_that_is_not_a_string_or_integer_is_invalid_request_and_nothing_runs_over_stdio(
    stdio: RawServer, vault: Vault, bad_id: Any
) -> None:
    call = request(bad_id, "tools/call", {"name": "create_handoff", "arguments": HANDOFF})
    stdio.write(json.dumps(call).encode() + b"\n")
    assert_error(stdio.answer(), INVALID_REQUEST, None, "neither a string nor an integer")
    assert stdio.request(9, "ping", {}) == {"jsonrpc": "2.0", "id": 9, "result": {}}
    assert vault.list_handoffs(namespace=NS, status="all") == []


@pytest.mark.parametrize("bad_id", BAD_IDS)
def test_an_id_that_is_not_a_string_or_integer_is_invalid_request_and_nothing_runs_over_http(
    http: HttpSession, vault_path: Path, bad_id: Any
) -> None:
    call = request(bad_id, "tools/call", {"name": "create_handoff", "arguments": HANDOFF})
    response = http.post(call)
    assert response.status_code == 400
    assert_error(response.json(), INVALID_REQUEST, None, "neither a string nor an integer")
    assert Vault(vault_path).list_handoffs(namespace=NS, status="all") == []


HANDOFF = {"to": "codex", "summary": "should never be written", "context": "c"}
BATCH = [
    request(1, "ping"),
    request(2, "tools/call", {"name": "create_handoff", "arguments": HANDOFF}),
]
"""A JSON-RPC batch (which MCP does not take): a ping, and a write that must not happen."""


def test_a_batch_is_refused_with_one_invalid_request_over_stdio(
    stdio: RawServer, vault: Vault
) -> None:
    stdio.write(json.dumps(BATCH).encode() + b"\n")
    assert_error(stdio.answer(), INVALID_REQUEST, None, "batch", "its own line")
    assert stdio.request(3, "ping", {})["id"] == 3  # the next line is the next answer
    assert vault.list_handoffs(namespace=NS, status="all") == []


def test_a_batch_is_refused_with_one_invalid_request_over_http(
    http: HttpSession, vault_path: Path
) -> None:
    response = http.post(BATCH)
    assert response.status_code == 400
    assert_error(response.json(), INVALID_REQUEST, None, "batch", "its own body")
    assert Vault(vault_path).list_handoffs(namespace=NS, status="all") == []


def test_a_body_that_is_not_json_rpc_gets_one_clean_line_over_http(http: HttpSession) -> None:
    not_json = http.post(None, raw=b'{"jsonrpc": "2.0", "id": 4, "method": ')
    assert not_json.status_code == 400
    assert_error(not_json.json(), PARSE_ERROR, None, "parse error: the body")
    no_method = http.post({"jsonrpc": "2.0", "id": 4})
    assert no_method.status_code == 400
    assert_error(no_method.json(), INVALID_REQUEST, 4, "not a JSON-RPC 2.0 request")


def test_without_the_token_a_bad_body_is_refused_as_unauthorized_first(
    http: HttpSession,
) -> None:
    refused = http.post([request(1, "ping")], token=False)
    assert refused.status_code == 401
