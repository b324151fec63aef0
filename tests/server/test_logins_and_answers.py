"""Logins the app refuses, answers of the wrong shape, and what a customer handed to a person reads.

The real ASGI app of the support desk, driven over httpx, on every backend.
"""

from __future__ import annotations

import httpx
import pytest

from agent_mem_vault.server.bridge import HANDED_TO_PERSON, HELD_FOR_PERSON
from agent_mem_vault.server.support_demo import SupportDemo

from .support import ADA, OLGA, PERSON, REFUND

DESK = "/api/desk/threads/case-1"


async def test_me_without_a_login_is_anonymous_and_with_one_is_its_user(
    http: httpx.AsyncClient,
) -> None:
    assert (await http.get("/api/me")).json() == {"id": None, "tenantId": None}
    assert (await http.get("/api/me", headers=ADA)).json() == {"id": "ada", "tenantId": "acme"}
    # The scheme is matched without regard to case, as HTTP asks.
    lower = await http.get("/api/me", headers={"authorization": "bearer token-ada"})
    assert lower.json()["id"] == "ada"


@pytest.mark.parametrize("token", ["nope", "token-ad", "token-ada-and-more"])
async def test_me_with_a_wrong_token_is_401_not_an_anonymous_user(
    http: httpx.AsyncClient, token: str
) -> None:
    r = await http.get("/api/me", headers={"authorization": f"Bearer {token}"})
    assert r.status_code == 401, r.text
    assert r.json()["code"] == "unauthenticated"
    assert "match no user" in r.json()["message"]


@pytest.mark.parametrize(
    ("header", "said"),
    [
        ("token-ada", "no scheme"),
        ("Basic YWRhOnNlY3JldA==", "the scheme 'Basic'"),
        ("Token token-ada", "the scheme 'Token'"),
        ("Bearer", "no scheme"),
    ],
)
@pytest.mark.parametrize("path", ["/api/me", "/api/harnesses", DESK])
async def test_an_authorization_header_without_the_bearer_scheme_is_401_naming_bearer(
    http: httpx.AsyncClient, header: str, said: str, path: str
) -> None:
    r = await http.get(path, headers={"authorization": header})
    assert r.status_code == 401, r.text
    body = r.json()
    assert body["code"] == "bad_auth_scheme"
    assert said in body["message"]
    assert "Authorization: Bearer <token>" in body["message"]
    assert body["details"] == {"expected": "Bearer"}


async def test_a_customer_handed_to_a_person_is_told_so_in_the_reply(
    http: httpx.AsyncClient,
) -> None:
    await http.post(f"{DESK}/messages", json={"text": REFUND}, headers=ADA)
    r = await http.post(f"{DESK}/messages", json={"text": PERSON}, headers=ADA)
    assert r.status_code == 200, r.text
    turn = r.json()
    assert turn["status"] == "interrupted"
    assert turn["message"] == HANDED_TO_PERSON
    # The demo's model says it in its own words too, and they are in the transcript.
    assert "handing you to a person" in turn["text"]
    snap = (await http.get(DESK, headers=ADA)).json()
    said = [
        part["text"]
        for message in snap["messages"]
        if message["role"] == "assistant"
        for part in message["parts"]
        if part.get("type") == "text"
    ]
    assert "handing you to a person" in said[-1]
    assert [w["kind"] for w in snap["pendingWaits"]] == ["human"]
    # A message while the person has the thread is kept, and the reply says so.
    held = (await http.post(f"{DESK}/messages", json={"text": "Hello?"}, headers=ADA)).json()
    assert (held["status"], held["text"], held["message"]) == ("held", "", HELD_FOR_PERSON)


@pytest.mark.parametrize("hand_back", [5, None, ["billing"], {"agent": "billing"}, True])
async def test_a_hand_back_that_is_not_a_string_is_400_invalid_answer_and_changes_nothing(
    http: httpx.AsyncClient, demo: SupportDemo, hand_back: object
) -> None:
    await http.post(f"{DESK}/messages", json={"text": PERSON}, headers=ADA)
    share = {"userId": "olga", "role": "operator"}
    assert (await http.post(f"{DESK}/members", json=share, headers=ADA)).status_code == 200
    before = (await http.get(DESK, headers=OLGA)).json()
    wait = before["pendingWaits"][0]["waitId"]
    answer = {"questionId": wait, "value": {"handBack": hand_back}}
    r = await http.post(f"{DESK}/answer", json=answer, headers=OLGA)
    assert r.status_code == 400, r.text
    assert r.json()["code"] == "invalid_answer"
    assert "handBack must be a string" in r.json()["message"]
    assert (await http.get(DESK, headers=OLGA)).json() == before
    # A string that names no agent is still the 404 it was.
    unknown = {"questionId": wait, "value": {"handBack": "nobody"}}
    r = await http.post(f"{DESK}/answer", json=unknown, headers=OLGA)
    assert (r.status_code, r.json()["code"]) == (404, "unknown_agent")


async def test_the_openapi_document_lists_the_401_of_me_and_the_answers_400(
    http: httpx.AsyncClient,
) -> None:
    doc = (await http.get("/openapi.json")).json()
    me = doc["paths"]["/api/me"]["get"]["responses"]
    assert set(me) == {"200", "401"}
    assert "bad_auth_scheme" in me["401"]["description"]
    answer = doc["paths"]["/api/{harness}/threads/{threadId}/answer"]["post"]["responses"]
    assert "invalid_answer" in answer["400"]["description"]
    turn = doc["components"]["schemas"]["TurnResultBody"]["properties"]["message"]
    assert "interrupted" in turn["description"]


async def test_a_100_kb_value_in_a_refused_body_comes_back_as_200_characters(
    http: httpx.AsyncClient,
) -> None:
    huge = "x" * 100_000
    r = await http.post(f"{DESK}/messages", json={"text": "hi", huge: 1}, headers=ADA)
    assert (r.status_code, r.json()["code"]) == (400, "invalid_body")
    assert "x" * 200 + "… (100000 characters)" in r.json()["message"]
    assert "x" * 201 not in r.text
    assert len(r.content) < 1_000
