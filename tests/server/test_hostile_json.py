"""Hostile JSON against every route: never a 500, the login first, then the content type.

Hypothesis writes bodies as bytes, as a hostile client would: nesting far
deeper than Python's recursion limit, collections wider than the limit, huge
and non-finite numbers, odd unicode (lone surrogates, NUL, non-characters,
invalid UTF-8), duplicate keys, and ordinary JSON values for contrast; sent
with and without a login, as JSON or as something else. Whatever comes, the
answer is a JSON error body with a code (or a success), never a 500; without
a login it is 401 before the body is looked at; with one, a body that is not
sent as JSON is 415.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_mem_vault.server.support_demo import SupportDemo, build_support_demo
from agent_mem_vault.store import sqlite_persistence
from tests.server.support import ADA, OLGA, start_case

DESK = "/api/desk/threads/case-42"
ROUTES = [
    ("POST", f"{DESK}/messages"),
    ("POST", f"{DESK}/answer"),
    ("POST", f"{DESK}/members"),
    ("POST", f"{DESK}/transfer"),
    ("POST", f"{DESK}/continue"),
    ("POST", f"{DESK}/waits/w1/resolve"),
    ("POST", f"{DESK}/waits/w1/cancel"),
    ("POST", "/api/desk/move-to-billing?threadId=case-42"),
    ("GET", DESK),
    ("GET", "/api/desk/waiting"),
    ("GET", "/api/harnesses"),
]
OPTIONAL_BODY = ("/continue", "/resolve", "/cancel")
LOGINS = st.sampled_from([ADA, OLGA, {}, {"authorization": "Bearer nope"}])
CONTENT_TYPES = st.sampled_from(
    [
        "application/json",
        "application/json; charset=utf-8",
        "text/plain",
        "application/x-www-form-urlencoded",
        "",
        "application/jsonx",
        "*/*",
    ]
)

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=50),
    lambda children: (
        st.lists(children, max_size=5)
        | st.dictionaries(
            st.sampled_from(["text", "as", "files", "questionId", "value", "userId", "role", "to"])
            | st.text(max_size=8),
            children,
            max_size=5,
        )
    ),
    max_leaves=20,
)


@st.composite
def deep(draw: st.DrawFn) -> bytes:
    levels = draw(st.integers(min_value=20, max_value=5000))
    opener, closer = draw(st.sampled_from([(b"[", b"]"), (b'{"a":', b"}")]))
    inner = (
        b"[" * levels + b"]" * levels
        if opener == b"["
        else opener * levels + b"1" + closer * levels
    )
    if draw(st.booleans()):
        inner = inner[: draw(st.integers(min_value=0, max_value=len(inner)))]  # cut short
    return b'{"text": "x", "value": ' + inner + b"}"


@st.composite
def wide(draw: st.DrawFn) -> bytes:
    count = draw(st.integers(min_value=900, max_value=20_000))
    if draw(st.booleans()):
        return b'{"files": [' + b",".join([b"0"] * count) + b"]}"
    return b"{" + b",".join(b'"k%d": 0' % i for i in range(count)) + b"}"


NUMBERS = st.sampled_from(
    [b"NaN", b"Infinity", b"-Infinity", b"1e999", b"-1e999", b"1" * 5000, b"-0", b"1e-999"]
) | st.integers(min_value=19, max_value=10_000).map(lambda n: b"9" * n)


@st.composite
def odd_strings(draw: st.DrawFn) -> bytes:
    escaped = draw(
        st.lists(
            st.sampled_from(
                ["\\ud800", "\\udfff", "\\ud83d\\ude00", "\\u0000", "\\uffff", "\\ufeff", "\\u202e"]
            )
            | st.text(max_size=5).map(lambda t: json.dumps(t)[1:-1]),
            max_size=6,
        )
    )
    body = b'{"text": "' + "".join(escaped).encode() + b'"}'
    if draw(st.booleans()):
        body = body.replace(b"x", b"\xff\xfe")  # maybe invalid UTF-8
    return body


@st.composite
def duplicate_keys(draw: st.DrawFn) -> bytes:
    key = draw(st.sampled_from(["text", "userId", "to", "questionId", "role"]))
    a, b = draw(json_values), draw(json_values)
    return f'{{"{key}": {json.dumps(a)}, "{key}": {json.dumps(b)}}}'.encode()


bodies = st.one_of(
    deep(),
    wide(),
    NUMBERS.map(lambda n: b'{"questionId": "w1", "value": ' + n + b"}"),
    odd_strings(),
    duplicate_keys(),
    json_values.map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=64),
)


@pytest.fixture
async def desk(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    demo: SupportDemo = build_support_demo(sqlite_persistence(tmp_path / "hostile.db"))
    transport = httpx.ASGITransport(app=demo.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://desk.test") as client:
        await start_case(client)
        yield client
    await demo.host.persistence.close()


@pytest.mark.parametrize(("method", "path"), ROUTES, ids=[f"{m} {p}" for m, p in ROUTES])
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(body=bodies, login=LOGINS, content_type=CONTENT_TYPES)
async def test_hostile_json_never_gets_a_500_and_login_comes_first(
    desk: httpx.AsyncClient,
    method: str,
    path: str,
    body: bytes,
    login: dict[str, str],
    content_type: str,
) -> None:
    headers = {**login, **({"content-type": content_type} if content_type else {})}
    r = await desk.request(method, path, content=body, headers=headers)
    assert r.status_code < 500, r.text
    if r.status_code >= 400:
        answer = r.json()
        assert answer["code"] and answer["message"], r.text
    if login.get("authorization") not in (ADA["authorization"], OLGA["authorization"]):
        assert (r.status_code, r.json()["code"]) == (401, "unauthenticated"), r.text
    elif (
        method == "POST"
        and "move-to" not in path
        and not content_type.startswith("application/json")
        and (body or not path.endswith(OPTIONAL_BODY))
    ):
        assert (r.status_code, r.json()["code"]) == (415, "unsupported_media_type"), r.text
