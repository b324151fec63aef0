"""``HarnessClient``: one thread of a harness app, over HTTP (httpx, async).

The client speaks the routes of :func:`agent_mem_vault.server.create_harness_app`
and turns their error bodies back into the package's error tree (same
``code``), so code that calls a remote harness handles errors as it would a
local one. ``events()`` is an endless, reconnecting SSE reader that resumes
from the last event id it saw: a dropped connection loses and repeats nothing.
The event stream itself is read by ``httpx-sse``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx
from httpx_sse import EventSource, SSEError

from ..core.errors import (
    AccessDeniedError,
    AgentMemVaultError,
    ConflictError,
    InvalidInputError,
    NotFoundError,
    RemoteError,
    UnauthenticatedError,
    UnavailableError,
)
from ..harness.log import check_id
from ..harness.messages import Message

__all__ = [
    "ClientEvent",
    "HarnessClient",
    "PendingWait",
    "Snapshot",
    "TurnResult",
]

_BY_STATUS: dict[int, type[AgentMemVaultError]] = {
    400: InvalidInputError,
    401: UnauthenticatedError,
    403: AccessDeniedError,
    404: NotFoundError,
    409: ConflictError,
    413: InvalidInputError,
    503: UnavailableError,
}


@dataclass(frozen=True, slots=True)
class TurnResult:
    """What a ``send`` gave: the turn's text, status and run id (and a rejection code)."""

    text: str
    status: str
    run_id: str | None
    input_id: str | None = None
    code: str | None = None
    message: str | None = None
    refusals: tuple[Mapping[str, Any], ...] = ()
    """Tool calls the harness answered with an error: ``{code, message, tool, toolCallId}``."""


@dataclass(frozen=True, slots=True)
class PendingWait:
    """An open wait of the thread; answer a ``human`` one with ``client.answer``."""

    wait_id: str
    kind: str
    message: str | None


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A thread as its members see it; ``last_event_id`` is where its event stream continues."""

    thread_id: str
    messages: list[Message]
    active_agent: str | None
    pending_waits: list[PendingWait]
    status: str | None = None
    last_event_id: str | None = None


@dataclass(frozen=True, slots=True)
class ClientEvent:
    """One event of the thread (``harness.handoff``, ``message``, ``wait.opened``, …)."""

    id: str
    name: str
    value: Any
    run_id: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict)


class HarnessClient:
    """A thread of one harness served over HTTP.

    ``url`` is the harness's base, e.g. ``http://127.0.0.1:8000/api/desk``.

    >>> client = HarnessClient("http://127.0.0.1:8000/api/desk", "case-42",
    ...                        headers={"authorization": "Bearer token-olga"})
    >>> # snapshot = await client.snapshot()
    >>> # await client.answer(question_id=snapshot.pending_waits[0].wait_id,
    >>> #                     value={"hand_back": "billing"})
    """

    def __init__(
        self,
        url: str,
        thread_id: str,
        headers: Mapping[str, str] | None = None,
        *,
        http: httpx.AsyncClient | None = None,
        timeout: float = 130.0,
        reconnect_delay: float = 0.5,
        max_reconnect_delay: float = 30.0,
    ) -> None:
        self.url = url.rstrip("/")
        self.thread_id = _checked_id(thread_id, "thread_id")
        self.headers = dict(headers or {})
        self.reconnect_delay = reconnect_delay
        self.max_reconnect_delay = max(max_reconnect_delay, reconnect_delay)
        self._own_http = http is None
        # A turn may take as long as the models in it (a summary transfer up to 2 minutes).
        self._http = http or httpx.AsyncClient(timeout=httpx.Timeout(timeout, connect=10.0))

    @property
    def thread_url(self) -> str:
        return f"{self.url}/threads/{self.thread_id}"

    async def aclose(self) -> None:
        if self._own_http:
            await self._http.aclose()

    async def __aenter__(self) -> HarnessClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- calls ---------------------------------------------------------------
    async def send(
        self,
        text: str,
        *,
        as_: Literal["user", "operator"] = "user",
        files: Sequence[Mapping[str, Any]] = (),
        input_id: str | None = None,
    ) -> TurnResult:
        """Send a message; ``as_="operator"`` replies as the person who took over."""
        body: dict[str, Any] = {"text": text, "as": as_}
        if files:
            body["files"] = [dict(f) for f in files]
        if input_id is not None:
            body["inputId"] = input_id
        return _turn(await self._call("POST", "/messages", body))

    async def snapshot(self) -> Snapshot:
        """Messages (each with ``agent``), active agent, pending waits."""
        raw = await self._call("GET", "")
        return Snapshot(
            thread_id=raw["threadId"],
            messages=[Message.from_json(m) for m in raw["messages"]],
            active_agent=raw.get("activeAgent"),
            pending_waits=[
                PendingWait(w["waitId"], w["kind"], w.get("message")) for w in raw["pendingWaits"]
            ],
            status=raw.get("status"),
            last_event_id=raw.get("lastEventId"),
        )

    async def answer(self, question_id: str, value: Any) -> None:
        """Answer a wait: ``{"resume": True}`` or ``{"hand_back": "billing" | "main"}``.

        ``hand_back`` is sent as the wire's ``handBack`` (either is accepted).
        """
        if isinstance(value, Mapping) and "hand_back" in value and "handBack" not in value:
            value = {("handBack" if k == "hand_back" else k): v for k, v in value.items()}
        await self._call("POST", "/answer", {"questionId": question_id, "value": value})

    async def resolve(self, wait_id: str) -> None:
        """End a wait; the agent that answered before the handoff gets the thread back."""
        wait_id = _checked_id(wait_id, "wait_id")
        await self._call("POST", f"/waits/{wait_id}/resolve", {})

    async def cancel(self, wait_id: str) -> None:
        """Cancel a wait; the agent that answered before the handoff gets the thread back."""
        wait_id = _checked_id(wait_id, "wait_id")
        await self._call("POST", f"/waits/{wait_id}/cancel", {})

    async def continue_without_message(self, *, input_id: str | None = None) -> TurnResult:
        """Run a turn on the held user messages (after a person handed the thread back)."""
        body = {"inputId": input_id} if input_id is not None else {}
        return _turn(await self._call("POST", "/continue", body))

    async def share(self, *, user_id: str, role: str) -> None:
        await self._call("POST", "/members", {"userId": user_id, "role": role})

    async def transfer(
        self,
        *,
        to: str,
        note: str = "",
        messages: Literal["none", "summary", "all"] = "none",
        transfer_id: str | None = None,
        thread_id: str | None = None,
    ) -> str:
        """Move the conversation to harness ``to`` (its key); returns the target thread id."""
        body: dict[str, Any] = {"to": to, "note": note, "messages": messages}
        if transfer_id is not None:
            body["transferId"] = transfer_id
        if thread_id is not None:
            body["threadId"] = thread_id
        raw = await self._call("POST", "/transfer", body)
        return str(raw["threadId"])

    async def _call(self, method: str, path: str, body: Any = None) -> Any:
        try:
            response = await self._http.request(
                method, self.thread_url + path, json=body, headers=self.headers
            )
        except httpx.HTTPError as exc:
            raise RemoteError(f"the harness at {self.url} did not answer: {exc}") from exc
        if response.status_code >= 400:
            raise _error(response.status_code, response.content)
        return response.json()

    # -- events --------------------------------------------------------------
    async def events(self, *, after: str | None = None) -> AsyncIterator[ClientEvent]:
        """The thread's events after ``after``, live, reconnecting with ``Last-Event-ID``.

        Ends only when the caller stops iterating. A 4xx answer (no access,
        unknown thread) raises at once. A dropped connection, a refused one or a
        5xx answer is retried from the last event id seen, after
        ``reconnect_delay`` seconds, doubling on each failure in a row up to
        ``max_reconnect_delay`` (a server that is down is not hammered); the
        delay starts over once a stream has been opened.
        """
        last = after
        failures = 0
        while True:
            headers = dict(self.headers)
            if last is not None:
                headers["last-event-id"] = last
            try:
                async with self._http.stream(
                    "GET",
                    self.thread_url + "/events",
                    headers=headers,
                    timeout=httpx.Timeout(10.0, read=None),
                ) as response:
                    if 400 <= response.status_code < 500:
                        raise _error(response.status_code, await response.aread())
                    if response.status_code >= 500:
                        # A server restarting or overloaded: try again from ``last``.
                        await response.aread()
                        raise httpx.HTTPStatusError(
                            "server error", request=response.request, response=response
                        )
                    failures = 0
                    async for message in EventSource(response).aiter_sse():
                        if not message.data:
                            continue  # an id or a keep-alive without data: no event
                        event = _event(message.data)
                        if message.id:
                            last = message.id
                        yield event
            except SSEError as exc:
                raise RemoteError(
                    f"the answer from {self.url} is not an event stream ({exc}); "
                    f"check that the client's url is {_HARNESS_BASE}",
                    code="bad_event",
                ) from exc
            except httpx.HTTPError:
                pass  # the connection dropped or was refused: reconnect below, from ``last``
            await asyncio.sleep(
                reconnect_delay(failures, self.reconnect_delay, self.max_reconnect_delay)
            )
            failures += 1


def reconnect_delay(failures: int, first: float, most: float) -> float:
    """Seconds to wait before a reconnect: ``first`` doubled for each failure in a row,
    at most ``most``.

    >>> [reconnect_delay(n, 0.5, 4.0) for n in range(6)]
    [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    """
    return float(min(first * 2 ** min(failures, 32), most))


def _checked_id(value: str, name: str) -> str:
    """Ids go into URL paths: only what the server accepts, and never ``.`` or ``..``
    (which a URL would resolve), so no id can reach another route (``../members``)."""
    if value in (".", ".."):
        raise InvalidInputError(
            f"{name} {value!r} is not valid: an id cannot be '.' or '..'", code="invalid_id"
        )
    return check_id(name, value, code="invalid_id")


def _turn(raw: Mapping[str, Any]) -> TurnResult:
    return TurnResult(
        text=raw.get("text", ""),
        status=raw["status"],
        run_id=raw.get("runId"),
        input_id=raw.get("inputId"),
        code=raw.get("code"),
        message=raw.get("message"),
        refusals=tuple(raw.get("refusals") or ()),
    )


_HARNESS_BASE = "a harness app's base, e.g. http://host/api/desk"


def _event(data: str) -> ClientEvent:
    try:
        raw = json.loads(data)
    except ValueError:
        raw = None
    if not isinstance(raw, dict):
        raise RemoteError(
            f"the event stream sent data that is not an event ({data[:80]!r}); check that the "
            f"client's url is {_HARNESS_BASE}",
            code="bad_event",
        )
    return ClientEvent(
        id=str(raw.get("id")),
        name=str(raw.get("name")),
        value=raw.get("value"),
        run_id=raw.get("runId"),
        raw=raw,
    )


def _error(status: int, content: bytes) -> AgentMemVaultError:
    try:
        body = json.loads(content)
        code, message = str(body["code"]), str(body["message"])
        details = dict(body.get("details") or {})
    except (ValueError, KeyError, TypeError):
        code, message, details = f"http_{status}", content[:200].decode(errors="replace"), {}
    cls = _BY_STATUS.get(status, RemoteError)
    extra = {k: v for k, v in details.items() if k not in ("code", "status")}
    return cls(message, code=code, status=status, **extra)
