"""The harness's spans: names and attributes in one place, so the turn code only says where.

Each helper is a context manager over :func:`agent_mem_vault.core.tracing.span`
(a no-op without ``opentelemetry-api``). The tree of one turn::

    harness.turn                       thread, run, agent, kind; links to the thread's last trace
    ├── chat {model}                   gen_ai.system, gen_ai.request.model, gen_ai.usage.*
    ├── execute_tool {name}            gen_ai.tool.name, gen_ai.tool.call.id (an app's tool)
    ├── harness.handoff                from, to, kind (tool / code / router / human), note;
    │                                  a call of the handoff tool is this span, not execute_tool
    └── harness.human_wait             wait id, state "opened"

and outside turns: ``harness.operator_reply``; ``harness.human_wait`` (state
``answered``/``resolved``/``cancelled``, by, to) with its ``harness.handoff``
(kind ``human``); ``harness.transfer`` (source, target, envelope, transfer id)
with the summary's ``chat`` span; ``harness.takeover`` (a turn another host
left open, closed here, linked to that turn's trace).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..core import tracing
from .handoff import Handoff, is_human
from .model import Model, ModelRequest

__all__ = [
    "handoff_span",
    "model_span",
    "operator_reply_span",
    "set_turn_result",
    "set_turn_text",
    "set_usage",
    "takeover_span",
    "tool_span",
    "trace_field",
    "transfer_span",
    "turn_span",
    "wait_closed_span",
    "wait_opened_span",
]

NS = "agent_mem_vault"


def trace_field() -> dict[str, str]:
    """``{"trace": traceparent}`` of the current span for a log record, or nothing."""
    parent = tracing.traceparent()
    return {"trace": parent} if parent else {}


def _target(target: Any) -> str:
    if is_human(target):
        return "human"
    return "main" if target is None else str(target)


@contextmanager
def turn_span(
    *, harness: str, thread_id: str, kind: str, agent: str | None, link: str | None
) -> Iterator[Any]:
    with tracing.span(
        "harness.turn",
        {
            f"{NS}.harness": harness,
            f"{NS}.thread_id": thread_id,
            f"{NS}.turn.kind": kind,
            f"{NS}.agent": _target(agent),
        },
        link=link,
    ) as span:
        yield span


def set_turn_result(span: Any, run_id: str | None, status: str, code: str | None) -> None:
    if run_id is not None:
        span.set_attribute(f"{NS}.run_id", run_id)
    span.set_attribute(f"{NS}.turn.status", status)
    if code is not None:
        span.set_attribute("error.type", code)


def set_turn_text(span: Any, sent: str | None, reply: str) -> None:
    """The user's message and the turn's reply, only when the app turned text capture on."""
    if tracing.captures_message_text():
        if sent is not None:
            span.set_attribute(f"{NS}.input.text", sent)
        span.set_attribute(f"{NS}.output.text", reply)


@contextmanager
def model_span(model: Model, request: ModelRequest) -> Iterator[Any]:
    name = request.model or getattr(model, "model", None) or getattr(model, "name", "model")
    with tracing.span(
        f"chat {name}",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.system": getattr(model, "system", None) or "_OTHER",
            "gen_ai.request.model": str(name),
        },
        kind="client",
    ) as span:
        yield span


def set_usage(span: Any, input_tokens: int, output_tokens: int) -> None:
    span.set_attribute("gen_ai.usage.input_tokens", input_tokens)
    span.set_attribute("gen_ai.usage.output_tokens", output_tokens)


@contextmanager
def tool_span(name: str, call_id: str, agent: str | None) -> Iterator[Any]:
    with tracing.span(
        f"execute_tool {name}",
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": call_id,
            f"{NS}.agent": _target(agent),
        },
    ) as span:
        yield span


def _note(note: str | None) -> str | None:
    return note if tracing.captures_message_text() else None


@contextmanager
def handoff_span(handoff: Handoff, kind: str | None = None) -> Iterator[Any]:
    with tracing.span(
        "harness.handoff",
        {
            "gen_ai.tool.call.id": handoff.tool_call_id,
            f"{NS}.handoff.from": _target(handoff.source),
            f"{NS}.handoff.to": _target(handoff.target),
            f"{NS}.handoff.kind": kind or handoff.by,
            f"{NS}.handoff.note": _note(handoff.note),
            f"{NS}.handoff.has_note": handoff.note is not None,
        },
    ) as span:
        yield span


@contextmanager
def wait_opened_span(wait_id: str, before: str | None) -> Iterator[Any]:
    with tracing.span(
        "harness.human_wait",
        {
            f"{NS}.wait.id": wait_id,
            f"{NS}.wait.state": "opened",
            f"{NS}.wait.before": _target(before),
        },
    ) as span:
        yield span


@contextmanager
def wait_closed_span(
    *, thread_id: str, wait_id: str, how: str, by: str | None, link: str | None
) -> Iterator[Any]:
    state = {"answer": "answered", "resolve": "resolved", "cancel": "cancelled"}.get(how, how)
    with tracing.span(
        "harness.human_wait",
        {
            f"{NS}.thread_id": thread_id,
            f"{NS}.wait.id": wait_id,
            f"{NS}.wait.state": state,
            f"{NS}.wait.how": how,
            f"{NS}.wait.by": by,
        },
        link=link,
    ) as span:
        yield span


@contextmanager
def operator_reply_span(
    *, thread_id: str, operator: str, wait_id: str | None, files: int, link: str | None
) -> Iterator[Any]:
    with tracing.span(
        "harness.operator_reply",
        {
            f"{NS}.thread_id": thread_id,
            f"{NS}.operator": operator,
            f"{NS}.wait.id": wait_id,
            f"{NS}.files": files,
        },
        link=link,
    ) as span:
        yield span


@contextmanager
def transfer_span(
    *,
    source_harness: str,
    source_thread: str | None,
    target_harness: str,
    transfer_id: str | None,
    envelope_messages: str,
    envelope_note: str | None,
) -> Iterator[Any]:
    with tracing.span(
        "harness.transfer",
        {
            f"{NS}.transfer.source.harness": source_harness,
            f"{NS}.transfer.source.thread_id": source_thread,
            f"{NS}.transfer.target.harness": target_harness,
            f"{NS}.transfer.id": transfer_id,
            f"{NS}.transfer.envelope.messages": envelope_messages,
            f"{NS}.transfer.envelope.has_note": envelope_note is not None,
            f"{NS}.transfer.envelope.note": _note(envelope_note),
        },
    ) as span:
        yield span


@contextmanager
def takeover_span(*, stream: str, run_id: str, link: str | None) -> Iterator[Any]:
    with tracing.span(
        "harness.takeover",
        {f"{NS}.stream": stream, f"{NS}.run_id": run_id},
        link=link,
    ) as span:
        yield span
