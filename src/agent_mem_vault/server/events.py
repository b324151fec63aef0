"""The SSE stream of a thread's events, resumable from ``Last-Event-ID``.

Each SSE message carries the event's id as its ``id:`` and the event as JSON
``data:`` (``Event.to_json()``: ``{"id", "name", "value", "at", "runId"}``). A
client that lost its connection sends the last id it saw (browsers do this by
themselves) and the stream continues with the next event: the ids are the
thread log's order, so nothing is lost and nothing comes twice.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import TYPE_CHECKING

from sse_starlette import EventSourceResponse, ServerSentEvent
from sse_starlette.sse import SendTimeoutError
from starlette.types import Message, Receive, Scope, Send

if TYPE_CHECKING:
    from ..harness.session import Session

__all__ = [
    "PING_SECONDS",
    "RETRY_MS",
    "SEND_TIMEOUT_SECONDS",
    "event_stream_response",
]

log = logging.getLogger(__name__)

PING_SECONDS = 15.0
"""A comment line this often keeps proxies from closing an idle stream."""

RETRY_MS = 1000
"""How soon a browser reconnects after the stream drops."""

SEND_TIMEOUT_SECONDS = 30.0
"""A client that takes no data for this long is dropped.

The stream is pulled only as fast as the client reads, so a client that stops
reading would hold its connection and task forever; dropping it costs it
nothing, since it resumes from its last event id.
"""


class _EventStream(EventSourceResponse):
    """An SSE response that always ends its HTTP response, and drops a stalled client quietly.

    When the server shuts down (Ctrl-C on ``demo support``), sse-starlette stops
    the stream by cancelling it, before its last body message: the server would
    then report an ASGI callable that returned without completing its response.
    The stream's end is sent here instead, so the browser sees a closed stream
    (and reconnects to the next server from its last event id).
    """

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        ended = False

        async def tracked(message: Message) -> None:
            nonlocal ended
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                ended = True
            await send(message)

        stalled = False
        try:
            await super().__call__(scope, receive, tracked)
        except* SendTimeoutError:
            stalled = True
            log.info("dropped an event stream whose client read nothing for %ss", self.send_timeout)
        if not ended and not stalled:
            with contextlib.suppress(OSError, RuntimeError):
                await send({"type": "http.response.body", "body": b"", "more_body": False})


def event_stream_response(
    session: Session, after: int, *, send_timeout: float = SEND_TIMEOUT_SECONDS
) -> EventSourceResponse:
    """Stream ``session``'s events after ``after`` until the client leaves or stalls."""

    async def messages() -> AsyncIterator[ServerSentEvent]:
        yield ServerSentEvent(comment="stream open", retry=RETRY_MS)
        source = session.events(after=after)
        async with aclosing(source):
            async for event in source:
                body = event.to_json()
                yield ServerSentEvent(
                    id=body["id"], data=json.dumps(body, separators=(",", ":"), default=str)
                )

    return _EventStream(
        messages(),
        ping=PING_SECONDS,
        send_timeout=send_timeout,
        headers={"Cache-Control": "no-store"},
    )
