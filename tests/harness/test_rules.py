"""The pure rules: targets, answers, settled messages, replay, turn text."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from agent_mem_vault.core.errors import InvalidInputError
from agent_mem_vault.harness import (
    HandoffOutsideTurnError,
    InvalidAnswerError,
    Message,
    NotARootAgentError,
    Routing,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    TooManyHandoffsError,
    UnknownAgentError,
    Wait,
    define_agent,
    define_harness,
)
from agent_mem_vault.harness.copies import settled_messages
from agent_mem_vault.harness.handoff import resolve_target, turn_text
from agent_mem_vault.harness.log import replay
from agent_mem_vault.harness.testing import ScriptedModel
from agent_mem_vault.harness.waits import answer_target

BILLING = define_agent(name="billing", description="b", run=lambda ctx: "ok")
HELPER = define_agent(name="helper", description="h", run=lambda ctx: "ok")
HARNESS = define_harness(
    name="acme/support",
    model=ScriptedModel([]),
    agents=[BILLING],
    subagents=[HELPER],
    routing=Routing(allow_handoff_to_human=True),
)
WAIT = Wait(wait_id="w1", kind="human", message="m", run_id="r1", before="billing")


def test_resolve_target_accepts_root_agents_main_and_a_person() -> None:
    assert resolve_target(HARNESS, "billing", source=None, handoffs_so_far=0) == "billing"
    assert resolve_target(HARNESS, "main", source="billing", handoffs_so_far=0) is None
    assert resolve_target(HARNESS, {"human": True}, source=None, handoffs_so_far=9) == {
        "human": True
    }


@pytest.mark.parametrize(
    ("to", "source", "count", "error"),
    [
        ("helper", None, 0, NotARootAgentError),
        ("nobody", None, 0, NotARootAgentError),
        ("billing", "billing", 0, InvalidInputError),
        ("billing", None, 10, TooManyHandoffsError),
        ({"human": "yes"}, None, 0, InvalidInputError),
        (42, None, 0, InvalidInputError),
    ],
)
def test_resolve_target_rejects_with_the_reason(
    to: Any, source: str | None, count: int, error: type[Exception]
) -> None:
    with pytest.raises(error):
        resolve_target(HARNESS, to, source=source, handoffs_so_far=count)


def test_a_harness_without_routing_has_no_handoff_target() -> None:
    plain = define_harness(name="plain", model=ScriptedModel([]), agents=[BILLING])
    with pytest.raises(HandoffOutsideTurnError):
        resolve_target(plain, "billing", source=None, handoffs_so_far=0)


def test_answer_target_maps_resume_and_hand_back() -> None:
    assert answer_target(HARNESS, WAIT, {"resume": True}) == "billing"
    assert answer_target(HARNESS, WAIT, {"handBack": "billing"}) == "billing"
    assert answer_target(HARNESS, WAIT, {"handBack": "main"}) is None
    with pytest.raises(UnknownAgentError):
        answer_target(HARNESS, WAIT, {"handBack": "helper"})
    with pytest.raises(InvalidAnswerError):
        answer_target(HARNESS, WAIT, {"handback": "billing"})


def test_settled_messages_leave_tool_calls_without_results_behind() -> None:
    messages = [
        Message("1", "user", (TextPart("hi"),)),
        Message("2", "assistant", (TextPart("looking"), ToolCallPart("a", "x", {}))),
        Message("3", "tool", (ToolResultPart("a", "x", "found"),)),
        Message("4", "assistant", (ToolCallPart("b", "x", {}),)),
    ]

    settled = settled_messages(messages)

    assert [m.id for m in settled] == ["1", "2", "3"]
    assert settled[1].tool_calls[0].id == "a"


@dataclass
class _Record:
    seq: int
    type: str
    data: dict[str, Any]
    at: datetime = datetime(2026, 1, 1, tzinfo=UTC)


def test_replay_applies_each_record_once() -> None:
    message = Message("m1", "user", (TextPart("hi"),)).to_json()
    records = [_Record(1, "message", {"message": message})]
    state = replay(records)

    replay(records, state)  # a concurrent refresh saw it already

    assert len(state.messages) == 1


def test_turn_text_labels_each_agents_text() -> None:
    assert turn_text([(None, "One moment."), ("billing", "Refunded.")]) == (
        "One moment.\n\nbilling:\nRefunded."
    )


def test_a_harness_with_two_tools_of_one_name_is_refused() -> None:
    from pydantic import BaseModel

    from agent_mem_vault.harness import tool

    class Empty(BaseModel):
        pass

    lookup = tool(name="lookup", description="Look up", input=Empty, run=lambda a, c: "x")

    with pytest.raises(InvalidInputError, match="two tools are called 'lookup'"):
        define_harness(name="acme/support", model=ScriptedModel([]), tools=[lookup, lookup])
