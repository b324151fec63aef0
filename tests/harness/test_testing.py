"""``agent_mem_vault.harness.testing``: the scripted model replays and records."""

from __future__ import annotations

import asyncio

import pytest

from agent_mem_vault.harness import (
    Message,
    Model,
    ModelRequest,
    TextDelta,
    TextPart,
    ToolCallRequest,
    ToolSpec,
    UsageReport,
)
from agent_mem_vault.harness.testing import ScriptedModel, gate, text, tool_call, usage


def request(*texts: str) -> ModelRequest:
    return ModelRequest(
        system_prompts=("Be brief.",),
        messages=tuple(Message(str(i), "user", (TextPart(t),)) for i, t in enumerate(texts)),
        tools=(ToolSpec("lookup", "Look up", {"type": "object"}),),
    )


async def test_scripted_model_replays_replies_in_order_and_records_each_request() -> None:
    model = ScriptedModel(
        [text("first reply is long enough to stream"), tool_call("lookup", {"q": 1}, id="c1")]
    )
    assert isinstance(model, Model)

    first = [e async for e in model.stream(request("a"))]
    second = [e async for e in model.stream(request("a", "b"))]

    assert (
        "".join(e.text for e in first if isinstance(e, TextDelta))
        == "first reply is long enough to stream"
    )
    assert sum(isinstance(e, TextDelta) for e in first) > 1  # streamed in deltas
    assert [e for e in second if isinstance(e, ToolCallRequest)] == [
        ToolCallRequest("c1", "lookup", {"q": 1})
    ]
    assert [len(c.messages) for c in model.calls] == [1, 2]
    assert model.calls[0].tool_names == ("lookup",)
    model.check_consumed()


async def test_a_reply_can_be_a_list_of_parts_with_made_up_call_ids_and_usage() -> None:
    model = ScriptedModel(
        [[text("Looking."), tool_call("lookup"), tool_call("lookup"), usage(7, 3)]]
    )

    events = [e async for e in model.stream(request("a"))]

    calls = [e for e in events if isinstance(e, ToolCallRequest)]
    assert [c.id for c in calls] == ["call_1", "call_2"]
    [report] = [e for e in events if isinstance(e, UsageReport)]
    assert (report.usage.input_tokens, report.usage.output_tokens) == (7, 3)


async def test_check_consumed_fails_when_replies_are_left() -> None:
    model = ScriptedModel([text("a"), text("b")])
    _ = [e async for e in model.stream(request("x"))]

    with pytest.raises(AssertionError, match="1 unused"):
        model.check_consumed()


async def test_a_scripted_model_that_runs_out_of_replies_raises() -> None:
    model = ScriptedModel([])

    with pytest.raises(AssertionError, match="ran out"):
        _ = [e async for e in model.stream(request("x"))]


async def test_a_bare_string_is_a_text_reply_and_an_unknown_part_is_refused() -> None:
    model = ScriptedModel(["plain", [42]])  # type: ignore[list-item]

    first = [e async for e in model.stream(request("x"))]
    assert "".join(e.text for e in first if isinstance(e, TextDelta)) == "plain"
    with pytest.raises(TypeError, match="not text"):
        _ = [e async for e in model.stream(request("x"))]


async def test_a_gated_reply_goes_on_only_once_its_event_is_set() -> None:
    release = asyncio.Event()
    model = ScriptedModel([[text("Looking."), gate(release), text("Found.")]])
    stream = aiter(model.stream(request("a")))

    assert await anext(stream) == TextDelta("Looking.")
    waiting = asyncio.ensure_future(anext(stream))
    # The stream is parked on the event: a turn of the loop later nothing came.
    done, _ = await asyncio.wait({waiting}, timeout=0)
    assert not done
    release.set()
    assert await waiting == TextDelta("Found.")
    assert isinstance(await anext(stream), UsageReport)
