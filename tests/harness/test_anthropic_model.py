"""The Anthropic adapter against a local server that speaks the Messages API wire format."""

from __future__ import annotations

import base64
import subprocess
import sys
from typing import Any

import pytest

from agent_mem_vault.core.errors import InvalidInputError, RemoteError
from agent_mem_vault.harness.anthropic_model import AnthropicModel, to_anthropic_messages
from agent_mem_vault.harness.messages import (
    FilePart,
    Message,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from agent_mem_vault.harness.model import (
    Model,
    TextDelta,
    ToolCallRequest,
    Usage,
    UsageReport,
)

from .anthropic_wire_server import (
    AnthropicWireServer,
    Reply,
    ToolUse,
    error_reply,
    text_reply,
    tool_reply,
)
from .wire import HANDOFF_SPEC, adapter_fixtures, collect, request, user

server, wire, model = adapter_fixtures(
    AnthropicWireServer,
    lambda wire: AnthropicModel(
        "claude-wire", base_url=wire.base_url, api_key="sk-ant-configured", max_retries=0
    ),
)


def sent_key(headers: dict[str, str]) -> str:
    """The API key a request carried (``x-api-key``, or a bearer token in newer SDKs)."""
    return headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")


def no_cache_marks(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: no_cache_marks(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [no_cache_marks(v) for v in value]
    return value


async def test_adapter_implements_the_model_protocol(model: AnthropicModel) -> None:
    assert isinstance(model, Model)
    assert model.name == "claude-wire"


def test_a_model_name_and_a_positive_max_tokens_are_required() -> None:
    with pytest.raises(InvalidInputError, match="needs a model name"):
        AnthropicModel("", api_key="k")
    with pytest.raises(InvalidInputError, match="max_tokens"):
        AnthropicModel("claude-x", api_key="k", max_tokens=0)


async def test_streams_text_deltas_in_order_and_reports_usage(
    model: AnthropicModel, wire: AnthropicWireServer
) -> None:
    wire.script(Reply(text=("Hel", "lo, ", "how can I help?"), usage=(40, 9), cache_read=2))
    events = await collect(model, request())
    assert [e.text for e in events if isinstance(e, TextDelta)] == [
        "Hel",
        "lo, ",
        "how can I help?",
    ]
    # Input counts cached input too; output is the cumulative count of message_delta.
    assert [e for e in events if isinstance(e, UsageReport)] == [UsageReport(Usage(42, 9))]
    body = wire.requests[0].body
    assert body["stream"] is True
    assert body["model"] == "claude-wire"
    assert body["max_tokens"] == 4096


async def test_assembles_tool_use_blocks_streamed_as_input_json_deltas(
    model: AnthropicModel, wire: AnthropicWireServer
) -> None:
    wire.script(
        tool_reply(
            ToolUse("toolu_1", "handoff", {"to": "billing", "note": "Refund for order 42"}, 5),
            ToolUse("toolu_2", "lookup", {"order": 42}, 2),
            text=("Let me pass you on.",),
        )
    )
    events = await collect(model, request(tools=(HANDOFF_SPEC,)))
    assert events[0] == TextDelta("Let me pass you on.")
    assert [e for e in events if isinstance(e, ToolCallRequest)] == [
        ToolCallRequest("toolu_1", "handoff", {"to": "billing", "note": "Refund for order 42"}),
        ToolCallRequest("toolu_2", "lookup", {"order": 42}),
    ]


async def test_sends_tools_system_prompts_and_transcript_in_messages_format(
    model: AnthropicModel, wire: AnthropicWireServer
) -> None:
    wire.script(text_reply("ok"))
    transcript = (
        user("I want a refund", "m1"),
        Message(
            id="m2",
            role="assistant",
            parts=(TextPart("Checking."), ToolCallPart("toolu_9", "lookup", {"order": 42})),
        ),
        Message(
            id="m3",
            role="tool",
            parts=(ToolResultPart("toolu_9", "lookup", {"status": "paid"}),),
        ),
        user("And?", "m4"),
    )
    await collect(model, request(*transcript, tools=(HANDOFF_SPEC,)))
    body = wire.requests[0].body
    assert body["system"] == [
        {
            "type": "text",
            "text": "You are the support desk.",
            "cache_control": {"type": "ephemeral"},
        }
    ]
    assert body["tools"] == [
        {
            "name": "handoff",
            "description": "Hand the conversation to another agent",
            "input_schema": dict(HANDOFF_SPEC.parameters),
        }
    ]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "I want a refund"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_9", "name": "lookup", "input": {"order": 42}},
            ],
        },
        {
            # The tool result and the next user message share one user turn.
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_9", "content": '{"status": "paid"}'},
                {"type": "text", "text": "And?", "cache_control": {"type": "ephemeral"}},
            ],
        },
    ]


def test_files_become_image_and_document_blocks_and_errors_are_marked() -> None:
    pdf = base64.b64encode(b"%PDF-1.4").decode()
    notes = base64.b64encode(b"order 42").decode()
    messages = to_anthropic_messages(
        [
            Message(
                id="m1",
                role="user",
                parts=(
                    FilePart("image/png", data="aW1n", name="shot.png"),
                    FilePart("application/pdf", data=pdf),
                    FilePart("text/plain", data=notes, name="notes.txt"),
                    FilePart("application/zip", url="https://example.invalid/a.zip"),
                ),
            ),
            Message(id="m2", role="tool", parts=(ToolResultPart("t1", "x", "boom", True),)),
        ]
    )
    first, result = messages[0]["content"][:4], messages[0]["content"][4]
    assert first[0] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "aW1n"},
    }
    assert first[1]["type"] == "document" and first[1]["source"]["media_type"] == "application/pdf"
    assert first[2]["source"] == {"type": "text", "media_type": "text/plain", "data": "order 42"}
    assert "application/zip" in first[3]["text"]
    # The tool message joins the user turn (roles alternate), marked as an error.
    assert len(messages) == 1
    assert result["type"] == "tool_result"
    results = [result]
    assert results[0]["is_error"] is True


async def test_uses_the_key_of_the_user_who_sent_the_turn(
    model: AnthropicModel, wire: AnthropicWireServer
) -> None:
    wire.script(text_reply("ok"), text_reply("ok"))
    await collect(model, request(keys={"anthropic": "sk-ant-ada"}))
    await collect(model, request())
    assert [sent_key(r.headers) for r in wire.requests] == ["sk-ant-ada", "sk-ant-configured"]


async def test_without_any_key_the_request_is_refused_before_it_is_sent(
    wire: AnthropicWireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    adapter = AnthropicModel("claude-wire", base_url=wire.base_url, max_retries=0)
    with pytest.raises(RemoteError, match="ANTHROPIC_API_KEY") as caught:
        await collect(adapter, request())
    await adapter.aclose()
    assert caught.value.code == "model_error"
    assert wire.requests == []


async def test_key_comes_from_anthropic_api_key_when_not_given(
    wire: AnthropicWireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env")
    adapter = AnthropicModel("claude-wire", base_url=wire.base_url, max_retries=0)
    wire.script(text_reply("ok"))
    await collect(adapter, request())
    await adapter.aclose()
    assert sent_key(wire.requests[0].headers) == "sk-ant-env"


async def test_a_rate_limit_is_retried_after_the_time_retry_after_asks(
    wire: AnthropicWireServer,
) -> None:
    adapter = AnthropicModel("claude-wire", base_url=wire.base_url, api_key="k", max_retries=2)
    wire.script(
        error_reply(429, "Number of requests has exceeded your rate limit", "1"), text_reply("ok")
    )
    events = await collect(adapter, request())
    await adapter.aclose()
    assert TextDelta("ok") in events
    first, second = wire.requests
    assert second.at - first.at >= 0.95  # retry-after: 1, not the SDK's shorter backoff


async def test_an_overloaded_answer_529_is_retried_with_backoff(
    wire: AnthropicWireServer,
) -> None:
    adapter = AnthropicModel("claude-wire", base_url=wire.base_url, api_key="k", max_retries=2)
    wire.script(error_reply(529, "Overloaded"), text_reply("ok"))
    events = await collect(adapter, request())
    await adapter.aclose()
    assert TextDelta("ok") in events
    assert len(wire.requests) == 2


async def test_a_rate_limit_that_outlasts_the_retries_fails_with_model_rate_limited(
    wire: AnthropicWireServer,
) -> None:
    adapter = AnthropicModel("claude-wire", base_url=wire.base_url, api_key="k", max_retries=1)
    wire.script(error_reply(429, "slow down", "0"), error_reply(429, "slow down", "0"))
    with pytest.raises(RemoteError, match="rate_limit_error: slow down") as caught:
        await collect(adapter, request())
    await adapter.aclose()
    assert caught.value.code == "model_rate_limited"
    assert len(wire.requests) == 2


async def test_overloaded_error_event_mid_stream_fails_with_model_overloaded(
    model: AnthropicModel, wire: AnthropicWireServer
) -> None:
    wire.script(Reply(text=("Half an ans", "wer"), stream_error="overloaded_error"))
    with pytest.raises(RemoteError, match="overloaded") as caught:
        await collect(model, request())
    assert caught.value.code == "model_overloaded"


async def test_http_401_says_to_check_the_key(
    model: AnthropicModel, wire: AnthropicWireServer
) -> None:
    wire.script(error_reply(401, "invalid x-api-key"))
    with pytest.raises(RemoteError, match="invalid x-api-key") as caught:
        await collect(model, request())
    assert caught.value.code == "model_error"
    assert caught.value.details["status"] == 401
    assert "check the Anthropic key" in caught.value.message


@pytest.mark.parametrize("cut", ["clean", "abort", "headers"])
async def test_a_stream_cut_mid_way_fails_with_model_stream_cut(
    model: AnthropicModel, wire: AnthropicWireServer, cut: Any
) -> None:
    # "headers": the model began answering (status and headers sent), then the
    # connection dropped before the first event. Whatever type the installed SDK
    # wraps that in, it is a reply cut mid-way, not a server that cannot be reached.
    wire.script(Reply(text=("Half an ans", "wer"), cut=cut))
    with pytest.raises(RemoteError, match="stopped mid-way") as caught:
        await collect(model, request())
    assert caught.value.code == "model_stream_cut"
    assert "check the base URL" not in caught.value.message


async def test_a_refused_connection_says_could_not_connect_not_a_cut_stream() -> None:
    adapter = AnthropicModel("m", base_url="http://127.0.0.1:9", api_key="k", max_retries=0)
    with pytest.raises(RemoteError, match="could not connect") as caught:
        await collect(adapter, request())
    await adapter.aclose()
    assert caught.value.code == "model_error"
    assert "check the base URL" in caught.value.message


@pytest.mark.parametrize("where", ["before", "mid"])
async def test_a_model_that_does_not_answer_in_time_fails_with_model_timeout(
    wire: AnthropicWireServer, where: str
) -> None:
    adapter = AnthropicModel(
        "claude-wire", base_url=wire.base_url, api_key="k", max_retries=0, timeout=0.3
    )
    stall = (
        Reply(text=("a", "b"), stall=1.0)
        if where == "before"
        else Reply(text=("a", "b"), stall_mid=1.0)
    )
    wire.script(stall)
    with pytest.raises(RemoteError, match="did not answer in time") as caught:
        await collect(adapter, request())
    await adapter.aclose()
    assert caught.value.code == "model_timeout"


async def test_tool_input_that_is_not_json_becomes_remote_error(
    model: AnthropicModel, wire: AnthropicWireServer
) -> None:
    wire.script(tool_reply(ToolUse("toolu_1", "handoff", {}, raw_input='{"to": "bil')))
    with pytest.raises(RemoteError, match="not JSON") as caught:
        await collect(model, request(tools=(HANDOFF_SPEC,)))
    assert caught.value.code == "model_error"


def test_importing_the_adapter_module_does_not_import_anthropic() -> None:
    code = (
        "import sys, agent_mem_vault.harness.anthropic_model\n"
        "assert 'anthropic' not in sys.modules, 'anthropic imported at module import'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def support_desk(desk_model: Model, billing_model: Model) -> Any:
    from agent_mem_vault.harness import Routing, define_agent, define_harness

    async def billing_run(ctx: Any) -> str:
        return str(
            await ctx.chat(
                model=billing_model, system_prompts=["You handle refunds, invoices, and payments."]
            )
        )

    billing = define_agent(
        name="billing", description="Handles refunds, invoices, and payments", run=billing_run
    )
    return define_harness(
        name="acme/support",
        model=desk_model,
        system_prompts=["You are the support desk. Hand billing questions to billing."],
        agents=[billing],
        routing=Routing(router=lambda ctx: None),
    )


async def test_harness_turn_hands_off_to_billing_through_the_adapter(
    wire: AnthropicWireServer,
) -> None:
    from agent_mem_vault.harness import HarnessHost, User, memory_persistence

    desk_model = AnthropicModel("claude-desk", base_url=wire.base_url, max_retries=0, api_key="")
    billing_model = AnthropicModel(
        "claude-billing", base_url=wire.base_url, max_retries=0, api_key=""
    )
    note = "Refund for order 42"
    wire.script(
        tool_reply(ToolUse("toolu_h", "handoff", {"to": "billing", "note": note}, 6)),
        text_reply("Your refund for ", "order 42 is on its way."),
    )
    host = HarnessHost(persistence=memory_persistence())
    ada = User(id="ada", tenant_id="acme", keys={"anthropic": "sk-ant-ada"})
    session = await host.open(support_desk(desk_model, billing_model), thread_id="c42", user=ada)
    result = await session.send("I want a refund for order 42.")
    await desk_model.aclose()
    await billing_model.aclose()
    await host.close()

    assert result.status == "completed", result
    assert result.text == "billing:\nYour refund for order 42 is on its way."
    assert [sent_key(r.headers) for r in wire.requests] == ["sk-ant-ada"] * 2
    first, second = (r.body for r in wire.requests)
    assert [t["name"] for t in first["tools"]] == ["handoff"]
    assert second["system"][0]["text"] == "You handle refunds, invoices, and payments."
    # Prompt-cache friendly: billing's first request extends the desk's request,
    # and the cache mark moved to the end of the longer prefix.
    earlier, later = no_cache_marks(first["messages"]), no_cache_marks(second["messages"])
    assert later[: len(earlier)] == earlier
    assert later[1]["content"] == [
        {
            "type": "tool_use",
            "id": "toolu_h",
            "name": "handoff",
            "input": {"to": "billing", "note": note},
        }
    ]
    assert later[2]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "toolu_h",
        "content": "Handed off to billing. billing answers next.",
    }
    assert second["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    snapshot = await session.snapshot()
    assert snapshot.active_agent == "billing"
    assert snapshot.usage.input_tokens == 22


async def test_a_cut_stream_fails_the_turn_and_the_thread_answers_the_next_message(
    wire: AnthropicWireServer,
) -> None:
    from agent_mem_vault.harness import HarnessHost, memory_persistence

    desk_model = AnthropicModel("claude-desk", base_url=wire.base_url, max_retries=0, api_key="k")
    wire.script(Reply(text=("Your refund ", "is"), cut="abort"), text_reply("Refund started."))
    host = HarnessHost(persistence=memory_persistence())
    session = await host.open(support_desk(desk_model, desk_model), thread_id="c43")
    failed = await session.send("I want a refund for order 42.")
    again = await session.send("Are you there?")
    await desk_model.aclose()
    await host.close()

    assert (failed.status, failed.code) == ("failed", "model_stream_cut")
    assert again.status == "completed"
    assert again.text == "Refund started."
    # Nothing of the cut reply reached the transcript the model sees next.
    texts = [b.get("text") for m in wire.requests[1].body["messages"] for b in m["content"]]
    assert "Your refund is" not in texts and "Your refund " not in texts
