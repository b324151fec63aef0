"""The harness's spans: names and attributes in one place, so the turn code only says where.

Each ``*_span`` helper returns a context manager: the span, current inside the
block. It asks :func:`agent_mem_vault.core.tracing.active` first and, when no
tracer records (no ``opentelemetry-api``, or no provider), returns
:data:`~agent_mem_vault.core.tracing.NO_SPAN` without building a single
attribute; a turn without tracing pays one check per span. The tree of one turn::

    harness.turn                       thread, run, agent, kind; links to the thread's last trace
    ├── chat {model}                   gen_ai.system, gen_ai.request.model, gen_ai.usage.*
    ├── execute_tool {name}            gen_ai.tool.name, gen_ai.tool.call.id (an app's tool)
    ├── harness.handoff                from, to, kind (tool / code / router / human), note;
    │                                  a call of the handoff tool is this span, not execute_tool
    └── harness.human_wait             wait id, state "opened"

and outside turns: ``harness.operator_reply``; ``harness.human_wait`` (state
``answered``/``resolved``/``cancelled``, by, to) with its ``harness.handoff``
(kind ``human``); ``harness.transfer`` (source, target, envelope, transfer id;
linked to the source thread's last trace when the app started it) with the
summary's ``chat`` span; ``harness.takeover`` (a turn another host
left open, closed here, linked to that turn's trace).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core import tracing
from ..core.tracing import NO_SPAN
from .handoff import Handoff, is_human
from .model import Model, ModelRequest

__all__ = [
    "continue_story",
    "handoff_span",
    "model_span",
    "operator_reply_span",
    "set_turn_result",
    "set_usage",
    "takeover_span",
    "tool_span",
    "trace_field",
    "transfer_span",
    "turn_span",
    "wait_closed_span",
    "wait_opened",
]

NS = "agent_mem_vault"


def trace_field(span: Any = None) -> dict[str, str]:
    """``{"trace": traceparent}`` of ``span`` (default: the current one) for a log record."""
    parent = tracing.traceparent(span)
    return {"trace": parent} if parent else {}


def _start(
    name: str,
    attributes: Callable[[], dict[str, Any]],
    *,
    link: str | None = None,
    kind: str = "internal",
) -> Any:
    """The span ``name``, or ``NO_SPAN`` when nothing records: then ``attributes`` is
    never called, so tracing that is off builds nothing. An attribute that is None
    is left out."""
    tracer = tracing.active()
    if tracer is None:
        return NO_SPAN
    given = {key: value for key, value in attributes().items() if value is not None}
    return tracing.start(tracer, name, given, link=link, kind=kind)


def _text(text: str | None) -> str | None:
    """A message's text as an attribute, only when the app captures message text."""
    return text if text is not None and tracing.captures_message_text() else None


def _target(target: Any) -> str:
    if target is None:
        return "main"
    if type(target) is str:
        return target
    return "human" if is_human(target) else str(target)


def turn_span(
    *, harness: str, thread_id: str, kind: str, agent: str | None, link: str | None
) -> Any:
    return _start(
        "harness.turn",
        lambda: {
            f"{NS}.harness": harness,
            f"{NS}.thread_id": thread_id,
            f"{NS}.turn.kind": kind,
            f"{NS}.agent": _target(agent),
        },
        link=link,
    )


def set_turn_result(
    span: Any, run_id: str | None, status: str, code: str | None, sent: str | None, reply: str
) -> None:
    """The turn's outcome; the user's message and the reply only when the app captures text."""
    if not span.is_recording():
        return
    attributes: dict[str, Any] = {f"{NS}.turn.status": status}
    if run_id is not None:
        attributes[f"{NS}.run_id"] = run_id
    if code is not None:
        attributes["error.type"] = code
    if tracing.captures_message_text():
        if sent is not None:
            attributes[f"{NS}.input.text"] = sent
        attributes[f"{NS}.output.text"] = reply
    span.set_attributes(attributes)


def model_span(model: Model, request: ModelRequest) -> Any:
    name = str(request.model or getattr(model, "model", None) or getattr(model, "name", "model"))
    return _start(
        f"chat {name}",
        lambda: {
            "gen_ai.operation.name": "chat",
            "gen_ai.system": getattr(model, "system", None) or "_OTHER",
            "gen_ai.request.model": name,
        },
        kind="client",
    )


def set_usage(span: Any, input_tokens: int, output_tokens: int) -> None:
    if span.is_recording():
        span.set_attributes(
            {"gen_ai.usage.input_tokens": input_tokens, "gen_ai.usage.output_tokens": output_tokens}
        )


def tool_span(name: str, call_id: str, agent: str | None) -> Any:
    return _start(
        f"execute_tool {name}",
        lambda: {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": call_id,
            f"{NS}.agent": _target(agent),
        },
    )


def handoff_span(handoff: Handoff, kind: str | None = None) -> Any:
    return _start(
        "harness.handoff",
        lambda: {
            f"{NS}.handoff.from": _target(handoff.source),
            f"{NS}.handoff.to": _target(handoff.target),
            f"{NS}.handoff.kind": kind or handoff.by,
            f"{NS}.handoff.has_note": handoff.note is not None,
            "gen_ai.tool.call.id": handoff.tool_call_id,
            f"{NS}.handoff.note": _text(handoff.note),
        },
    )


def wait_opened(wait_id: str, before: Any) -> None:
    """A human wait was opened (a span with nothing inside: the wait outlives the turn)."""
    tracer = tracing.active()
    if tracer is not None:
        tracing.instant(
            tracer,
            "harness.human_wait",
            {
                f"{NS}.wait.id": wait_id,
                f"{NS}.wait.state": "opened",
                f"{NS}.wait.before": _target(before),
            },
        )


_CLOSED = {"answer": "answered", "resolve": "resolved", "cancel": "cancelled"}


def wait_closed_span(
    *, thread_id: str, wait_id: str, how: str, by: str | None, link: str | None
) -> Any:
    return _start(
        "harness.human_wait",
        lambda: {
            f"{NS}.thread_id": thread_id,
            f"{NS}.wait.id": wait_id,
            f"{NS}.wait.state": _CLOSED.get(how, how),
            f"{NS}.wait.how": how,
            f"{NS}.wait.by": by,
        },
        link=link,
    )


def operator_reply_span(
    *, thread_id: str, operator: str, wait_id: str | None, files: int, link: str | None
) -> Any:
    return _start(
        "harness.operator_reply",
        lambda: {
            f"{NS}.thread_id": thread_id,
            f"{NS}.operator": operator,
            f"{NS}.files": files,
            f"{NS}.wait.id": wait_id,
        },
        link=link,
    )


def transfer_span(
    *,
    source_harness: str,
    source_thread: str | None,
    target_harness: str,
    transfer_id: str | None,
    envelope_messages: str,
    envelope_note: str | None,
) -> Any:
    return _start(
        "harness.transfer",
        lambda: {
            f"{NS}.transfer.source.harness": source_harness,
            f"{NS}.transfer.target.harness": target_harness,
            f"{NS}.transfer.envelope.messages": envelope_messages,
            f"{NS}.transfer.envelope.has_note": envelope_note is not None,
            f"{NS}.transfer.source.thread_id": source_thread,
            f"{NS}.transfer.id": transfer_id,
            f"{NS}.transfer.envelope.note": _text(envelope_note),
        },
    )


def continue_story(span: Any, trace: str | None) -> None:
    """Link ``span`` to a thread's last stored trace, unless it is already in that trace."""
    tracing.add_link(span, trace)


def takeover_span(*, stream: str, run_id: str, link: str | None) -> Any:
    return _start(
        "harness.takeover", lambda: {f"{NS}.stream": stream, f"{NS}.run_id": run_id}, link=link
    )
