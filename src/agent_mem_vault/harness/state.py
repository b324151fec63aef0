"""A thread's state as the log says it is: values only, no I/O.

``log.replay`` folds log records into a ``ThreadState``; hosts keep one per
thread and fold in new records as they read them, so every host that reads the
same log sees the same transcript, active agent and waits.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..core.wire import CamelJson
from .messages import Message
from .model import Usage

__all__ = ["InputRecord", "RunRecord", "ThreadState", "Wait"]

RunStatus = Literal["completed", "interrupted", "failed"]


@dataclass(frozen=True, slots=True)
class Wait(CamelJson):
    """Something the thread waits for; a ``human`` wait is a person taking over.

    ``before`` is the agent that answered before the handoff (None: the main
    model); it gets the thread back on ``resume``, resolve or cancel.
    """

    wait_id: str
    kind: str
    message: str | None
    run_id: str | None
    before: str | None
    status: Literal["open", "answered", "resolved", "cancelled"] = "open"
    created_at: str | None = None


@dataclass(frozen=True, slots=True)
class InputRecord:
    """An input the thread accepted, for idempotency: same id and hash run once."""

    input_id: str
    hash: str
    kind: str
    run_id: str | None
    held: bool


@dataclass(frozen=True, slots=True)
class Refusal(CamelJson):
    """A tool call the harness answered with an error during a turn, so the app sees it too.

    ``code``: ``too_many_handoffs``, ``unknown_agent``, ``duplicate_handoff``,
    ``unknown_tool``, ``invalid_tool_arguments``, ``tool_error`` (the app's
    tool raised), … — the model got ``message`` as the tool's result.
    """

    code: str
    message: str
    tool: str
    tool_call_id: str
    agent: str | None = None
    """The agent whose model made the call (None: the main model)."""

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Refusal:
        return cls(
            str(data["code"]),
            str(data["message"]),
            str(data["tool"]),
            str(data["toolCallId"]),
            data.get("agent"),
        )


@dataclass(frozen=True, slots=True)
class RunRecord:
    """A turn: started, and (once finished) its status and text."""

    run_id: str
    agent: str | None
    status: Literal["running", "completed", "interrupted", "failed"] = "running"
    text: str = ""
    code: str | None = None
    message: str | None = None
    start: int = 0
    """Where the turn's messages begin in ``ThreadState.messages`` (for closing it later)."""
    refusals: tuple[Refusal, ...] = ()
    trace: str | None = None
    """The W3C ``traceparent`` of the turn's span, when traced (a takeover links to it)."""


@dataclass(slots=True)
class ThreadState:
    """Everything the log says about one thread, up to ``seq``."""

    seq: int = 0
    messages: list[Message] = field(default_factory=list)
    active_agent: str | None = None
    inputs: dict[str, InputRecord] = field(default_factory=dict)
    runs: dict[str, RunRecord] = field(default_factory=dict)
    running: str | None = None
    waits: dict[str, Wait] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    transfers: dict[str, dict[str, Any]] = field(default_factory=dict)
    trace: str | None = None
    """The last ``traceparent`` the log stored (a turn, a transfer in): later spans link to it."""

    @property
    def open_waits(self) -> list[Wait]:
        return [w for w in self.waits.values() if w.status == "open"]

    @property
    def human_wait(self) -> Wait | None:
        """The open wait for a person; while there is one, the thread is paused."""
        return next((w for w in self.open_waits if w.kind == "human"), None)

    @property
    def paused(self) -> bool:
        return self.human_wait is not None

    @property
    def status(self) -> Literal["idle", "running", "paused"]:
        if self.running is not None:
            return "running"
        return "paused" if self.paused else "idle"
