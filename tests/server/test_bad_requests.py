"""Bad requests get a 4xx with a rejection code, never a 500, and change nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from agent_mem_vault.harness.index import list_entries
from agent_mem_vault.server.schemas import MAX_TEXT
from agent_mem_vault.server.support_demo import SupportDemo
from tests.server.support import ADA, BOB, OLGA, start_case

DESK = "/api/desk/threads/case-42"
JSON = {"content-type": "application/json"}
# 1,100 levels in about 2 KB: Python's json parser would recurse past its limit.
DEEP = b'{"a":' + b"[" * 1100 + b"]" * 1100 + b"}"
DEEP_VALUE = b'{"questionId": "w", "value": ' + b"[" * 40 + b"]" * 40 + b"}"
NUM = "number_out_of_range"
STR = "invalid_string"

# (name, method, path, headers, body, status, code)
CASES: list[tuple[str, str, str, dict[str, str], bytes | None, int, str]] = [
    ("malformed json", "POST", f"{DESK}/messages", ADA, b'{"text": ', 400, "malformed_json"),
    ("json not an object", "POST", f"{DESK}/messages", ADA, b"[1, 2]", 400, "malformed_json"),
    ("empty body", "POST", f"{DESK}/messages", ADA, b"", 400, "malformed_json"),
    ("not utf-8", "POST", f"{DESK}/messages", ADA, b'{"text": "\xff"}', 400, "malformed_json"),
    (
        "unknown field",
        "POST",
        f"{DESK}/messages",
        ADA,
        b'{"text": "hi", "x": 1}',
        400,
        "invalid_body",
    ),
    ("wrong type", "POST", f"{DESK}/messages", ADA, b'{"text": 42}', 400, "invalid_body"),
    (
        "bad as",
        "POST",
        f"{DESK}/messages",
        ADA,
        b'{"text": "hi", "as": "god"}',
        400,
        "invalid_body",
    ),
    ("empty text", "POST", f"{DESK}/messages", ADA, b'{"text": "  "}', 400, "invalid_body"),
    (
        "text one character past its limit",
        "POST",
        f"{DESK}/messages",
        ADA,
        b'{"text": "' + b"x" * (MAX_TEXT + 1) + b'"}',
        400,
        "invalid_body",
    ),
    (
        "a handoff note one character past its limit",
        "POST",
        f"{DESK}/transfer",
        OLGA,
        b'{"to": "billing", "note": "' + b"x" * (MAX_TEXT + 1) + b'"}',
        400,
        "invalid_body",
    ),
    (
        "share the owner role",
        "POST",
        f"{DESK}/members",
        ADA,
        b'{"userId": "eve", "role": "owner"}',
        400,
        "invalid_body",
    ),
    (
        "share a user id with a slash",
        "POST",
        f"{DESK}/members",
        ADA,
        b'{"userId": "a/b", "role": "member"}',
        400,
        "invalid_body",
    ),
    (
        "answer without a value",
        "POST",
        f"{DESK}/answer",
        OLGA,
        b'{"questionId": "w"}',
        400,
        "invalid_body",
    ),
    (
        "file without data or url",
        "POST",
        f"{DESK}/messages",
        ADA,
        b'{"text": "see", "files": [{"mediaType": "image/png"}]}',
        400,
        "invalid_body",
    ),
    (
        "file data not base64",
        "POST",
        f"{DESK}/messages",
        ADA,
        b'{"text": "see", "files": [{"mediaType": "image/png", "data": "not base64!"}]}',
        400,
        "invalid_body",
    ),
    (
        "file url not http",
        "POST",
        f"{DESK}/messages",
        ADA,
        b'{"text": "see", "files": [{"mediaType": "image/png", "url": "javascript:alert(1)"}]}',
        400,
        "invalid_body",
    ),
    ("unknown thread", "GET", "/api/desk/threads/nope", ADA, None, 404, "thread_not_found"),
    (
        "resolve with a value it cannot take",
        "POST",
        f"{DESK}/waits/w1/resolve",
        OLGA,
        b'{"value": 1}',
        400,
        "invalid_body",
    ),
    (
        "operator reply to an unknown thread",
        "POST",
        "/api/desk/threads/nope/messages",
        OLGA,
        b'{"text": "hi", "as": "operator"}',
        404,
        "thread_not_found",
    ),
    (
        "share through another harness",
        "POST",
        "/api/billing/threads/case-42/members",
        ADA,
        b'{"userId": "eve", "role": "member"}',
        409,
        "wrong_harness",
    ),
    ("thread id too long", "GET", "/api/desk/threads/" + "a" * 201, ADA, None, 400, "invalid_id"),
    (
        "unknown thread answer",
        "POST",
        "/api/desk/threads/nope/answer",
        OLGA,
        b'{"questionId": "w", "value": {"resume": true}}',
        404,
        "thread_not_found",
    ),
    (
        "unknown wait",
        "POST",
        f"{DESK}/answer",
        OLGA,
        b'{"questionId": "nowait", "value": {"resume": true}}',
        404,
        "wait_not_found",
    ),
    ("unknown harness", "GET", "/api/nope/threads/case-42", ADA, None, 404, "unknown_harness"),
    ("wrong harness", "GET", "/api/billing/threads/case-42", ADA, None, 409, "wrong_harness"),
    ("bad thread id", "GET", "/api/desk/threads/a%20b", ADA, None, 400, "invalid_id"),
    (
        "transfer to unknown harness",
        "POST",
        f"{DESK}/transfer",
        ADA,
        b'{"to": "nope"}',
        404,
        "unknown_harness",
    ),
    ("no user", "GET", DESK, {}, None, 401, "unauthenticated"),
    ("unknown token", "GET", DESK, {"authorization": "Bearer nope"}, None, 401, "unauthenticated"),
    ("other tenant", "GET", DESK, BOB, None, 404, "thread_not_found"),
    (
        "member as operator",
        "POST",
        f"{DESK}/messages",
        ADA,
        b'{"text": "x", "as": "operator"}',
        403,
        "forbidden",
    ),
    ("unknown route", "GET", "/api/desk/nothing/here", ADA, None, 404, "route_not_found"),
    ("deep nesting", "POST", f"{DESK}/messages", ADA, DEEP, 400, "body_too_deep"),
    ("deep nesting in a value", "POST", f"{DESK}/answer", OLGA, DEEP_VALUE, 400, "body_too_deep"),
    ("deep nesting without a login", "POST", f"{DESK}/members", {}, DEEP, 401, "unauthenticated"),
    (
        "malformed body without a login",
        "POST",
        f"{DESK}/messages",
        {},
        b'{"text": ',
        401,
        "unauthenticated",
    ),
    (
        "wide array",
        "POST",
        f"{DESK}/messages",
        ADA,
        b'{"text": "x", "files": [' + b",".join([b"1"] * 1001) + b"]}",
        400,
        "body_too_wide",
    ),
    (
        "duplicate key",
        "POST",
        f"{DESK}/messages",
        ADA,
        b'{"text": "hi", "text": "there"}',
        400,
        "duplicate_key",
    ),
    ("NaN", "POST", f"{DESK}/answer", OLGA, b'{"questionId": "w", "value": NaN}', 400, NUM),
    (
        "Infinity",
        "POST",
        f"{DESK}/answer",
        OLGA,
        b'{"questionId": "w", "value": -Infinity}',
        400,
        NUM,
    ),
    (
        "float overflow",
        "POST",
        f"{DESK}/answer",
        OLGA,
        b'{"questionId": "w", "value": 1e999}',
        400,
        NUM,
    ),
    (
        "huge integer",
        "POST",
        f"{DESK}/answer",
        OLGA,
        b'{"questionId": "w", "value": ' + b"9" * 5000 + b"}",
        400,
        NUM,
    ),
    ("lone surrogate", "POST", f"{DESK}/messages", ADA, b'{"text": "a\\ud800b"}', 400, STR),
    ("NUL character", "POST", f"{DESK}/messages", ADA, b'{"text": "a\\u0000b"}', 400, STR),
    (
        "text/plain body",
        "POST",
        f"{DESK}/messages",
        {**ADA, "content-type": "text/plain"},
        b'{"text": "hi"}',
        415,
        "unsupported_media_type",
    ),
    (
        "form body",
        "POST",
        f"{DESK}/members",
        {**ADA, "content-type": "application/x-www-form-urlencoded"},
        b"userId=eve&role=member",
        415,
        "unsupported_media_type",
    ),
    (
        "no content type",
        "POST",
        f"{DESK}/messages",
        {**ADA, "content-type": ""},
        b'{"text": "hi"}',
        415,
        "unsupported_media_type",
    ),
    (
        "optional body as text",
        "POST",
        f"{DESK}/continue",
        {**ADA, "content-type": "text/plain"},
        b"{}",
        415,
        "unsupported_media_type",
    ),
    ("wrong method", "DELETE", DESK, ADA, None, 405, "method_not_allowed"),
    (
        "event id not a number",
        "GET",
        f"{DESK}/events",
        {**OLGA, "last-event-id": "abc"},
        None,
        400,
        "bad_event_id",
    ),
    (
        "event id from the future",
        "GET",
        f"{DESK}/events?lastEventId=99999",
        OLGA,
        None,
        400,
        "bad_event_id",
    ),
    (
        "event id negative",
        "GET",
        f"{DESK}/events",
        {**OLGA, "last-event-id": "-1"},
        None,
        400,
        "bad_event_id",
    ),
]


@pytest.fixture
async def case(http: httpx.AsyncClient) -> httpx.AsyncClient:
    await start_case(http)
    return http


@pytest.mark.parametrize(
    ("method", "path", "headers", "body", "status", "code"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
async def test_bad_request_gets_4xx_with_its_code_and_changes_nothing(
    case: httpx.AsyncClient,
    demo: SupportDemo,
    method: str,
    path: str,
    headers: dict[str, str],
    body: bytes | None,
    status: int,
    code: str,
) -> None:
    async def threads() -> list[str]:
        return [e.thread_id for e in await list_entries(demo.host.persistence, "acme")]

    before = (await case.get(DESK, headers=OLGA)).json(), await threads()
    if body is not None:
        headers = {**JSON, **headers}  # a case names another content type (or "") itself
        if not headers["content-type"]:
            del headers["content-type"]
    r = await case.request(method, path, content=body, headers=headers)
    assert (r.status_code, r.json()["code"]) == (status, code), r.text
    assert r.json()["message"]
    assert ((await case.get(DESK, headers=OLGA)).json(), await threads()) == before


async def test_oversized_body_is_413_by_its_declared_length(case: httpx.AsyncClient) -> None:
    big = b'{"text": "' + b"x" * 1_100_000 + b'"}'
    r = await case.post(f"{DESK}/messages", content=big, headers={**ADA, **JSON})
    assert (r.status_code, r.json()["code"]) == (413, "body_too_large")


async def test_oversized_body_is_413_when_streamed_without_a_length(
    case: httpx.AsyncClient,
) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"text": "'
        for _ in range(20):
            yield b"x" * 100_000
        yield b'"}'

    r = await case.post(f"{DESK}/messages", content=chunks(), headers={**ADA, **JSON})
    assert "content-length" not in r.request.headers
    assert (r.status_code, r.json()["code"]) == (413, "body_too_large")
