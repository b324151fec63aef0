"""The SSE stream of a thread's events, resumable from ``Last-Event-ID``.

Each SSE message carries the event's id as its ``id:`` and the event as JSON
``data:`` (``{"id", "name", "value", "runId"}``). A client that lost its
connection sends the last id it saw (browsers do this by themselves) and the
stream continues with the next event: the ids are the thread log's order, so
nothing is lost and nothing comes twice.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.requests import Request

__all__ = ["PING_SECONDS", "RETRY_MS", "event_stream_response", "render_event"]

PING_SECONDS = 15.0
"""A comment line this often keeps proxies from closing an idle stream."""

RETRY_MS = 1000
"""How soon a browser reconnects after the stream drops."""


def render_event(event: Any) -> dict[str, Any]:
    """The JSON form of one harness event, as ``data:`` of its SSE message."""
    to_json = getattr(event, "to_json", None)
    if callable(to_json):
        body = dict(to_json())
        body["id"] = str(event.id)
        return body
    return {
        "id": str(event.id),
        "name": event.name,
        "value": event.value,
        "runId": getattr(event, "run_id", None),
    }


def event_stream_response(request: Request, session: Any, after: int) -> EventSourceResponse:
    """Stream ``session``'s events after ``after`` until the client leaves."""

    async def messages() -> AsyncIterator[ServerSentEvent]:
        yield ServerSentEvent(comment="stream open", retry=RETRY_MS)
        source = session.events(after=after)
        async with aclosing(source):
            async for event in source:
                body = render_event(event)
                yield ServerSentEvent(
                    id=body["id"], data=json.dumps(body, separators=(",", ":"), default=str)
                )

    return EventSourceResponse(messages(), ping=PING_SECONDS, headers={"Cache-Control": "no-store"})
