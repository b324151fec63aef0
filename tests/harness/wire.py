"""What the model-adapter tests share: a local wire server's machinery, and requests.

Each provider's server (:mod:`.anthropic_wire_server`, :mod:`.openai_wire_server`)
says how its API streams a reply and fails; the rest is the same for both and is
here: scripted replies taken in order, every request recorded, uvicorn in a
thread on 127.0.0.1 on an ephemeral port; and the requests the tests send.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Protocol, Self, TypeVar

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agent_mem_vault.harness.messages import Message, TextPart
from agent_mem_vault.harness.model import Model, ModelEvent, ModelRequest, ToolSpec
from agent_mem_vault.harness.sdk_model import SdkModel

HANDOFF_SPEC = ToolSpec(
    name="handoff",
    description="Hand the conversation to another agent",
    parameters={
        "type": "object",
        "properties": {"to": {"enum": ["billing"]}, "note": {"type": "string"}},
        "required": ["to"],
    },
)


def user(text: str, id: str = "m1") -> Message:
    return Message(id=id, role="user", parts=(TextPart(text),))


def request(*messages: Message, **kw: Any) -> ModelRequest:
    return ModelRequest(
        system_prompts=("You are the support desk.",),
        messages=messages or (user("hello"),),
        **kw,
    )


async def collect(model: Model, req: ModelRequest) -> list[ModelEvent]:
    return [event async for event in model.stream(req)]


S = TypeVar("S", bound="LocalWireServer[Any]")
M = TypeVar("M", bound="SdkModel")


def adapter_fixtures(
    server_class: Callable[[], S], adapter: Callable[[S], M]
) -> tuple[Any, Any, Any]:
    """The fixtures of an adapter's tests: ``server`` (one per module), ``wire`` (that
    server, reset for each test) and ``model`` (``adapter(wire)``, closed after)."""

    @pytest.fixture(scope="module")
    def server() -> Iterator[S]:
        yield from server_class().serving()

    @pytest.fixture
    def wire(server: S) -> S:
        return server.reset()

    @pytest.fixture
    async def model(wire: S) -> AsyncIterator[M]:
        made = adapter(wire)
        yield made
        await made.aclose()

    return server, wire, model


@dataclass
class RecordedRequest:
    headers: dict[str, str]
    body: dict[str, Any]
    at: float = 0.0


def split_text(text: str, pieces: int) -> list[str]:
    """``text`` in about ``pieces`` parts, as a provider streams it."""
    size = max(1, -(-len(text) // max(1, pieces)))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


class ScriptedReply(Protocol):
    """What every scripted reply says besides its content: fail, or wait first."""

    @property
    def status(self) -> int: ...

    @property
    def error(self) -> str: ...

    @property
    def retry_after(self) -> str | None: ...

    @property
    def stall(self) -> float: ...


R = TypeVar("R", bound=ScriptedReply)


@dataclass
class LocalWireServer(Generic[R]):
    """A provider's endpoint on 127.0.0.1; ``base_url`` is what an SDK client is given."""

    path: ClassVar[str]
    """The route the API answers (``POST``)."""
    url_suffix: ClassVar[str] = ""
    """What ``base_url`` ends in after the port (``/v1`` where the SDK expects it)."""

    replies: deque[R] = field(default_factory=deque)
    requests: list[RecordedRequest] = field(default_factory=list)
    base_url: str = ""
    _server: uvicorn.Server | None = None
    _thread: threading.Thread | None = None

    def script(self, *replies: R) -> None:
        self.replies.extend(replies)

    def reset(self) -> Self:
        """Nothing scripted, nothing recorded: as a test finds it."""
        self.replies.clear()
        self.requests.clear()
        return self

    def serving(self) -> Iterator[Self]:
        """Started, for a fixture to yield from; stopped after it."""
        self.start()
        try:
            yield self
        finally:
            self.stop()

    @property
    def app(self) -> Starlette:
        return Starlette(routes=[Route(self.path, self._handle, methods=["POST"])])

    async def _handle(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(RecordedRequest(dict(request.headers), body, time.monotonic()))
        if not self.replies:
            return self.error(500, "wire server: no scripted reply left for this request")
        reply = self.replies.popleft()
        if reply.stall:
            await asyncio.sleep(reply.stall)
        if reply.status != 200:
            return self.error(reply.status, reply.error, reply.retry_after)
        return self.answer(body, reply)

    def answer(self, body: dict[str, Any], reply: R) -> Response:
        """The response to a request that succeeds, as the provider streams it."""
        raise NotImplementedError

    def error(self, status: int, message: str, retry_after: str | None = None) -> Response:
        """A failure as the provider answers it: ``status`` with its error body."""
        raise NotImplementedError

    def start(self) -> Self:
        config = uvicorn.Config(
            self.app, host="127.0.0.1", port=0, log_level="critical", lifespan="off", ws="none"
        )
        self._server = server = uvicorn.Server(config)
        self._thread = threading.Thread(target=server.run, name=type(self).__name__, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the wire server did not start")
            time.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        self.base_url = f"http://127.0.0.1:{port}{self.url_suffix}"
        return self

    def stop(self) -> None:
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=10)
