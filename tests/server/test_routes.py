"""The harness routes over ASGI: each behaviour of the design's HTTP side, on every backend."""

from __future__ import annotations

from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.routing import Mount, Route

from agent_mem_vault.server.support_demo import SupportDemo
from tests.server.support import ADA, BOB, OLGA, PERSON, REFUND, start_case

DESK = "/api/desk/threads/case-42"


async def answer_the_wait(http: httpx.AsyncClient, wait_id: str, value: Any) -> httpx.Response:
    """Olga, the operator, answers the person's wait ``wait_id`` with ``value``."""
    answer = {"questionId": wait_id, "value": value}
    return await http.post(f"{DESK}/answer", json=answer, headers=OLGA)


async def test_send_runs_a_turn_and_billing_answers_in_the_same_turn(
    http: httpx.AsyncClient,
) -> None:
    r = await http.post(f"{DESK}/messages", json={"text": REFUND}, headers=ADA)
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == "completed"
    assert body["text"].startswith("billing:\n")
    assert body["runId"]


async def test_snapshot_gives_each_assistant_message_its_agent(http: httpx.AsyncClient) -> None:
    await http.post(f"{DESK}/messages", json={"text": REFUND}, headers=ADA)
    snap = (await http.get(DESK, headers=ADA)).json()
    assistants = [m for m in snap["messages"] if m["role"] == "assistant"]
    assert assistants[0]["agent"] is None  # the main model's handoff call
    assert assistants[-1]["agent"] == "billing"
    assert snap["activeAgent"] == "billing"
    assert snap["pendingWaits"] == []
    assert int(snap["lastEventId"]) > 0


async def test_handoff_to_a_person_shows_as_a_pending_human_wait(http: httpx.AsyncClient) -> None:
    await start_case(http)
    snap = (await http.get(DESK, headers=OLGA)).json()
    (wait,) = snap["pendingWaits"]
    assert wait["kind"] == "human"
    assert PERSON in wait["message"]
    assert snap["status"] == "paused"


async def test_operator_reply_goes_into_the_transcript_marked_with_the_operator(
    http: httpx.AsyncClient,
) -> None:
    await start_case(http)
    r = await http.post(
        f"{DESK}/messages", json={"text": "Hi, Olga here.", "as": "operator"}, headers=OLGA
    )
    assert r.status_code == 200
    assert r.json()["status"] == "sent"
    last = (await http.get(DESK, headers=ADA)).json()["messages"][-1]
    assert last["role"] == "assistant"
    assert last["metadata"]["harness"]["operator"] == "olga"
    assert last["parts"] == [{"type": "text", "text": "Hi, Olga here."}]


async def test_operator_reply_without_a_human_wait_is_409_no_human_wait(
    http: httpx.AsyncClient,
) -> None:
    await http.post(f"{DESK}/messages", json={"text": REFUND}, headers=ADA)
    await http.post(f"{DESK}/members", json={"userId": "olga", "role": "operator"}, headers=ADA)
    r = await http.post(f"{DESK}/messages", json={"text": "Hi", "as": "operator"}, headers=OLGA)
    assert r.status_code == 409
    assert r.json()["code"] == "no_human_wait"


async def test_the_user_who_waits_cannot_reply_as_the_operator(http: httpx.AsyncClient) -> None:
    await start_case(http)
    r = await http.post(f"{DESK}/messages", json={"text": "me", "as": "operator"}, headers=ADA)
    assert r.status_code == 403
    assert r.json()["code"] == "forbidden"


async def test_answer_hand_back_gives_the_thread_to_that_agent(http: httpx.AsyncClient) -> None:
    wait_id = await start_case(http)
    r = await answer_the_wait(http, wait_id, {"handBack": "main"})
    assert r.status_code == 200, r.text
    snap = (await http.get(DESK, headers=OLGA)).json()
    assert snap["pendingWaits"] == []
    assert snap["activeAgent"] is None


async def test_answer_resume_gives_the_thread_back_to_the_agent_before(
    http: httpx.AsyncClient,
) -> None:
    wait_id = await start_case(http)
    r = await answer_the_wait(http, wait_id, {"resume": True})
    assert r.status_code == 200
    assert (await http.get(DESK, headers=OLGA)).json()["activeAgent"] == "billing"


async def test_answer_with_another_value_is_400_invalid_answer(http: httpx.AsyncClient) -> None:
    wait_id = await start_case(http)
    r = await answer_the_wait(http, wait_id, {"yes": 1})
    assert (r.status_code, r.json()["code"]) == (400, "invalid_answer")


async def test_answer_with_an_unknown_agent_is_404_unknown_agent(http: httpx.AsyncClient) -> None:
    wait_id = await start_case(http)
    r = await answer_the_wait(http, wait_id, {"handBack": "nobody"})
    assert (r.status_code, r.json()["code"]) == (404, "unknown_agent")


async def test_resolve_ends_the_wait(http: httpx.AsyncClient) -> None:
    wait_id = await start_case(http)
    r = await http.post(f"{DESK}/waits/{wait_id}/resolve", headers=OLGA)
    assert r.status_code == 200, r.text
    snap = (await http.get(DESK, headers=OLGA)).json()
    assert (snap["pendingWaits"], snap["activeAgent"]) == ([], "billing")


async def test_cancel_ends_the_wait_and_a_second_cancel_is_409(http: httpx.AsyncClient) -> None:
    wait_id = await start_case(http)
    assert (await http.post(f"{DESK}/waits/{wait_id}/cancel", json={}, headers=OLGA)).is_success
    again = await http.post(f"{DESK}/waits/{wait_id}/cancel", headers=OLGA)
    assert (again.status_code, again.json()["code"]) == (409, "wait_closed")


async def test_held_message_waits_for_continue(http: httpx.AsyncClient) -> None:
    wait_id = await start_case(http)
    held = await http.post(f"{DESK}/messages", json={"text": "Hello?"}, headers=ADA)
    assert held.json()["status"] == "held"
    await answer_the_wait(http, wait_id, {"handBack": "billing"})

    turn = await http.post(f"{DESK}/continue", json={"inputId": "go-on-1"}, headers=ADA)
    assert turn.status_code == 200, turn.text
    assert turn.json()["status"] == "completed"
    after = (await http.get(DESK, headers=ADA)).json()
    # A retry with the same input id (a dropped answer, say) runs no second turn.
    again = await http.post(f"{DESK}/continue", json={"inputId": "go-on-1"}, headers=ADA)
    assert again.json() == turn.json()
    assert (await http.get(DESK, headers=ADA)).json() == after


async def test_share_needs_the_share_action(http: httpx.AsyncClient) -> None:
    await start_case(http)
    r = await http.post(f"{DESK}/members", json={"userId": "eve", "role": "member"}, headers=OLGA)
    assert (r.status_code, r.json()["code"]) == (403, "forbidden")


async def test_waiting_lists_only_threads_the_operator_may_answer(
    http: httpx.AsyncClient,
) -> None:
    await start_case(http)
    await http.post("/api/desk/threads/quiet/messages", json={"text": "hello"}, headers=ADA)
    olga = (await http.get("/api/desk/waiting", headers=OLGA)).json()
    assert [row["threadId"] for row in olga] == ["case-42"]
    assert olga[0]["activeAgent"] == "billing"
    # The user who waits is no operator, and another tenant sees nothing.
    assert (await http.get("/api/desk/waiting", headers=ADA)).json() == []
    assert (await http.get("/api/desk/waiting", headers=BOB)).json() == []


async def test_transfer_makes_a_thread_of_the_target_harness_once(
    http: httpx.AsyncClient,
) -> None:
    await start_case(http)
    body = {"to": "billing", "note": "Refund for order 42.", "transferId": "refund-case-42"}
    first = await http.post(f"{DESK}/transfer", json=body, headers=ADA)
    assert first.status_code == 200, first.text
    target = first.json()["threadId"]
    assert first.json()["harness"] == "billing"
    again = await http.post(f"{DESK}/transfer", json=body, headers=ADA)
    assert again.json()["threadId"] == target
    snap = (await http.get(f"/api/billing/threads/{target}", headers=ADA)).json()
    assert snap["messages"][0]["parts"][0]["text"] == "Refund for order 42."


async def test_move_to_route_answers_the_target_thread_id_as_text(
    http: httpx.AsyncClient,
) -> None:
    await start_case(http)
    r = await http.post(
        "/api/desk/move-to-billing?threadId=case-42&transferId=refund-case-42"
        "&note=Refund%20for%20order%2042.&messages=none",
        headers=ADA,
    )
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain")
    follow = await http.post(
        f"/api/billing/threads/{r.text}/messages",
        json={"text": "Hi, I am still here."},
        headers=ADA,
    )
    assert follow.status_code == 200


async def test_move_to_without_thread_id_is_400(http: httpx.AsyncClient) -> None:
    r = await http.post("/api/desk/move-to-billing", headers=ADA)
    assert (r.status_code, r.json()["code"]) == (400, "missing_thread_id")


async def test_me_and_harnesses_describe_the_app(http: httpx.AsyncClient) -> None:
    assert (await http.get("/api/me", headers=OLGA)).json() == {"id": "olga", "tenantId": "acme"}
    assert (await http.get("/api/me")).json() == {"id": None, "tenantId": None}
    harnesses = (await http.get("/api/harnesses", headers=OLGA)).json()
    assert [(h["key"], h["name"]) for h in harnesses] == [
        ("desk", "acme/desk"),
        ("billing", "acme/billing"),
    ]
    assert harnesses[0]["agents"] == ["billing"]
    assert harnesses[0]["allowHandoffToHuman"] is True


async def test_openapi_document_describes_every_route(
    http: httpx.AsyncClient, demo: SupportDemo
) -> None:
    doc = (await http.get("/openapi.json")).json()
    assert doc["openapi"].startswith("3.1")
    served = set()
    for route in demo.app.routes:
        if isinstance(route, Route) and route.path.startswith("/api/"):
            path = route.path.replace("{thread_id}", "{threadId}").replace("{wait_id}", "{waitId}")
            served |= {(path, m.lower()) for m in route.methods or () if m != "HEAD"}
    documented = {(path, method) for path, ops in doc["paths"].items() for method in ops}
    assert served == documented
    for path, method in documented:
        operation = doc["paths"][path][method]
        assert operation["summary"]
        # Every route that finds a user says so, and a thread's routes list each rejection.
        expected = {"401"}
        if "{threadId}" in path:
            expected |= {"400", "401", "403", "404", "409"}
        assert expected <= set(operation["responses"]), (path, method)
        for status, answer in operation["responses"].items():
            if status != "200":
                schema = answer["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/ErrorBody"}
    send = doc["paths"]["/api/{harness}/threads/{threadId}/messages"]["post"]
    assert "413" in send["responses"]
    assert doc["components"]["schemas"]["SendBody"]["properties"]["as"]["enum"] == [
        "user",
        "operator",
    ]


async def test_console_page_is_served_by_the_same_app(http: httpx.AsyncClient) -> None:
    root = await http.get("/")
    assert root.status_code == 307
    page = await http.get("/console/")
    assert page.status_code == 200
    assert "Operator console" in page.text
    assert (await http.get("/console/console.js")).status_code == 200


async def test_app_mounts_under_a_prefix_with_its_console(demo: SupportDemo) -> None:
    outer = Starlette(routes=[Mount("/support", app=demo.app)])
    transport = httpx.ASGITransport(app=outer)
    async with httpx.AsyncClient(transport=transport, base_url="http://outer.test") as http:
        r = await http.post(
            "/support/api/desk/threads/case-42/messages", json={"text": REFUND}, headers=ADA
        )
        assert r.status_code == 200
        root = await http.get("/support/")
        assert root.headers["location"] == "/support/console/"
        assert (await http.get("/support/console/")).status_code == 200
        assert (await http.get("/support/nope")).json()["code"] == "route_not_found"
        script = (await http.get("/support/console/common.js")).text
    # The console calls the API relative to where it is served.
    assert '"../api/' in script
    assert '"/api/' not in script
