"""OpenTelemetry spans of the harness, read back with the SDK's in-memory exporter."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the dev extra installs the OpenTelemetry SDK")

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent_mem_vault.core import tracing
from agent_mem_vault.harness import (
    Endpoint,
    Envelope,
    HarnessHost,
    Routing,
    User,
    define_harness,
    memory_persistence,
)
from agent_mem_vault.harness.testing import ScriptedModel, text, tool_call, usage
from tests.otel import exporter

from .support import billing_agent, support_harness

__all__ = ["exporter"]


def tree(spans: tuple[ReadableSpan, ...]) -> list[Any]:
    """Spans as nested (name, [children]) in start order, roots first."""
    by_parent: dict[int | None, list[ReadableSpan]] = {}
    for s in sorted(spans, key=lambda s: s.start_time or 0):
        parent = s.parent.span_id if s.parent is not None else None
        by_parent.setdefault(parent, []).append(s)

    def build(s: ReadableSpan) -> Any:
        children = by_parent.get(s.context.span_id, [])
        return (s.name, [build(c) for c in children]) if children else s.name

    return [build(s) for s in by_parent.get(None, [])]


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


async def story(host: HarnessHost) -> tuple[Any, ...]:
    desk_model = ScriptedModel(
        [
            [tool_call("handoff", {"to": "billing", "note": "Refund for order 42"}), usage(20, 5)],
            [text("Ada asked for a refund of order 42."), usage(300, 14)],
        ]
    )
    billing_model = ScriptedModel(
        [
            [text("I can refund order 42. Shall I?"), usage(30, 8)],
            tool_call("handoff", {"to": {"human": True}, "note": "The user wants a person."}),
        ]
    )
    desk = support_harness(
        desk_model,
        [billing_agent(billing_model)],
        name="acme/desk",
        routing=Routing(router=lambda ctx: None, allow_handoff_to_human=True),
    )
    team = define_harness(name="acme/billing", model=ScriptedModel([text("Billing team here.")]))
    ada = User(id="ada", tenant_id="acme")
    session = await host.open(desk, thread_id="case-42", user=ada)
    await session.send("I want a refund for order 42.")
    await session.send("I want to talk to a person.")
    await session.send("Olga here.", as_="operator")
    [wait] = (await session.snapshot()).pending_waits
    await session.answer(question_id=wait.wait_id, value={"handBack": "billing"})
    moved = await host.transfer(
        from_=Endpoint(desk, "case-42"),
        to=Endpoint(team),
        envelope=Envelope(note="Refund for order 42.", messages="summary"),
        user=ada,
        transfer_id="refund-42",
    )
    target = await host.open(team, thread_id=moved.thread_id, user=ada)
    await target.send("Hi, I am still here.")
    return desk, team


async def test_the_support_desk_story_is_one_exact_span_tree(
    exporter: InMemorySpanExporter,
) -> None:
    host = HarnessHost(persistence=memory_persistence())
    await story(host)
    await host.close()
    spans = exporter.get_finished_spans()

    assert tree(spans) == [
        (
            "harness.turn",
            [
                "chat scripted",
                "harness.handoff",
                "chat scripted",
            ],
        ),
        (
            "harness.turn",
            ["chat scripted", "harness.handoff", "harness.human_wait"],
        ),
        "harness.operator_reply",
        ("harness.human_wait", ["harness.handoff"]),
        ("harness.transfer", ["chat scripted"]),
        ("harness.turn", ["chat scripted"]),
    ]
    turn1, turn2, reply, closed, transfer, team_turn = (s for s in spans if s.parent is None)
    handoffs = [attrs(s) for s in spans if s.name == "harness.handoff"]
    assert [
        (
            h["agent_mem_vault.handoff.from"],
            h["agent_mem_vault.handoff.to"],
            h["agent_mem_vault.handoff.kind"],
        )
        for h in handoffs
    ] == [("main", "billing", "tool"), ("billing", "human", "tool"), ("human", "billing", "human")]
    # Message text (notes included) stays out of spans unless the app turns it on.
    assert all("agent_mem_vault.handoff.note" not in h for h in handoffs)
    texts = [k for s in spans for k in attrs(s) if k.endswith((".text", ".note"))]
    assert texts == []
    assert handoffs[0]["agent_mem_vault.handoff.has_note"] is True

    first_chat = attrs(next(s for s in spans if s.name == "chat scripted"))
    assert first_chat["gen_ai.operation.name"] == "chat"
    assert first_chat["gen_ai.system"] == "_OTHER"
    assert first_chat["gen_ai.request.model"] == "scripted"
    assert (first_chat["gen_ai.usage.input_tokens"], first_chat["gen_ai.usage.output_tokens"]) == (
        20,
        5,
    )
    # The handoff tool's call is told by its handoff span, with the call's id.
    assert handoffs[0]["gen_ai.tool.call.id"]
    assert "gen_ai.tool.call.id" not in handoffs[2]  # a person's hand back has no call
    assert attrs(turn1)["agent_mem_vault.turn.status"] == "completed"
    assert attrs(turn2)["agent_mem_vault.turn.status"] == "interrupted"
    wait_opened = attrs(next(s for s in spans if s.name == "harness.human_wait" and s.parent))
    assert wait_opened["agent_mem_vault.wait.state"] == "opened"
    assert attrs(closed)["agent_mem_vault.wait.state"] == "answered"
    assert attrs(closed)["agent_mem_vault.wait.id"] == wait_opened["agent_mem_vault.wait.id"]
    assert attrs(reply)["agent_mem_vault.operator"] == "ada"
    t = attrs(transfer)
    assert t["agent_mem_vault.transfer.id"] == "refund-42"
    assert t["agent_mem_vault.transfer.source.thread_id"] == "case-42"
    assert t["agent_mem_vault.transfer.target.harness"] == "acme/billing"
    assert t["agent_mem_vault.transfer.envelope.messages"] == "summary"

    # One story: each later operation on a thread links to the trace before it,
    # and the team's first turn links to the transfer that brought the case.
    def linked(span: ReadableSpan) -> list[tuple[int, int]]:
        return [(link.context.trace_id, link.context.span_id) for link in span.links]

    assert linked(turn1) == []
    assert linked(turn2) == [(turn1.context.trace_id, turn1.context.span_id)]
    assert linked(reply) == [(turn2.context.trace_id, turn2.context.span_id)]
    assert linked(team_turn) == [(transfer.context.trace_id, transfer.context.span_id)]


async def test_a_transfer_from_app_code_continues_the_conversation_as_one_linked_story(
    exporter: InMemorySpanExporter,
) -> None:
    desk = define_harness(name="acme/desk", model=ScriptedModel([text("Desk here.")] * 2))
    team = define_harness(name="acme/billing", model=ScriptedModel([text("Billing here.")]))
    host = HarnessHost(persistence=memory_persistence())
    source = await host.open(desk, thread_id="case-7")
    await source.send("I was charged twice.")
    moved = await host.transfer(
        from_=Endpoint(desk, "case-7"), to=Endpoint(team), envelope=Envelope(note="Charged twice.")
    )
    await (await host.open(team, thread_id=moved.thread_id)).send("Still here.")
    await source.send("Anyone?")
    await host.close()

    roots = [s for s in exporter.get_finished_spans() if s.parent is None]
    source_turn, transfer, target_turn, source_again = roots
    assert [s.name for s in (source_turn, transfer, target_turn, source_again)] == [
        "harness.turn",
        "harness.transfer",
        "harness.turn",
        "harness.turn",
    ]

    def linked(span: ReadableSpan) -> list[tuple[int, int]]:
        return [(link.context.trace_id, link.context.span_id) for link in span.links]

    def ids(span: ReadableSpan) -> tuple[int, int]:
        return (span.context.trace_id, span.context.span_id)

    # The transfer continues the source's story; both threads' next turns continue the transfer's.
    assert linked(transfer) == [ids(source_turn)]
    assert linked(target_turn) == [ids(transfer)]
    assert linked(source_again) == [ids(transfer)]
    # Read from the target's side, the links lead back to where the conversation began.
    by_id = {ids(s): s for s in roots}
    story_of_target, span = [], target_turn
    while True:
        story_of_target.append(span.name)
        if not span.links:
            break
        span = by_id[(span.links[0].context.trace_id, span.links[0].context.span_id)]
    assert story_of_target == ["harness.turn", "harness.transfer", "harness.turn"]
    assert span is source_turn


async def test_message_text_goes_on_spans_only_when_the_app_turns_it_on(
    exporter: InMemorySpanExporter,
) -> None:
    tracing.capture_message_text(True)
    host = HarnessHost(persistence=memory_persistence())
    await story(host)
    await host.close()
    notes = [
        attrs(s).get("agent_mem_vault.handoff.note")
        for s in exporter.get_finished_spans()
        if s.name == "harness.handoff"
    ]
    assert notes == ["Refund for order 42", "The user wants a person.", None]
    turns = [attrs(s) for s in exporter.get_finished_spans() if s.name == "harness.turn"]
    assert turns[0]["agent_mem_vault.input.text"] == "I want a refund for order 42."
    assert turns[0]["agent_mem_vault.output.text"] == "billing:\nI can refund order 42. Shall I?"


async def test_a_turn_closed_by_another_host_links_to_the_original_trace(
    exporter: InMemorySpanExporter,
) -> None:
    import asyncio

    from agent_mem_vault.harness.testing import pause

    store = memory_persistence()
    desk = support_harness(ScriptedModel([[pause(30), text("never")], text("Back.")]), [])
    first = HarnessHost(persistence=store, lease_ttl=0.2)
    turn = asyncio.create_task((await first.open(desk, thread_id="t1")).send("slow"))
    from .test_takeover import until_logged

    await until_logged(first, "run.started")
    turn.cancel()  # the host dies mid-turn
    with pytest.raises(asyncio.CancelledError):
        await turn
    [crashed] = [s for s in exporter.get_finished_spans() if s.name == "harness.turn"]
    await asyncio.sleep(0.3)  # its lease lapses
    exporter.clear()

    second = HarnessHost(persistence=store)
    result = await (await second.open(desk, thread_id="t1")).send("Anyone?")
    await first.close()
    await second.close()

    assert result.text == "Back."
    spans = exporter.get_finished_spans()
    [takeover] = [s for s in spans if s.name == "harness.takeover"]
    assert [(link.context.trace_id, link.context.span_id) for link in takeover.links] == [
        (crashed.context.trace_id, crashed.context.span_id)
    ]


def test_without_opentelemetry_the_helpers_are_no_ops() -> None:
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['opentelemetry'] = None\n"
        "from agent_mem_vault.core import tracing\n"
        "assert not tracing.enabled()\n"
        "with tracing.span('x', {'a': 1}) as s: s.set_attribute('b', 2)\n"
        "assert tracing.traceparent() is None\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


async def test_an_app_tool_call_is_an_execute_tool_span_under_the_turn(
    exporter: InMemorySpanExporter,
) -> None:
    from .support import escalate_tool

    main = ScriptedModel([tool_call("escalate", {"orderId": "42"})])
    harness = support_harness(
        main, [billing_agent(ScriptedModel([text("Done.")]))], tools=[escalate_tool()]
    )
    host = HarnessHost(persistence=memory_persistence())
    await (await host.open(harness, thread_id="t1")).send("Refund order 42")
    await host.close()
    spans = exporter.get_finished_spans()
    assert tree(spans) == [
        (
            "harness.turn",
            [
                "chat scripted",
                "execute_tool escalate",
                "harness.handoff",  # a handoff takes effect when the part that made it ends
                "chat scripted",
            ],
        )
    ]
    tool = attrs(next(s for s in spans if s.name == "execute_tool escalate"))
    assert tool["gen_ai.tool.name"] == "escalate"
    assert tool["gen_ai.operation.name"] == "execute_tool"
    [handoff] = [attrs(s) for s in spans if s.name == "harness.handoff"]
    assert handoff["agent_mem_vault.handoff.kind"] == "code"


def test_with_the_api_and_no_provider_no_span_is_started_until_the_app_installs_one() -> None:
    import subprocess
    import sys

    code = (
        "from opentelemetry import context, trace\n"
        "from opentelemetry.sdk.trace import TracerProvider\n"
        "from opentelemetry.sdk.trace.export import SimpleSpanProcessor\n"
        "from opentelemetry.sdk.trace.export.in_memory_span_exporter import "
        "InMemorySpanExporter\n"
        "from agent_mem_vault.core import tracing\n"
        "assert tracing.enabled()\n"
        "assert tracing.span('x', {'a': 1}) is tracing.NO_SPAN\n"
        "assert tracing.traceparent() is None\n"
        # A context the app made current (an incoming request's) is still what is stored.
        "remote = trace.SpanContext(0xABC, 0xDEF, is_remote=True, "
        "trace_flags=trace.TraceFlags(1))\n"
        "token = context.attach(trace.set_span_in_context(trace.NonRecordingSpan(remote)))\n"
        "assert tracing.traceparent() == '00-' + f'{0xABC:032x}-{0xDEF:016x}-01'\n"
        "context.detach(token)\n"
        "provider = TracerProvider()\n"
        "exporter = InMemorySpanExporter()\n"
        "provider.add_span_processor(SimpleSpanProcessor(exporter))\n"
        "trace.set_tracer_provider(provider)\n"
        "with tracing.span('y', {'a': 1, 'b': None}) as span:\n"
        "    assert tracing.traceparent() == tracing.traceparent(span) is not None\n"
        "[y] = exporter.get_finished_spans()\n"
        "assert (y.name, dict(y.attributes)) == ('y', {'a': 1}), y\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


async def test_an_error_leaving_a_span_marks_it_and_the_context_is_restored(
    exporter: InMemorySpanExporter,
) -> None:
    import asyncio

    from opentelemetry import trace

    with pytest.raises(ValueError, match="bad"), tracing.span("fails"):
        raise ValueError("bad")
    with pytest.raises(asyncio.CancelledError), tracing.span("cancelled"):
        raise asyncio.CancelledError
    assert not trace.get_current_span().get_span_context().is_valid
    fails, cancelled = exporter.get_finished_spans()
    assert fails.status.status_code == trace.StatusCode.ERROR
    assert fails.status.description == "ValueError: bad"
    assert [e.name for e in fails.events] == ["exception"]
    # As the API's use_span: a cancelled task is not an error of the span.
    assert cancelled.status.status_code == trace.StatusCode.UNSET
    assert cancelled.events == ()
