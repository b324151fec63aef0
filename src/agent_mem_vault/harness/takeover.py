"""Closing a turn that a stopped host left in flight, exactly as its log says.

When a host takes over a thread (the owner died, or its lease lapsed during
a stall) and the log shows a turn that started but never finished, nobody
runs that turn any more: running it again could repeat what its tools did.
The new owner closes it, once, from what the log holds:

* the turn had handed the thread to a person (its ``human`` wait is open):
  it **finished** as ``interrupted``, as it would have, with the text its
  answerers wrote;
* otherwise it **failed** with ``turn_abandoned``; an app tool call that is
  in the log without a result gets a failed result saying its outcome is
  unknown, so that the transcript stays valid for the next model call
  (providers reject a tool call with no result) and the model knows.

Pure: state in, records out. ``Threads.writing`` appends them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .handoff import turn_text
from .log import MESSAGE, RUN_FINISHED, Record
from .messages import Message, ToolResultPart
from .state import ThreadState

__all__ = ["ABANDONED_MESSAGE", "UNKNOWN_TOOL_OUTCOME", "close_interrupted_turn"]

ABANDONED_MESSAGE = "the host running this turn stopped before it ended; send again"
UNKNOWN_TOOL_OUTCOME = (
    "unknown: the host running this turn stopped while this tool ran, so it may or may "
    "not have taken effect; check before you call it again"
)


def close_interrupted_turn(
    state: ThreadState, run_id: str, *, next_id: Callable[[], str], now: str
) -> list[Record]:
    """The records that close ``run_id``, a turn the log shows as still running."""
    run = state.runs[run_id]
    messages = state.messages[run.start :]
    if any(w.run_id == run_id and w.kind == "human" for w in state.open_waits):
        return [
            (
                RUN_FINISHED,
                {"runId": run_id, "status": "interrupted", "text": _turn_text(messages)},
            )
        ]
    records: list[Record] = [
        (MESSAGE, {"message": m.to_json()}) for m in _unknown_results(messages, next_id, now)
    ]
    finished: dict[str, Any] = {
        "runId": run_id,
        "status": "failed",
        "text": _turn_text(messages),
        "code": "turn_abandoned",
        "message": ABANDONED_MESSAGE,
    }
    records.append((RUN_FINISHED, finished))
    return records


def _turn_text(messages: list[Message]) -> str:
    """The turn's text as ``Turn`` builds it: each answerer's replies, in order."""
    segments: list[tuple[str | None, str]] = []
    for message in messages:
        harness = message.metadata.get("harness") or {}
        if message.role != "assistant" or "operator" in harness or "handoff" in harness:
            continue
        if not message.text:
            continue
        if segments and segments[-1][0] == message.agent:
            agent, text = segments[-1]
            segments[-1] = (agent, f"{text}\n\n{message.text}")
        else:
            segments.append((message.agent, message.text))
    return turn_text(segments)


def _unknown_results(
    messages: list[Message], next_id: Callable[[], str], now: str
) -> list[Message]:
    answered = {
        part.tool_call_id
        for message in messages
        for part in message.parts
        if isinstance(part, ToolResultPart)
    }
    results = []
    for message in messages:
        for call in message.tool_calls:
            if call.id in answered:
                continue
            metadata: dict[str, Any] = (
                {"harness": {"agent": message.agent}} if message.agent else {}
            )
            part = ToolResultPart(call.id, call.name, UNKNOWN_TOOL_OUTCOME, True)
            results.append(Message(next_id(), "tool", (part,), metadata, now))
    return results
