"""Handoff rules as pure functions: who may be a target, what the transcript says.

A target is an agent name, None for the main model, or ``{"human": True}`` for
a person. Callers name the main model ``"main"``; inside, it is None, as in
``message.agent``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..core.errors import InvalidInputError
from .definitions import MAIN, Harness
from .errors import (
    HandoffOutsideTurnError,
    HandoffToHumanNotAllowedError,
    NotARootAgentError,
    TooManyHandoffsError,
)
from .messages import Message, TextPart, ToolCallPart, ToolResultPart
from .model import ToolSpec
from .tools import HANDOFF_TOOL

__all__ = [
    "HUMAN",
    "MAX_HANDOFFS_PER_TURN",
    "By",
    "Handoff",
    "Target",
    "handoff_event",
    "handoff_messages",
    "handoff_result_text",
    "handoff_tool_spec",
    "is_human",
    "resolve_target",
    "turn_text",
]

MAX_HANDOFFS_PER_TURN = 10
HUMAN: Mapping[str, bool] = {"human": True}

Target = str | None | Mapping[str, Any]
By = Literal["tool", "code", "router", "operator"]


@dataclass(frozen=True, slots=True)
class Handoff:
    """A handoff that was accepted and takes effect when the calling part ends."""

    source: Target
    target: Target
    note: str | None
    by: By
    tool_call_id: str | None = None


def is_human(target: Target) -> bool:
    return isinstance(target, Mapping) and target.get("human") is True


def label(target: Target) -> str:
    if is_human(target):
        return "a person"
    return MAIN if target is None else str(target)


def resolve_target(
    harness: Harness,
    to: Any,
    *,
    source: str | None,
    handoffs_so_far: int,
) -> Target:
    """Check a requested target; returns it normalized or raises with the reason.

    The caller keeps the turn on any rejection: nothing has changed yet.
    """
    routing = harness.routing
    if routing is None:
        raise HandoffOutsideTurnError(
            f"harness {harness.name!r} has no routing, so nothing can hand off; "
            "give define_harness a Routing(...) to allow handoffs"
        )
    if handoffs_so_far >= MAX_HANDOFFS_PER_TURN:
        raise TooManyHandoffsError(
            f"this turn already handed off {MAX_HANDOFFS_PER_TURN} times, the most one turn "
            "may; answer the user now"
        )
    if isinstance(to, Mapping):
        return _person(harness, routing.allow_handoff_to_human, to)
    target = _root_agent(harness, to)
    if target == source:
        raise InvalidInputError(
            f"{label(target)} already answers this turn; hand off to another agent"
        )
    return target


def _person(harness: Harness, allowed: bool, to: Mapping[str, Any]) -> Target:
    if dict(to) != {"human": True}:
        raise InvalidInputError(
            f"handoff target {dict(to)!r} is not valid; use an agent name, "
            f"{MAIN!r} or {{'human': True}}"
        )
    if not allowed:
        raise HandoffToHumanNotAllowedError(
            f"harness {harness.name!r} does not allow a handoff to a person; set "
            "Routing(allow_handoff_to_human=True) or hand off to an agent"
        )
    return dict(HUMAN)


def _root_agent(harness: Harness, to: Any) -> str | None:
    """A root agent's name, or None for the main model (``"main"``)."""
    if to is None or to == MAIN:
        return None
    if not isinstance(to, str):
        raise InvalidInputError(
            f"handoff target must be an agent name, {MAIN!r} or {{'human': True}}, got {to!r}"
        )
    if harness.root_agent(to) is None:
        roots = ", ".join(harness.root_names) or "(none)"
        kind = "a subagent, which" if harness.any_agent(to) else "not an agent of it, and"
        raise NotARootAgentError(
            f"{to!r} is {kind} cannot be a handoff target of harness {harness.name!r}; "
            f"hand off to one of its root agents: {roots}",
            target=to,
        )
    return to


def handoff_tool_spec(harness: Harness, source: str | None) -> ToolSpec:
    """The ``handoff`` tool of the main model (source None) or of a root agent.

    Its ``to`` lists the root agents other than the caller; a root agent can
    also name ``main``; with ``allow_handoff_to_human``, ``{"human": true}``.
    """
    names = [n for n in harness.root_names if n != source]
    if source is not None:
        names.append(MAIN)
    to_schema: dict[str, Any] = {"type": "string", "enum": names}
    routing = harness.routing
    if routing is not None and routing.allow_handoff_to_human:
        to_schema = {
            "anyOf": [
                to_schema,
                {
                    "type": "object",
                    "properties": {"human": {"type": "boolean", "const": True}},
                    "required": ["human"],
                    "additionalProperties": False,
                },
            ]
        }
    agents = "; ".join(f"{a.name}: {a.description}" for a in harness.agents if a.name != source)
    return ToolSpec(
        name=HANDOFF_TOOL,
        description=(
            "Hand the conversation to another agent, who answers next in this turn. "
            f"Agents: {agents or '(none)'}."
            + (" Use 'main' to hand back to the main assistant." if source else "")
            + (' Use {"human": true} for a person.' if _human(harness) else "")
        ),
        parameters={
            "type": "object",
            "properties": {
                "to": to_schema,
                "note": {"type": "string", "description": "What the next agent should know."},
            },
            "required": ["to"],
            "additionalProperties": False,
        },
    )


def _human(harness: Harness) -> bool:
    return harness.routing is not None and harness.routing.allow_handoff_to_human


def handoff_result_text(target: Target) -> str:
    """The tool result of a handoff: ``Handed off to billing. billing answers next.``"""
    if is_human(target):
        return "Handed off to a person. A person answers next."
    name = label(target)
    return f"Handed off to {name}. {name} answers next."


def _wire_target(target: Target) -> Any:
    return dict(target) if isinstance(target, Mapping) else target


def handoff_metadata(handoff: Handoff) -> dict[str, Any]:
    harness: dict[str, Any] = {
        "handoff": {"by": handoff.by, "to": _wire_target(handoff.target), "note": handoff.note}
    }
    if isinstance(handoff.source, str):
        harness["agent"] = handoff.source
    return {"harness": harness}


def handoff_messages(
    handoff: Handoff, *, ids: Sequence[str], with_tool: bool, created_at: str
) -> list[Message]:
    """The transcript messages a router or code handoff adds (needs two ids).

    With the handoff tool: an assistant ``handoff`` tool call with ``{to, note}``
    and its result. Without: one assistant message with the same text and the note.
    """
    metadata = handoff_metadata(handoff)
    result = handoff_result_text(handoff.target)
    if not with_tool:
        body = result if not handoff.note else f"{result}\nNote: {handoff.note}"
        return [Message(ids[0], "assistant", (TextPart(body),), metadata, created_at)]
    arguments: dict[str, Any] = {"to": _wire_to(handoff.target)}
    if handoff.note is not None:
        arguments["note"] = handoff.note
    call_id = f"handoff-{ids[0]}"
    return [
        Message(
            ids[0],
            "assistant",
            (ToolCallPart(call_id, HANDOFF_TOOL, arguments),),
            metadata,
            created_at,
        ),
        Message(
            ids[1],
            "tool",
            (ToolResultPart(call_id, HANDOFF_TOOL, result),),
            metadata,
            created_at,
        ),
    ]


def _wire_to(target: Target) -> Any:
    if target is None:
        return MAIN
    return _wire_target(target)


def handoff_event(
    handoff: Handoff, *, run_id: str | None, wait_id: str | None = None
) -> dict[str, Any]:
    """The value of the ``harness.handoff`` event (and log record)."""
    value: dict[str, Any] = {
        "from": _wire_target(handoff.source),
        "to": _wire_target(handoff.target),
        "by": handoff.by,
        "runId": run_id,
    }
    if handoff.note is not None:
        value["note"] = handoff.note
    if wait_id is not None:
        value["waitId"] = wait_id
    return value


def turn_text(segments: Sequence[tuple[str | None, str]]) -> str:
    """The turn's text: each answerer's text, an agent's under ``name:``.

    >>> turn_text([(None, ""), ("billing", "Your refund is on its way.")])
    'billing:\\nYour refund is on its way.'
    """
    parts = []
    for agent, text in segments:
        if not text:
            continue
        parts.append(text if agent is None else f"{agent}:\n{text}")
    return "\n\n".join(parts)
