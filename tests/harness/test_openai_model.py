"""The OpenAI-compatible adapter against a local server that speaks the chat-completions wire."""

from __future__ import annotations

import base64
import subprocess
import sys

import pytest

from agent_mem_vault.core.errors import InvalidInputError, RemoteError
from agent_mem_vault.harness.messages import (
    FilePart,
    Message,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from agent_mem_vault.harness.model import (
    Model,
    ModelRequest,
    TextDelta,
    ToolCallRequest,
    Usage,
    UsageReport,
)
from agent_mem_vault.harness.openai_model import OpenAIChatModel, to_chat_messages

from .openai_wire_server import (
    ScriptedCall,
    WireServer,
    error_reply,
    text_reply,
    tool_call_reply,
)
from .wire import HANDOFF_SPEC, adapter_fixtures, collect, request, user

server, wire, model = adapter_fixtures(
    WireServer,
    lambda wire: OpenAIChatModel(
        "wire-model", base_url=wire.base_url, api_key="sk-configured", max_retries=0
    ),
)


async def test_adapter_implements_the_model_protocol(model: OpenAIChatModel) -> None:
    assert isinstance(model, Model)
    assert model.name == "wire-model"
    named = OpenAIChatModel("m", base_url="http://127.0.0.1:9/v1", api_key="k", name="local")
    assert named.name == "local"
    await named.aclose()


def test_a_model_name_is_required() -> None:
    with pytest.raises(InvalidInputError, match="needs a model name"):
        OpenAIChatModel("", base_url="http://127.0.0.1:9/v1", api_key="k")


async def test_streams_text_deltas_in_order(model: OpenAIChatModel, wire: WireServer) -> None:
    wire.script(text_reply("Hel", "lo, ", "how can I help?"))
    events = await collect(model, request())
    assert [e.text for e in events if isinstance(e, TextDelta)] == [
        "Hel",
        "lo, ",
        "how can I help?",
    ]
    assert not [e for e in events if isinstance(e, ToolCallRequest)]


async def test_asks_for_a_stream_with_usage_and_reports_usage(
    model: OpenAIChatModel, wire: WireServer
) -> None:
    wire.script(text_reply("ok", usage=(42, 3)))
    events = await collect(model, request())
    assert [e for e in events if isinstance(e, UsageReport)] == [UsageReport(Usage(42, 3))]
    body = wire.requests[0].body
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["model"] == "wire-model"


async def test_request_model_name_overrides_the_configured_one(
    model: OpenAIChatModel, wire: WireServer
) -> None:
    wire.script(text_reply("ok"))
    await collect(model, request(model="other-model"))
    assert wire.requests[0].body["model"] == "other-model"


async def test_assembles_a_tool_call_streamed_in_fragments(
    model: OpenAIChatModel, wire: WireServer
) -> None:
    args = {"to": "billing", "note": "Refund for order 42, the user was charged twice."}
    wire.script(tool_call_reply(ScriptedCall("call_1", "handoff", args, pieces=7)))
    events = await collect(model, request(tools=(HANDOFF_SPEC,)))
    assert [e for e in events if isinstance(e, ToolCallRequest)] == [
        ToolCallRequest(id="call_1", name="handoff", arguments=args)
    ]


async def test_assembles_two_parallel_tool_calls_by_index(
    model: OpenAIChatModel, wire: WireServer
) -> None:
    first = {"city": "Paris", "unit": "celsius"}
    second = {"order": "42", "reason": "charged twice for the same order"}
    wire.script(
        tool_call_reply(
            ScriptedCall("call_a", "weather", first, pieces=4),
            ScriptedCall("call_b", "refund", second, pieces=5),
        )
    )
    events = await collect(model, request(tools=(HANDOFF_SPEC,)))
    calls = [e for e in events if isinstance(e, ToolCallRequest)]
    assert calls == [
        ToolCallRequest(id="call_a", name="weather", arguments=first),
        ToolCallRequest(id="call_b", name="refund", arguments=second),
    ]
    # Calls come before the usage chunk that follows the finish reason.
    assert isinstance(events[-1], UsageReport)


async def test_text_and_tool_call_in_one_reply(model: OpenAIChatModel, wire: WireServer) -> None:
    from .openai_wire_server import Reply

    wire.script(Reply(text=("Let me ", "check."), calls=(ScriptedCall("c1", "lookup", {}, 1),)))
    events = await collect(model, request())
    assert [type(e) for e in events] == [TextDelta, TextDelta, ToolCallRequest, UsageReport]
    assert events[2] == ToolCallRequest(id="c1", name="lookup", arguments={})


async def test_sends_tools_as_functions(model: OpenAIChatModel, wire: WireServer) -> None:
    wire.script(text_reply("ok"))
    await collect(model, request(tools=(HANDOFF_SPEC,)))
    assert wire.requests[0].body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "handoff",
                "description": "Hand the conversation to another agent",
                "parameters": dict(HANDOFF_SPEC.parameters),
            },
        }
    ]


async def test_sends_no_tools_field_without_tools(model: OpenAIChatModel, wire: WireServer) -> None:
    wire.script(text_reply("ok"))
    await collect(model, request())
    assert "tools" not in wire.requests[0].body


async def test_sends_system_prompts_and_transcript_in_wire_format(
    model: OpenAIChatModel, wire: WireServer
) -> None:
    transcript = (
        user("I want a refund for order 42."),
        Message(
            id="m2",
            role="assistant",
            parts=(
                TextPart("Passing you on."),
                ToolCallPart(id="call_1", name="handoff", arguments={"to": "billing", "note": "n"}),
            ),
        ),
        Message(
            id="m3",
            role="tool",
            parts=(
                ToolResultPart(
                    tool_call_id="call_1",
                    name="handoff",
                    output="Handed off to billing. billing answers next.",
                ),
            ),
        ),
        Message(
            id="m4",
            role="assistant",
            parts=(TextPart("Refund done."),),
            metadata={"harness": {"agent": "billing"}},
        ),
    )
    wire.script(text_reply("ok"))
    await collect(model, ModelRequest(system_prompts=("A.", "B."), messages=transcript))
    assert wire.requests[0].body["messages"] == [
        {"role": "system", "content": "A."},
        {"role": "system", "content": "B."},
        {"role": "user", "content": "I want a refund for order 42."},
        {
            "role": "assistant",
            "content": "Passing you on.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "handoff", "arguments": '{"to": "billing", "note": "n"}'},
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_1",
            "content": "Handed off to billing. billing answers next.",
        },
        {"role": "assistant", "content": "Refund done."},
    ]


def test_tool_results_that_are_not_text_are_sent_as_json_and_errors_are_marked() -> None:
    message = Message(
        id="t",
        role="tool",
        parts=(
            ToolResultPart(tool_call_id="a", name="x", output={"total": 3}),
            ToolResultPart(tool_call_id="b", name="y", output="no such order", is_error=True),
        ),
    )
    assert to_chat_messages((), (message,)) == [
        {"role": "tool", "tool_call_id": "a", "content": '{"total": 3}'},
        {"role": "tool", "tool_call_id": "b", "content": "Error: no such order"},
    ]


def test_file_parts_become_image_urls_files_or_text() -> None:
    png = base64.b64encode(b"\x89PNG...").decode()
    notes = base64.b64encode(b"order 42").decode()
    message = Message(
        id="f",
        role="user",
        parts=(
            TextPart("See these."),
            FilePart(media_type="image/png", data=png),
            FilePart(media_type="image/jpeg", url="https://example.invalid/a.jpg"),
            FilePart(media_type="application/pdf", data="JVBERi0=", name="invoice.pdf"),
            FilePart(media_type="text/plain", data=notes, name="notes.txt"),
            FilePart(
                media_type="application/zip", url="https://example.invalid/x.zip", name="x.zip"
            ),
        ),
    )
    [wire_message] = to_chat_messages((), (message,))
    assert wire_message["content"] == [
        {"type": "text", "text": "See these."},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}"}},
        {"type": "image_url", "image_url": {"url": "https://example.invalid/a.jpg"}},
        {
            "type": "file",
            "file": {
                "file_data": "data:application/pdf;base64,JVBERi0=",
                "filename": "invoice.pdf",
            },
        },
        {"type": "text", "text": "[file: notes.txt]\norder 42"},
        {"type": "text", "text": "[file: x.zip (application/zip)]"},
    ]


def test_a_file_without_content_or_with_bad_base64_is_named_in_text_not_a_crash() -> None:
    message = Message(
        id="f",
        role="user",
        parts=(
            TextPart("Look."),
            FilePart(media_type="image/png", name="empty.png"),
            FilePart(media_type="text/plain", data="not base64!", name="notes.txt"),
        ),
    )
    [wire_message] = to_chat_messages((), (message,))
    assert wire_message["content"] == [
        {"type": "text", "text": "Look."},
        {"type": "text", "text": "[file: empty.png (no content)]"},
        {"type": "text", "text": "[file: notes.txt (not valid base64)]"},
    ]


def test_files_in_assistant_messages_are_named_in_text() -> None:
    message = Message(
        id="a",
        role="assistant",
        parts=(
            TextPart("Here is your invoice."),
            FilePart(media_type="application/pdf", name="inv.pdf"),
        ),
    )
    assert to_chat_messages((), (message,)) == [
        {"role": "assistant", "content": "Here is your invoice.\n[file: inv.pdf]"}
    ]


async def test_uses_the_key_of_the_user_who_sent_the_turn(
    model: OpenAIChatModel, wire: WireServer
) -> None:
    wire.script(text_reply("one"), text_reply("two"))
    await collect(model, request(keys={"openai": "sk-ada"}))
    await collect(model, request())
    assert wire.requests[0].headers["authorization"] == "Bearer sk-ada"
    assert wire.requests[1].headers["authorization"] == "Bearer sk-configured"


async def test_key_comes_from_openai_api_key_when_not_given(
    wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    adapter = OpenAIChatModel("wire-model", base_url=wire.base_url, max_retries=0)
    wire.script(text_reply("ok"))
    await collect(adapter, request())
    await adapter.aclose()
    assert wire.requests[0].headers["authorization"] == "Bearer sk-from-env"


async def test_a_client_passed_in_is_used_as_it_is(wire: WireServer) -> None:
    import openai

    client = openai.AsyncOpenAI(api_key="sk-shared", base_url=wire.base_url, max_retries=0)
    adapter = OpenAIChatModel("wire-model", client=client)
    wire.script(text_reply("ok"))
    await collect(adapter, request())
    await adapter.aclose()
    assert adapter.base_url == wire.base_url + "/"
    assert wire.requests[0].headers["authorization"] == "Bearer sk-shared"


async def test_sends_no_authorization_header_without_any_key(
    wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Local servers (Ollama, vLLM, LM Studio) need no key at all.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    adapter = OpenAIChatModel("llama3.2", base_url=wire.base_url, max_retries=0)
    wire.script(text_reply("ok"))
    events = await collect(adapter, request())
    await adapter.aclose()
    assert "authorization" not in wire.requests[0].headers
    assert TextDelta("ok") in events


async def test_http_401_becomes_remote_error_that_says_to_check_the_key(
    model: OpenAIChatModel, wire: WireServer
) -> None:
    wire.script(error_reply(401, "Incorrect API key provided"))
    with pytest.raises(RemoteError) as caught:
        await collect(model, request(keys={"openai": "sk-wrong"}))
    error = caught.value
    assert error.code == "model_error"
    assert error.details["status"] == 401
    assert "HTTP 401" in error.message
    assert "Incorrect API key provided" in error.message
    assert "key" in error.message.split(";", 1)[1]


async def test_http_500_becomes_remote_error_that_says_to_retry(
    model: OpenAIChatModel, wire: WireServer
) -> None:
    wire.script(error_reply(500, "upstream exploded"))
    with pytest.raises(RemoteError) as caught:
        await collect(model, request())
    assert caught.value.code == "model_error"
    assert caught.value.details["status"] == 500
    assert "upstream exploded" in caught.value.message
    assert "retry" in caught.value.message
    assert len(wire.requests) == 1


async def test_error_in_the_middle_of_the_stream_becomes_remote_error(
    model: OpenAIChatModel, wire: WireServer
) -> None:
    from .openai_wire_server import Reply

    wire.script(Reply(text=("Half an ans",), stream_error="the GPU fell over"))
    with pytest.raises(RemoteError, match="the GPU fell over") as caught:
        await collect(model, request())
    assert caught.value.code == "model_error"


async def test_unknown_model_404_says_to_check_the_model_name(
    model: OpenAIChatModel, wire: WireServer
) -> None:
    wire.script(error_reply(404, "model 'nope' not found"))
    with pytest.raises(RemoteError, match="check the model name"):
        await collect(model, request())


async def test_unreachable_endpoint_becomes_remote_error() -> None:
    adapter = OpenAIChatModel("m", base_url="http://127.0.0.1:9/v1", api_key="k", max_retries=0)
    with pytest.raises(RemoteError, match="could not connect") as caught:
        await collect(adapter, request())
    await adapter.aclose()
    assert caught.value.code == "model_error"


async def test_tool_arguments_that_are_not_json_become_remote_error(
    model: OpenAIChatModel, wire: WireServer
) -> None:
    wire.script(tool_call_reply(ScriptedCall("c", "handoff", {}, raw_arguments='{"to": "bil')))
    with pytest.raises(RemoteError, match="not JSON") as caught:
        await collect(model, request(tools=(HANDOFF_SPEC,)))
    assert caught.value.code == "model_error"


async def test_tool_call_without_an_id_gets_one(model: OpenAIChatModel, wire: WireServer) -> None:
    wire.script(tool_call_reply(ScriptedCall("", "lookup", {"q": 1})))
    [call] = [e for e in await collect(model, request()) if isinstance(e, ToolCallRequest)]
    assert call.id.startswith("call_")
    assert call.arguments == {"q": 1}


def test_importing_the_adapter_module_does_not_import_openai() -> None:
    code = (
        "import sys, agent_mem_vault.harness.openai_model\n"
        "assert 'openai' not in sys.modules, 'openai imported at module import'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


async def test_harness_turn_hands_off_to_billing_through_the_adapter(wire: WireServer) -> None:
    from agent_mem_vault.harness import (
        HarnessHost,
        Routing,
        User,
        define_agent,
        define_harness,
        memory_persistence,
    )

    desk_model = OpenAIChatModel("desk-model", base_url=wire.base_url, api_key="", max_retries=0)
    billing_model = OpenAIChatModel(
        "billing-model", base_url=wire.base_url, api_key="", max_retries=0
    )

    async def billing_run(ctx: object) -> str:
        return str(
            await ctx.chat(  # type: ignore[attr-defined]
                model=billing_model,
                system_prompts=["You handle refunds, invoices, and payments."],
            )
        )

    billing = define_agent(
        name="billing", description="Handles refunds, invoices, and payments", run=billing_run
    )
    desk = define_harness(
        name="acme/support",
        model=desk_model,
        system_prompts=["You are the support desk. Hand billing questions to billing."],
        agents=[billing],
        routing=Routing(router=lambda ctx: None),
    )
    note = "Refund for order 42"
    wire.script(
        tool_call_reply(ScriptedCall("call_h", "handoff", {"to": "billing", "note": note}, 6)),
        text_reply("Your refund for ", "order 42 is on its way."),
    )
    host = HarnessHost(persistence=memory_persistence())
    ada = User(id="ada", tenant_id="acme", keys={"openai": "sk-ada"})
    session = await host.open(desk, thread_id="case-42", user=ada)
    result = await session.send("I want a refund for order 42.")
    await desk_model.aclose()
    await billing_model.aclose()

    assert result.status == "completed", result
    assert result.text == "billing:\nYour refund for order 42 is on its way."
    # Both model calls were billed to Ada, the user who sent the turn.
    assert [r.headers["authorization"] for r in wire.requests] == ["Bearer sk-ada"] * 2
    first, second = (r.body for r in wire.requests)
    assert first["model"] == "desk-model"
    assert [t["function"]["name"] for t in first["tools"]] == ["handoff"]
    # Billing gets its own system prompt (not the desk's), the saved transcript
    # with the desk's handoff call and its result, and a handoff tool back to main.
    assert second["model"] == "billing-model"
    assert second["messages"][0] == {
        "role": "system",
        "content": "You handle refunds, invoices, and payments.",
    }
    assert all("support desk" not in str(m.get("content")) for m in second["messages"])
    call_message = second["messages"][2]
    assert call_message["tool_calls"][0]["id"] == "call_h"
    assert json_args(call_message) == {"to": "billing", "note": note}
    assert second["messages"][3] == {
        "role": "tool",
        "tool_call_id": "call_h",
        "content": "Handed off to billing. billing answers next.",
    }
    [handoff_tool] = second["tools"]
    assert "main" in str(handoff_tool["function"]["parameters"])
    snapshot = await session.snapshot()
    assert snapshot.active_agent == "billing"
    assert [m.agent for m in snapshot.messages if m.role == "assistant"] == [None, "billing"]
    assert snapshot.usage.input_tokens == 22


def json_args(message: dict[str, object]) -> object:
    import json

    calls = message["tool_calls"]
    assert isinstance(calls, list)
    return json.loads(calls[0]["function"]["arguments"])


async def test_a_rate_limit_is_retried_after_the_time_retry_after_asks(wire: WireServer) -> None:
    adapter = OpenAIChatModel("wire-model", base_url=wire.base_url, api_key="k", max_retries=2)
    wire.script(error_reply(429, "Rate limit reached", retry_after="1"), text_reply("ok"))
    events = await collect(adapter, request())
    await adapter.aclose()
    assert TextDelta("ok") in events
    first, second = wire.requests
    assert second.at - first.at >= 0.95  # retry-after: 1, not the SDK's shorter backoff


async def test_an_overloaded_answer_503_is_retried_with_backoff(wire: WireServer) -> None:
    adapter = OpenAIChatModel("wire-model", base_url=wire.base_url, api_key="k", max_retries=2)
    wire.script(error_reply(503, "overloaded"), text_reply("ok"))
    events = await collect(adapter, request())
    await adapter.aclose()
    assert TextDelta("ok") in events
    assert len(wire.requests) == 2


async def test_a_rate_limit_that_outlasts_the_retries_fails_with_model_rate_limited(
    wire: WireServer,
) -> None:
    adapter = OpenAIChatModel("wire-model", base_url=wire.base_url, api_key="k", max_retries=1)
    wire.script(error_reply(429, "slow down", "0"), error_reply(429, "slow down", "0"))
    with pytest.raises(RemoteError, match="slow down") as caught:
        await collect(adapter, request())
    await adapter.aclose()
    assert caught.value.code == "model_rate_limited"
    assert len(wire.requests) == 2


@pytest.mark.parametrize("cut", ["clean", "abort", "headers"])
async def test_a_stream_cut_mid_way_fails_with_model_stream_cut(
    model: OpenAIChatModel, wire: WireServer, cut: str
) -> None:
    from .openai_wire_server import Reply

    # "headers": the status and headers came, then the connection dropped before
    # the first chunk: the model had begun answering, so the reply was cut.
    wire.script(Reply(text=("Half an ans", "wer"), cut=cut))
    with pytest.raises(RemoteError, match="stopped mid-way") as caught:
        await collect(model, request())
    assert caught.value.code == "model_stream_cut"
    assert "check the base URL" not in caught.value.message


async def test_a_model_that_does_not_answer_in_time_fails_with_model_timeout(
    wire: WireServer,
) -> None:
    from .openai_wire_server import Reply

    adapter = OpenAIChatModel(
        "wire-model", base_url=wire.base_url, api_key="k", max_retries=0, timeout=0.3
    )
    wire.script(Reply(text=("late",), stall=1.0))
    with pytest.raises(RemoteError, match="did not answer in time") as caught:
        await collect(adapter, request())
    await adapter.aclose()
    assert caught.value.code == "model_timeout"


async def test_a_timed_out_turn_fails_and_the_thread_answers_the_next_message(
    wire: WireServer,
) -> None:
    from agent_mem_vault.harness import HarnessHost, define_harness, memory_persistence

    from .openai_wire_server import Reply

    desk = OpenAIChatModel("desk", base_url=wire.base_url, api_key="k", max_retries=0, timeout=0.3)
    harness = define_harness(name="acme/support", model=desk, system_prompts=["Support desk."])
    wire.script(Reply(text=("late",), stall=1.0), text_reply("Here now."))
    host = HarnessHost(persistence=memory_persistence())
    session = await host.open(harness, thread_id="c44")
    failed = await session.send("Hello?")
    again = await session.send("Hello again?")
    await desk.aclose()
    await host.close()
    assert (failed.status, failed.code) == ("failed", "model_timeout")
    assert (again.status, again.text) == ("completed", "Here now.")
    roles = [m["role"] for m in wire.requests[-1].body["messages"]]
    assert roles == ["system", "user", "user"]  # nothing of the failed reply was kept
