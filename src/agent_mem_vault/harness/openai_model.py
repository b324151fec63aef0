"""A ``Model`` for any OpenAI-compatible chat-completions endpoint.

OpenAI, Ollama, vLLM and LM Studio all speak the same ``/chat/completions``
wire protocol, so one adapter on the official ``openai`` SDK serves them all.
It streams: text deltas go out as they arrive, while tool calls, which arrive
as fragments keyed by ``index`` (several calls interleaved, arguments split
across chunks), are assembled and yielded whole once the reply is finished,
because the harness can only run a tool with its complete arguments.

The ``openai`` package (the ``openai`` extra) is imported when an adapter is
constructed, not when this module is imported, so that the CLI and the offline
demo start without it.

    >>> model = OpenAIChatModel("llama3.2", base_url="http://127.0.0.1:11434/v1")
    >>> # async for event in model.stream(request): ...
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.errors import InvalidInputError, RemoteError
from ..core.extras import missing_extra
from .messages import FilePart, Message, TextPart, ToolCallPart, ToolResultPart
from .model import (
    ModelEvent,
    ModelRequest,
    TextDelta,
    ToolCallRequest,
    ToolSpec,
    Usage,
    UsageReport,
)
from .model_errors import MODEL_ERROR, sdk_errors, status_code, stream_cut
from .sdk_model import SdkModel, sdk_client, tool_arguments

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = ["OpenAIChatModel", "to_chat_messages", "to_chat_tools"]

KEY_NAME = "openai"
"""The name under which a user's provider key for this adapter is looked up."""


class OpenAIChatModel(SdkModel):
    """A chat model behind an OpenAI-compatible endpoint, streamed.

    ``api_key`` defaults to ``OPENAI_API_KEY``; a request that carries the
    sender's own key (``ModelRequest.keys["openai"]``) uses that one instead,
    so usage is billed to the user who sent the turn. Without any key the
    ``Authorization`` header is left out, as local servers expect. ``base_url``
    defaults to ``OPENAI_BASE_URL``, then the OpenAI API. ``max_retries``
    (connection errors, 408/409/429/5xx, with backoff) and ``timeout`` (seconds)
    go to the SDK. Pass ``client`` to share an ``openai.AsyncOpenAI`` (its base
    URL, key and retries are then used as they are).

    >>> OpenAIChatModel("gpt-4o-mini").name
    'gpt-4o-mini'
    """

    name: str
    system = "openai"
    """``gen_ai.system`` of this adapter's spans."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        client: AsyncOpenAI | None = None,
        name: str | None = None,
        max_retries: int = 2,
        timeout: float = 120.0,
    ) -> None:
        if not model:
            raise InvalidInputError(
                "OpenAIChatModel needs a model name, e.g. 'gpt-4o-mini' or 'llama3.2'"
            )
        self.model = model
        self.name = name or model
        self._client = client or sdk_client(
            "openai",
            "AsyncOpenAI",
            missing_extra("OpenAIChatModel", "openai"),
            api_key=api_key,
            key_env="OPENAI_API_KEY",
            base_url=base_url,
            max_retries=max_retries,
            timeout=timeout,
        )

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Send one request and stream its reply as ``TextDelta``, ``ToolCallRequest``, usage."""
        import openai

        body: dict[str, Any] = {
            "model": request.model or self.model,
            "messages": to_chat_messages(request.system_prompts, request.messages),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            body["tools"] = to_chat_tools(request.tools)
        user_key = request.keys.get(KEY_NAME)
        headers: dict[str, Any] = {}
        if user_key:
            headers["Authorization"] = f"Bearer {user_key}"
        elif not self.has_key:
            headers["Authorization"] = openai.Omit()
        where = self._describe()
        calls = _ToolCallAssembler()

        def other_error(exc: Exception, answering: bool) -> RemoteError:
            if isinstance(exc, openai.OpenAIError):
                return RemoteError(
                    f"{where} failed: {exc}; retry, and check the server's logs if it "
                    "keeps failing",
                    code=MODEL_ERROR,
                )
            return stream_cut(where, f"{type(exc).__name__}: {exc}")

        had_key = bool(user_key) or self.has_key
        with sdk_errors(
            openai, where, lambda e: _status_error(e, where, had_key), other_error
        ) as call:
            stream = await self._client.chat.completions.create(**body, extra_headers=headers)
            call.answering = True
            # Closing the stream frees the connection when the caller stops early.
            async with stream:
                async for chunk in stream:
                    for event in _chunk_events(chunk, calls, self._describe):
                        yield event
            if not calls.finished:
                raise stream_cut(where, "the stream ended before a finish_reason")
            for tool_call in calls.finish(where):
                yield tool_call


def _chunk_events(
    chunk: Any, calls: _ToolCallAssembler, describe: Callable[[], str]
) -> Iterator[ModelEvent]:
    """The events of one streamed chunk; tool-call fragments are held back in ``calls``."""
    if chunk.usage is not None:
        yield UsageReport(
            Usage(
                input_tokens=chunk.usage.prompt_tokens or 0,
                output_tokens=chunk.usage.completion_tokens or 0,
            )
        )
    for choice in chunk.choices:
        delta = choice.delta
        if delta.content:
            yield TextDelta(delta.content)
        for fragment in delta.tool_calls or ():
            function = fragment.function
            calls.add(
                fragment.index,
                fragment.id,
                function.name if function else None,
                function.arguments if function else None,
            )
        if choice.finish_reason is not None:
            calls.finished = True
            # Usage (when asked for) comes in a later chunk; the calls are
            # complete now, so the harness may start them without waiting.
            yield from calls.finish(describe())


def _status_error(exc: Any, where: str, had_key: bool) -> RemoteError:
    status = int(exc.status_code)
    detail = _error_detail(exc)
    if status in (401, 403):
        hint = (
            "check the OpenAI key of the user who sent the turn, or OPENAI_API_KEY"
            if had_key
            else "no API key was sent; set OPENAI_API_KEY or give the user an 'openai' key"
        )
    elif status == 404:
        hint = "check the model name and that the base URL ends in /v1"
    elif status == 429:
        hint = "the endpoint is rate limited or out of quota even after retries; wait and retry"
    elif status >= 500:
        hint = "the server failed; retry, and check the server's logs if it keeps failing"
    else:
        hint = "the endpoint rejected the request; check the model name and its tool support"
    return RemoteError(
        f"{where} answered HTTP {status}: {detail}; {hint}",
        code=status_code(status),
        status=status,
    )


def _error_detail(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        if isinstance(body.get("message"), str):
            return str(body["message"])
    return str(getattr(exc, "message", exc))


@dataclass(slots=True)
class _PendingCall:
    id: str | None = None
    name: str = ""
    arguments: str = ""


class _ToolCallAssembler:
    """Joins streamed tool-call fragments by their ``index`` into complete calls."""

    def __init__(self) -> None:
        self._pending: dict[int, _PendingCall] = {}
        self.finished = False
        """Set by a ``finish_reason``: a stream that ends without one was cut."""

    def add(self, index: int, id: str | None, name: str | None, arguments: str | None) -> None:
        call = self._pending.setdefault(index, _PendingCall())
        if id and not call.id:
            call.id = id
        if name:
            call.name += name
        if arguments:
            call.arguments += arguments

    def finish(self, where: str) -> list[ToolCallRequest]:
        done = [self._complete(self._pending[i], where) for i in sorted(self._pending)]
        self._pending.clear()
        return done

    @staticmethod
    def _complete(call: _PendingCall, where: str) -> ToolCallRequest:
        if not call.name:
            raise RemoteError(
                f"{where} sent a tool call without a name; the endpoint's tool-call support "
                "looks broken, try another model",
                code=MODEL_ERROR,
            )
        arguments = tool_arguments(
            call.arguments,
            call.name,
            where=where,
            noun="arguments",
            fix="retry the turn or use a model with reliable tool calling",
        )
        # Some local servers send no call ids; the transcript needs one to pair
        # the call with its result.
        return ToolCallRequest(
            id=call.id or f"call_{uuid.uuid4().hex[:24]}", name=call.name, arguments=arguments
        )


def to_chat_tools(tools: Iterable[ToolSpec]) -> list[dict[str, Any]]:
    """Tool specs in the chat-completions ``tools`` format."""
    return [
        {
            "type": "function",
            "function": {
                "name": spec.name,
                "description": spec.description,
                "parameters": dict(spec.parameters),
            },
        }
        for spec in tools
    ]


def to_chat_messages(
    system_prompts: Iterable[str], messages: Iterable[Message]
) -> list[dict[str, Any]]:
    """Our transcript in the chat-completions ``messages`` format.

    Tool results become ``tool`` messages right after the message that holds
    them (the wire format keeps one result per message); files become
    ``image_url`` parts (images) or ``file`` parts (other inline data) in user
    messages, since chat-completions accepts media only from the user.
    """
    out: list[dict[str, Any]] = [{"role": "system", "content": p} for p in system_prompts]
    for message in messages:
        out.extend(_to_chat(message))
    return out


def _to_chat(message: Message) -> list[dict[str, Any]]:
    texts: list[str] = []
    media: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            texts.append(part.text)
        elif isinstance(part, ToolCallPart):
            calls.append(
                {
                    "id": part.id,
                    "type": "function",
                    "function": {
                        "name": part.name,
                        "arguments": json.dumps(dict(part.arguments), ensure_ascii=False),
                    },
                }
            )
        elif isinstance(part, ToolResultPart):
            results.append(
                {
                    "role": "tool",
                    "tool_call_id": part.tool_call_id,
                    "content": _result_text(part),
                }
            )
        elif isinstance(part, FilePart):
            media.append(_file_content(part))
    text = "".join(texts)
    head: list[dict[str, Any]] = []
    if message.role == "user":
        if media:
            content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
            head.append({"role": "user", "content": content + media})
        elif text or not results:
            head.append({"role": "user", "content": text})
    elif message.role == "assistant":
        if media:
            # The wire format takes no media from the assistant; say that a file was
            # there so the model does not think the reply was empty.
            text += "".join(
                f"\n[file: {_file_label(p)}]" for p in message.parts if isinstance(p, FilePart)
            )
        if calls:
            head.append({"role": "assistant", "content": text or None, "tool_calls": calls})
        elif text or not results:
            head.append({"role": "assistant", "content": text})
    elif message.role == "system":
        head.append({"role": "system", "content": text})
    return head + results


def _result_text(part: ToolResultPart) -> str:
    output = part.output
    text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
    return f"Error: {text}" if part.is_error else text


def _file_label(part: FilePart) -> str:
    return part.name or part.url or part.media_type


def _file_content(part: FilePart) -> dict[str, Any]:
    if part.data is None and part.url is None:
        # Nothing to send; an empty image link would fail the whole request.
        return {"type": "text", "text": f"[file: {_file_label(part)} (no content)]"}
    if part.media_type.startswith("image/"):
        url = f"data:{part.media_type};base64,{part.data}" if part.data is not None else part.url
        return {"type": "image_url", "image_url": {"url": url}}
    if part.data is not None and part.media_type.startswith("text/"):
        # Chat-completions takes only PDFs as file parts; a text file goes in as text.
        try:
            decoded = base64.b64decode(part.data, validate=True).decode("utf-8", errors="replace")
        except ValueError:  # binascii.Error: the turn goes on, the model learns why
            return {"type": "text", "text": f"[file: {_file_label(part)} (not valid base64)]"}
        return {"type": "text", "text": f"[file: {_file_label(part)}]\n{decoded}"}
    if part.data is not None:
        file: dict[str, Any] = {"file_data": f"data:{part.media_type};base64,{part.data}"}
        if part.name:
            file["filename"] = part.name
        return {"type": "file", "file": file}
    # A non-image file known only by URL: the endpoint cannot fetch it, so the
    # model at least learns that it exists.
    return {"type": "text", "text": f"[file: {_file_label(part)} ({part.media_type})]"}
