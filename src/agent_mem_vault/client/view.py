"""``create_session_view``: a live list of a thread's messages, kept from its event stream.

A view starts from a snapshot and then folds the thread's events into its
state (a ``message`` event appends or replaces the message, a handoff moves
the active agent, wait events open and close waits), so every open view of a
thread shows an operator's reply as soon as its event arrives. The fold is a
pure function (:func:`apply_event`); the view only does the I/O around it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ..harness.messages import Message
from .client import ClientEvent, HarnessClient, PendingWait, Snapshot, TurnResult

__all__ = ["SessionView", "ViewState", "apply_event", "create_session_view"]


@dataclass(frozen=True, slots=True)
class ViewState:
    """What a view shows; ``messages`` each have ``.agent`` (None for the main model)."""

    messages: tuple[Message, ...] = ()
    active_agent: str | None = None
    pending_waits: tuple[PendingWait, ...] = ()
    last_event_id: str | None = None
    stale: bool = False
    """True when an event said something the fold cannot apply; the view re-reads a snapshot."""

    @classmethod
    def from_snapshot(cls, snap: Snapshot) -> ViewState:
        return cls(
            messages=tuple(snap.messages),
            active_agent=snap.active_agent,
            pending_waits=tuple(snap.pending_waits),
            last_event_id=snap.last_event_id,
        )


def apply_event(state: ViewState, event: ClientEvent) -> ViewState:
    """Fold one event into a view's state (pure).

    An event the state already holds (its id is not after ``last_event_id``,
    e.g. when a snapshot read mid-stream was newer than the stream) changes
    nothing, so no message or wait ever shows twice.
    """
    if _already_held(event.id, state.last_event_id):
        return state
    value = event.value if isinstance(event.value, dict) else {}
    state = replace(state, last_event_id=event.id)
    if event.name == "message" and isinstance(value.get("message"), dict):
        message = Message.from_json(value["message"])
        if any(m.id == message.id for m in state.messages):
            updated = tuple(message if m.id == message.id else m for m in state.messages)
            return replace(state, messages=updated)
        return replace(state, messages=(*state.messages, message))
    if event.name == "harness.handoff":
        to = value.get("to")
        if to is None or isinstance(to, str):
            return replace(state, active_agent=None if to == "main" else to)
        return state
    if event.name == "wait.opened" and "waitId" in value:
        wait = PendingWait(str(value["waitId"]), str(value.get("kind")), value.get("message"))
        return replace(state, pending_waits=(*state.pending_waits, wait))
    if event.name == "wait.closed":
        waits = tuple(w for w in state.pending_waits if w.wait_id != value.get("waitId"))
        # Who gets the thread back is decided by the host; read it from a snapshot.
        return replace(state, pending_waits=waits, stale=True)
    return state


def _already_held(event_id: str, last_event_id: str | None) -> bool:
    """Whether a state that has seen ``last_event_id`` holds ``event_id`` already.

    Ids are the thread log's sequence numbers; an id that is not one is never skipped.
    """
    if last_event_id is None or not (event_id.isdigit() and last_event_id.isdigit()):
        return False
    return int(event_id) <= int(last_event_id)


@dataclass
class SessionView:
    """A live view of one thread. Use ``async with create_session_view(client) as view``.

    ``view.messages`` is the current list; ``subscribe(fn)`` calls ``fn(state)``
    after each change; ``await view.wait_for(pred)`` waits until ``pred(state)``.
    """

    client: HarnessClient
    state: ViewState = field(default_factory=ViewState)
    _listeners: list[Callable[[ViewState], None]] = field(default_factory=list)
    _task: asyncio.Task[None] | None = None
    _changed: asyncio.Condition = field(default_factory=asyncio.Condition)
    error: BaseException | None = None
    """The error that stopped the live stream (e.g. access withdrawn), if any."""

    @property
    def messages(self) -> tuple[Message, ...]:
        return self.state.messages

    @property
    def active_agent(self) -> str | None:
        return self.state.active_agent

    @property
    def pending_waits(self) -> tuple[PendingWait, ...]:
        return self.state.pending_waits

    async def start(self) -> SessionView:
        """Read a snapshot, then follow the events after it."""
        await self._set(ViewState.from_snapshot(await self.client.snapshot()))
        self._task = asyncio.create_task(self._follow(), name=f"view:{self.client.thread_id}")
        return self

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def __aenter__(self) -> SessionView:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def send(self, text: str, *, as_: Literal["user", "operator"] = "user") -> TurnResult:
        """Send through the client; the view updates from the events the send causes."""
        return await self.client.send(text, as_=as_)

    def subscribe(self, listener: Callable[[ViewState], None]) -> Callable[[], None]:
        """Call ``listener(state)`` after each change; returns a function that unsubscribes."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    async def wait_for(self, predicate: Callable[[ViewState], bool], within: float = 10.0) -> Any:
        """Wait until ``predicate(state)`` holds; raises TimeoutError after ``within`` seconds."""
        async with asyncio.timeout(within), self._changed:
            await self._changed.wait_for(lambda: predicate(self.state) or self.error is not None)
        if self.error is not None and not predicate(self.state):
            raise self.error
        return self.state

    async def _follow(self) -> None:
        try:
            async for event in self.client.events(after=self.state.last_event_id):
                state = apply_event(self.state, event)
                if state is self.state:
                    continue  # already in the state
                if state.stale:
                    # The snapshot may be newer than the stream; the events it
                    # already holds are skipped by apply_event.
                    state = ViewState.from_snapshot(await self.client.snapshot())
                await self._set(state)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # surfaced through wait_for and .error
            self.error = exc
            async with self._changed:
                self._changed.notify_all()

    async def _set(self, state: ViewState) -> None:
        self.state = state
        for listener in list(self._listeners):
            listener(state)
        async with self._changed:
            self._changed.notify_all()


def create_session_view(client: HarnessClient) -> SessionView:
    """A view of ``client``'s thread; start it with ``async with`` or ``await view.start()``.

    >>> view = create_session_view(HarnessClient(url, "case-42"))  # doctest: +SKIP
    >>> async with view:  # doctest: +SKIP
    ...     print([(m.agent, m.text) for m in view.messages if m.role == "assistant"])
    """
    return SessionView(client)
