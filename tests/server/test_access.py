"""Every route checks the user's action: no user, another tenant, a user without the role.

The app here serves the demo's harnesses with two more people of Ada's
tenant: Carl, who is no member of the case, and Mia, a plain member. Each
rejection must carry its code and leave every thread as it was.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from agent_mem_vault.harness import HarnessHost
from agent_mem_vault.harness.access import Access, User
from agent_mem_vault.harness.index import list_entries
from agent_mem_vault.server import create_harness_app
from agent_mem_vault.server.support_demo import SupportDemo
from tests.server.support import ADA, BOB, OLGA, start_case

CARL = {"authorization": "Bearer token-carl"}
MIA = {"authorization": "Bearer token-mia"}
NOBODY: dict[str, str] = {}
USERS = {
    "token-ada": User("ada", "acme"),
    "token-olga": User("olga", "acme"),
    "token-bob": User("bob", "globex"),
    "token-carl": User("carl", "acme"),
    "token-mia": User("mia", "acme"),
}

CASE = "/api/desk/threads/case-42"
WAIT = "{wait}"  # replaced by the case's open wait id

# (route, method, path, body)
ROUTES: dict[str, tuple[str, str, Any]] = {
    "harnesses": ("GET", "/api/harnesses", None),
    "waiting": ("GET", "/api/desk/waiting", None),
    "snapshot": ("GET", CASE, None),
    "send": ("POST", f"{CASE}/messages", {"text": "hello"}),
    "operator reply": ("POST", f"{CASE}/messages", {"text": "hi", "as": "operator"}),
    "answer": ("POST", f"{CASE}/answer", {"questionId": WAIT, "value": {"resume": True}}),
    "resolve": ("POST", f"{CASE}/waits/{WAIT}/resolve", {}),
    "cancel": ("POST", f"{CASE}/waits/{WAIT}/cancel", {}),
    "continue": ("POST", f"{CASE}/continue", {}),
    "share": ("POST", f"{CASE}/members", {"userId": "eve", "role": "member"}),
    "transfer": ("POST", f"{CASE}/transfer", {"to": "billing", "note": "n"}),
    "move-to": ("POST", "/api/desk/move-to-billing?threadId=case-42", None),
    "events": ("GET", f"{CASE}/events", None),
}

UNAUTHENTICATED = (401, "unauthenticated")
NOT_FOUND = (404, "thread_not_found")
FORBIDDEN = (403, "forbidden")

# (route, who, headers, expected status and code); a list route answers 200 with nothing in it.
MATRIX: list[tuple[str, str, dict[str, str], tuple[int, Any]]] = [
    *[(route, "no user", NOBODY, UNAUTHENTICATED) for route in ROUTES],
    ("waiting", "another tenant", BOB, (200, [])),
    ("waiting", "no member", CARL, (200, [])),
    ("waiting", "a member", MIA, (200, [])),
    ("waiting", "the owner", ADA, (200, [])),
    *[
        (route, "another tenant", BOB, NOT_FOUND)
        for route in ROUTES
        if route not in ("harnesses", "waiting", "send")  # a send starts Bob's own thread
    ],
    *[
        (route, "no member", CARL, FORBIDDEN)
        for route in ROUTES
        if route not in ("harnesses", "waiting")
    ],
    ("operator reply", "the owner", ADA, FORBIDDEN),
    ("operator reply", "a member", MIA, FORBIDDEN),
    *[
        (route, who, headers, FORBIDDEN)
        for route in ("answer", "resolve", "cancel")
        for who, headers in (("the owner", ADA), ("a member", MIA))
    ],
    ("send", "the operator", OLGA, FORBIDDEN),
    ("share", "the operator", OLGA, FORBIDDEN),
    ("share", "a member", MIA, FORBIDDEN),
    ("transfer", "a member", MIA, FORBIDDEN),
    ("move-to", "a member", MIA, FORBIDDEN),
]


@pytest.fixture
async def http(demo: SupportDemo) -> AsyncIterator[httpx.AsyncClient]:
    assert demo.host.access is not None
    host = HarnessHost(
        persistence=demo.host.persistence,
        access=Access(
            get_user=lambda request: USERS.get(
                (request.headers.get("authorization") or "").removeprefix("Bearer ")
            ),
            rules=demo.host.access.rules,  # the demo's: operators may also transfer
        ),
    )
    app = create_harness_app(host, {"desk": demo.desk, "billing": demo.billing_desk})
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://desk.test"
    ) as client:
        yield client


async def everything(http: httpx.AsyncClient, demo: SupportDemo) -> Any:
    """All that a rejection must leave alone: the case as each person sees it, and the index."""
    persistence = demo.host.persistence
    return (
        (await http.get(CASE, headers=ADA)).json(),
        [e.to_json() for e in await list_entries(persistence, "acme")],
        [e.to_json() for e in await list_entries(persistence, "globex")],
    )


@pytest.mark.parametrize(
    ("route", "headers", "expected"),
    [(route, headers, expected) for route, _, headers, expected in MATRIX],
    ids=[f"{route} by {who}" for route, who, _, _ in MATRIX],
)
async def test_every_route_checks_the_users_action(
    http: httpx.AsyncClient,
    demo: SupportDemo,
    route: str,
    headers: dict[str, str],
    expected: tuple[int, Any],
) -> None:
    wait_id = await start_case(http)
    r = await http.post(f"{CASE}/members", json={"userId": "mia", "role": "member"}, headers=ADA)
    assert r.status_code == 200, r.text
    before = await everything(http, demo)
    method, path, body = ROUTES[route]
    if isinstance(body, dict) and body.get("questionId") == WAIT:
        body = {**body, "questionId": wait_id}
    r = await http.request(method, path.replace(WAIT, wait_id), json=body, headers=headers)
    if expected[0] == 200:
        assert (r.status_code, r.json()) == expected, r.text
    else:
        assert (r.status_code, r.json()["code"]) == expected, r.text
        assert r.json()["message"]
    assert await everything(http, demo) == before


async def test_401_403_404_409_bodies_carry_the_rejection_code(http: httpx.AsyncClient) -> None:
    await start_case(http)
    answers = {
        401: await http.get(CASE),
        403: await http.get(CASE, headers=CARL),
        404: await http.get("/api/desk/threads/no-such-case", headers=ADA),
        409: await http.get("/api/billing/threads/case-42", headers=ADA),
    }
    codes = {status: r.json()["code"] for status, r in answers.items()}
    assert codes == {
        401: "unauthenticated",
        403: "forbidden",
        404: "thread_not_found",
        409: "wrong_harness",
    }
    for status, r in answers.items():
        assert r.status_code == status
        assert r.headers["content-type"] == "application/json"
        assert set(r.json()) <= {"code", "message", "details"}
        assert len(r.json()["message"]) > 20, r.json()  # says what was wrong, in words
