"""Access: users and tenants, owners and shared roles, every action checked on every call."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from agent_mem_vault.core.errors import AccessDeniedError, AgentMemVaultError, InvalidInputError
from agent_mem_vault.harness import (
    Access,
    Endpoint,
    Envelope,
    Harness,
    HarnessHost,
    Routing,
    Session,
    User,
    define_harness,
    members_only,
)
from agent_mem_vault.harness.testing import ScriptedModel, tool_call

from .conftest import HostFactory
from .support import billing_agent, support_harness

ADA = User(id="ada", tenant_id="acme")  # owner
MIA = User(id="mia", tenant_id="acme")  # member
OLGA = User(id="olga", tenant_id="acme")  # operator
SAM = User(id="sam", tenant_id="acme")  # same tenant, no role
EVE = User(id="eve", tenant_id="globex")  # another tenant
USERS = {"Bearer ada": ADA, "Bearer mia": MIA, "Bearer olga": OLGA}


def access(**overrides: Any) -> Access:
    return Access(get_user=lambda request: USERS.get(request), rules=members_only(**overrides))


def desk_harness() -> Harness:
    main = ScriptedModel([tool_call("handoff", {"to": {"human": True}, "note": "person"})])
    return support_harness(
        main,
        [billing_agent(ScriptedModel([]))],
        name="acme/desk",
        routing=Routing(allow_handoff_to_human=True),
    )


BILLING_DESK = define_harness(name="acme/billing", model=ScriptedModel([]))


async def paused_case(host: HarnessHost, harness: Harness) -> None:
    """Ada's thread ``case``, shared with Mia (member) and Olga (operator), paused for a person."""
    session = await host.open(harness, thread_id="case", user=ADA)
    await host.sessions.share(thread_id="case", user_id="mia", role="member", user=ADA)
    await host.sessions.share(thread_id="case", user_id="olga", role="operator", user=ADA)
    assert (await session.send("A person please")).status == "interrupted"


Act = Callable[[HarnessHost, Harness, User | None], Awaitable[Any]]


def _session(host: HarnessHost, harness: Harness, user: User | None) -> Session:
    return Session(host.threads, harness, user.tenant_id if user else "acme", "case", user)


async def _read(host: HarnessHost, harness: Harness, user: User | None) -> Any:
    return await _session(host, harness, user).snapshot()


async def _send(host: HarnessHost, harness: Harness, user: User | None) -> Any:
    return await _session(host, harness, user).send("more info")


async def _operator(host: HarnessHost, harness: Harness, user: User | None) -> Any:
    return await _session(host, harness, user).send("Hi, Olga here.", as_="operator")


async def _transfer(host: HarnessHost, harness: Harness, user: User | None) -> Any:
    return await host.transfer(
        from_=Endpoint(harness, "case"), to=Endpoint(BILLING_DESK), envelope=Envelope(), user=user
    )


async def _share(host: HarnessHost, harness: Harness, user: User | None) -> Any:
    return await host.sessions.share(thread_id="case", user_id="zed", role="member", user=user)


ACTIONS: dict[str, Act] = {
    "read": _read,
    "send": _send,
    "operator": _operator,
    "transfer": _transfer,
    "share": _share,
}
ACTORS: dict[str, User | None] = {
    "owner": ADA,
    "member": MIA,
    "operator": OLGA,
    "no role": SAM,
    "other tenant": EVE,
    "no user": None,
}
OK, NO, GONE, ANON = "ok", "forbidden", "thread_not_found", "unauthenticated"
MATRIX = {
    #               read  send  operator transfer share
    "owner":        (OK,  OK,   NO,      OK,      OK),
    "member":       (OK,  OK,   NO,      NO,      NO),
    "operator":     (OK,  NO,   OK,      NO,      NO),
    "no role":      (NO,  NO,   NO,      NO,      NO),
    "other tenant": (GONE, GONE, GONE,   GONE,    GONE),
    "no user":      (ANON, ANON, ANON,   ANON,    ANON),
}  # fmt: skip
CASES = [(actor, action, MATRIX[actor][i]) for actor in ACTORS for i, action in enumerate(ACTIONS)]


@pytest.mark.parametrize(("actor", "action", "expected"), CASES)
async def test_access_matrix_under_members_only(
    make_host: HostFactory, actor: str, action: str, expected: str
) -> None:
    host = make_host(access=access())
    harness = desk_harness()
    await paused_case(host, harness)
    before = await host.persistence.last_seq("harness/acme/case")

    try:
        await ACTIONS[action](host, harness, ACTORS[actor])
        outcome = OK
    except AgentMemVaultError as exc:
        outcome = exc.code

    assert outcome == expected
    if expected != OK:
        assert await host.persistence.last_seq("harness/acme/case") == before


async def test_the_user_who_opens_a_new_thread_is_its_owner(make_host: HostFactory) -> None:
    host = make_host(access=access())
    session = await host.open(desk_harness(), thread_id="new", user=MIA)

    snapshot = await session.snapshot()

    assert snapshot.owner == "mia"
    assert dict(snapshot.members) == {"mia": "owner"}


async def test_share_adds_a_member_with_a_role(make_host: HostFactory) -> None:
    host = make_host(access=access())
    harness = desk_harness()
    await host.open(harness, thread_id="case", user=ADA)

    await host.sessions.share(thread_id="case", user_id="olga", role="operator", user=ADA)

    snapshot = await (await host.open(harness, thread_id="case", user=OLGA)).snapshot()
    assert dict(snapshot.members) == {"ada": "owner", "olga": "operator"}


async def test_share_cannot_take_ownership_or_demote_the_owner(make_host: HostFactory) -> None:
    host = make_host(access=access())
    await host.open(desk_harness(), thread_id="case", user=ADA)

    with pytest.raises(InvalidInputError):
        await host.sessions.share(thread_id="case", user_id="mia", role="owner", user=ADA)
    with pytest.raises(InvalidInputError):
        await host.sessions.share(thread_id="case", user_id="ada", role="member", user=ADA)


async def test_members_only_can_give_the_operator_action_to_the_owner(
    make_host: HostFactory,
) -> None:
    host = make_host(access=access(operator={"roles": ["owner", "operator"]}))
    harness = desk_harness()
    await paused_case(host, harness)

    result = await _operator(host, harness, ADA)

    assert result.status == "sent"


async def test_tenants_never_see_each_others_threads(make_host: HostFactory) -> None:
    host = make_host(access=access())
    harness = desk_harness()
    await paused_case(host, harness)

    eves = await host.open(harness, thread_id="case", user=EVE)  # her own, new thread

    assert (await eves.snapshot()).messages == ()
    assert [s.thread_id for s in await host.sessions.list(user=EVE)] == ["case"]
    assert (await eves.snapshot()).owner == "eve"
    adas = await host.open(harness, thread_id="case", user=ADA)
    assert len((await adas.snapshot()).messages) == 3


async def test_sessions_list_shows_threads_waiting_for_a_person_that_the_operator_may_read(
    make_host: HostFactory,
) -> None:
    host = make_host(access=access())
    harness = desk_harness()
    await paused_case(host, harness)
    await host.open(harness, thread_id="other", user=ADA)

    waiting = await host.sessions.list(user=OLGA, waiting_for_human=True)
    adas = await host.sessions.list(user=ADA)

    assert [s.thread_id for s in waiting] == ["case"]
    assert sorted(s.thread_id for s in adas) == ["case", "other"]


async def test_get_user_of_request_uses_access_get_user(make_host: HostFactory) -> None:
    async def get_user(request: Any) -> User | None:
        return USERS.get(request)

    host = make_host(access=Access(get_user=get_user))

    assert await host.get_user_of_request("Bearer olga") == OLGA
    assert await host.get_user_of_request("Bearer nobody") is None


async def test_members_only_rejects_an_unknown_action() -> None:
    with pytest.raises(InvalidInputError):
        members_only(delete={"roles": ["owner"]})


async def test_opening_a_thread_without_read_is_forbidden(make_host: HostFactory) -> None:
    host = make_host(access=access())
    harness = desk_harness()
    await host.open(harness, thread_id="case", user=ADA)

    with pytest.raises(AccessDeniedError):
        await host.open(harness, thread_id="case", user=SAM)


async def test_get_user_may_return_the_seeds_mapping_shape(make_host: HostFactory) -> None:
    host = make_host(access=Access(get_user=lambda r: {"id": "ada", "tenantId": "acme"}))

    assert await host.get_user_of_request("anything") == User(id="ada", tenant_id="acme")


async def test_get_user_returning_something_else_is_a_clear_error(make_host: HostFactory) -> None:
    def not_a_user(request: object) -> Any:
        return "ada"  # what the types refuse, as a caller without them might

    host = make_host(access=Access(get_user=not_a_user))

    with pytest.raises(InvalidInputError, match="return a User"):
        await host.get_user_of_request("anything")
