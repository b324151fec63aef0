"""A small parser for ``text/event-stream``: lines in, complete events out.

Kept pure (no I/O) so that the reconnecting reader in :mod:`.client` and the
tests share it. It follows the WHATWG rules that matter here: ``id:``,
``data:`` (multi-line joined by ``\\n``), ``event:``, comments starting with
``:``, and a blank line that dispatches. ``retry:`` is ignored: the client's
own backoff decides when to reconnect.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SseMessage", "SseParser"]


@dataclass(frozen=True, slots=True)
class SseMessage:
    """One dispatched SSE message."""

    data: str
    id: str | None = None
    event: str = "message"


class SseParser:
    """Feed lines (without their line ending) with :meth:`feed`; it returns a message or None."""

    def __init__(self) -> None:
        self._data: list[str] = []
        self._event = ""
        self._id: str | None = None

    def feed(self, line: str) -> SseMessage | None:
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            return None
        field, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if field == "data":
            self._data.append(value)
        elif field == "id" and "\x00" not in value:
            self._id = value
        elif field == "event":
            self._event = value
        return None

    def _dispatch(self) -> SseMessage | None:
        if not self._data:
            self._event, self._id = "", None
            return None
        message = SseMessage(
            data="\n".join(self._data), id=self._id, event=self._event or "message"
        )
        self._data, self._event, self._id = [], "", None
        return message
