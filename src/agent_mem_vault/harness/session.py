"""A session: one user on one thread of one harness.

Every call checks the user's access action first (``send``, ``operator``,
``read``), then works under the thread's hold (:meth:`.Threads.writing`), so
what it decides from the log is still true when it appends. A send holds the
thread for its whole turn.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..core.errors import ConflictError, InvalidInputError
from ..store import LogConflictError
from . import spans
from .access import Action, User
from .definitions import Harness
from .errors import (
    InputConflictError,
    LogOwnedElsewhereError,
    NoHumanWaitError,
    ThreadPausedError,
    WaitNotFoundError,
)
from .events import Event
from .handoff import HUMAN, Handoff, handoff_event
from .index import ThreadEntry
from .log import (
    HANDOFF,
    INPUT,
    MESSAGE,
    RUN_STARTED,
    WAIT_CLOSED,
    Record,
    check_id,
    input_hash,
)
from .messages import FilePart, Message, Part, TextPart
from .model import Usage
from .spans import trace_field
from .state import InputRecord, Refusal, ThreadState, Wait
from .threadlog import ThreadLog
from .turn import Turn
from .waits import answer_target, resume_target, wire_answer

if TYPE_CHECKING:
    from .threads import Threads

__all__ = ["Session", "Snapshot", "TurnResult"]

TurnStatus = Literal["completed", "interrupted", "failed", "held", "sent"]
MAX_TEXT = 200_000


@dataclass(frozen=True, slots=True)
class TurnResult:
    """What a send gives back.

    ``status``: ``completed``, ``interrupted`` (a person took over), ``failed``
    (``code`` and ``message`` say why), ``held`` (the thread is paused for a
    person: the message is in the transcript and no model ran) or ``sent``
    (an operator's reply, written with no model run).
    """

    text: str
    status: TurnStatus
    run_id: str | None
    input_id: str
    code: str | None = None
    message: str | None = None
    refusals: tuple[Refusal, ...] = ()
    """Every tool call the harness answered with an error during the turn (handoff limit,
    unknown agent or tool, bad arguments, …): what the model was told, for the app."""

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "text": self.text,
            "status": self.status,
            "runId": self.run_id,
            "inputId": self.input_id,
            "refusals": [r.to_json() for r in self.refusals],
        }
        if self.code is not None:
            body.update(code=self.code, message=self.message)
        return body


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A thread as the log says it is now; ``seq`` is where its event stream continues."""

    thread_id: str
    harness: str
    messages: tuple[Message, ...]
    active_agent: str | None
    pending_waits: tuple[Wait, ...]
    status: Literal["idle", "running", "paused"]
    seq: int
    usage: Usage
    owner: str | None = None
    members: Mapping[str, str] = field(default_factory=dict)
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "threadId": self.thread_id,
            "harness": self.harness,
            "messages": [m.to_json() for m in self.messages],
            "activeAgent": self.active_agent,
            "pendingWaits": [w.to_json() for w in self.pending_waits],
            "status": self.status,
            "seq": self.seq,
            "usage": {
                "inputTokens": self.usage.input_tokens,
                "outputTokens": self.usage.output_tokens,
            },
            "owner": self.owner,
            "members": dict(self.members),
            "metadata": dict(self.metadata),
        }


@dataclass(frozen=True, slots=True)
class _Sent:
    """What a turn answers: the input's id and digest (a retry is known by them), the
    user's text and files (none for ``continue``), and the kind of turn."""

    input_id: str
    digest: str
    text: str | None
    files: tuple[FilePart, ...]
    kind: str


@dataclass(eq=False, repr=False)
class Session:
    """Open one with ``await host.open(harness, thread_id=..., user=...)``.

    A handle, not a value: two sessions on one thread are two handles (``eq=False``).
    """

    _threads: Threads
    harness: Harness
    tenant: str
    thread_id: str
    user: User | None

    # -- sending --------------------------------------------------------------
    async def send(
        self,
        text: str,
        *,
        as_: Literal["user", "operator"] = "user",
        files: Sequence[FilePart] = (),
        input_id: str | None = None,
    ) -> TurnResult:
        """Send a message. A user's message runs a turn (or is held while a person
        has the thread); ``as_="operator"`` writes a person's reply with no model run.
        The same ``input_id`` sent again runs once and returns the same result.
        """
        return await self.send_checked(text, as_=as_, files=files, input_id=input_id, entry=None)

    async def send_checked(
        self,
        text: str,
        *,
        as_: Literal["user", "operator"],
        files: Sequence[FilePart],
        input_id: str | None,
        entry: ThreadEntry | None,
    ) -> TurnResult:
        """:meth:`send`, with the access check on ``entry`` when the caller read it just now.

        ``HarnessHost.send`` opens the thread and sends in one call: the index
        entry that ``open`` read (or created) is the one the send is checked
        against, instead of a second read of the same document.
        """
        files = check_send(text, as_, files, input_id)
        await self._threads.check(
            self.tenant,
            self.thread_id,
            self.user,
            "operator" if as_ == "operator" else "send",
            entry=entry,
        )
        payload = {"kind": as_, "text": text, "files": [f.to_json() for f in files]}
        digest = input_hash(payload)
        async with self._threads.writing(self.tenant, self.thread_id) as log:
            input_id = input_id or self._threads.next_id()
            # Same id, same payload: the text is the one sent the first time.
            known = _known(log.state, input_id, digest, sent_text=text)
            if known is not None:
                return known
            if as_ == "operator":
                return await self._operator_reply(log, input_id, digest, text, files)
            if log.state.paused:
                return await self._hold(log, input_id, digest, text, files)
            return await self._turn(log, _Sent(input_id, digest, text, files, "user"))

    async def continue_without_message(self, *, input_id: str | None = None) -> TurnResult:
        """Run a turn on the transcript as it is (after a person handed the thread back)."""
        if input_id is not None:
            check_id("input_id", input_id)
        await self._authorize("send", "operator")
        digest = input_hash({"kind": "continue"})
        async with self._threads.writing(self.tenant, self.thread_id) as log:
            input_id = input_id or self._threads.next_id()
            known = _known(log.state, input_id, digest)
            if known is not None:
                return known
            if log.state.paused:
                raise ThreadPausedError(
                    f"thread {self.thread_id!r} waits for a person; answer its human wait first"
                )
            return await self._turn(log, _Sent(input_id, digest, None, (), "continue"))

    async def _turn(self, log: ThreadLog, sent: _Sent) -> TurnResult:
        state = log.state
        with spans.turn_span(
            harness=self.harness.name,
            thread_id=self.thread_id,
            kind=sent.kind,
            agent=state.active_agent,
            link=state.trace,
        ) as span:
            result = await self._turn_in_span(log, sent, span)
            spans.set_turn_result(
                span, result.run_id, result.status, result.code, sent.text, result.text
            )
            return result

    async def _turn_in_span(self, log: ThreadLog, sent: _Sent, span: Any) -> TurnResult:
        input_id, digest, text = sent.input_id, sent.digest, sent.text
        run_id = self._threads.next_id()
        records: list[Record] = [
            (INPUT, _input(input_id, digest, sent.kind, run_id, self.user)),
        ]
        if text is not None:
            message = self._message("user", (TextPart(text), *sent.files), {})
            records.append((MESSAGE, {"message": message.to_json()}))
        records.append(
            (
                RUN_STARTED,
                {
                    "runId": run_id,
                    "inputId": input_id,
                    "agent": log.state.active_agent,
                    **trace_field(span),
                },
            )
        )
        await log.append(records)
        turn = Turn(
            harness=self.harness,
            log=log,
            thread_id=self.thread_id,
            run_id=run_id,
            user=self.user,
            text=text,
            next_id=self._threads.next_id,
            clock=self._threads.clock,
        )
        try:
            async with log.renewing():
                outcome = await turn.run()
        except (LogConflictError, LogOwnedElsewhereError):
            # Another host took the thread over mid-turn and closes this turn
            # in the log; its verdict is the result. Until it has, the caller
            # learns who owns the thread, and a retry with this input id
            # returns the verdict without running anything.
            await log.refresh()
            verdict = _known(log.state, input_id, digest)
            if verdict is None or log.state.runs[run_id].status == "running":
                raise
            return verdict
        return TurnResult(
            outcome.text,
            outcome.status,
            run_id,
            input_id,
            outcome.code,
            outcome.message,
            outcome.refusals,
        )

    async def _hold(
        self, log: ThreadLog, input_id: str, digest: str, text: str, files: tuple[FilePart, ...]
    ) -> TurnResult:
        message = self._message("user", (TextPart(text), *files), {"harness": {"held": True}})
        await log.append(
            [
                (INPUT, _input(input_id, digest, "user", None, self.user, held=True)),
                (MESSAGE, {"message": message.to_json()}),
            ]
        )
        return TurnResult("", "held", None, input_id)

    async def _operator_reply(
        self, log: ThreadLog, input_id: str, digest: str, text: str, files: tuple[FilePart, ...]
    ) -> TurnResult:
        if log.state.human_wait is None:
            raise NoHumanWaitError(
                f"thread {self.thread_id!r} has no open human wait, so no operator reply is "
                "taken; a model or agent answers this thread now"
            )
        operator = self.user.id if self.user is not None else "operator"
        reply = self._message("assistant", (TextPart(text),), {"harness": {"operator": operator}})
        records: list[Record] = [
            (INPUT, _input(input_id, digest, "operator", None, self.user)),
            (MESSAGE, {"message": reply.to_json()}),
        ]
        if files:
            # A model takes files only from a user, so they follow in a user message.
            attachment = self._message(
                "user",
                files,
                {
                    "harness": {
                        "operatorAttachment": True,
                        "operator": operator,
                        "replyTo": reply.id,
                    }
                },
            )
            records.append((MESSAGE, {"message": attachment.to_json()}))
        with spans.operator_reply_span(
            thread_id=self.thread_id,
            operator=operator,
            wait_id=log.state.human_wait.wait_id,
            files=len(files),
            link=log.state.trace,
        ):
            await log.append(records)
        return TurnResult(text, "sent", None, input_id)

    # -- ending a person's wait -----------------------------------------------
    async def answer(self, question_id: str, value: Any) -> str | None:
        """Answer a wait: ``{"resume": True}`` or ``{"hand_back": "billing" | "main"}``.

        Returns the agent that has the thread now (None: main model). Like
        ``resolve`` and ``cancel``, the wait id comes first, by position or name.

        Starts no turn: held messages wait for the next send or
        :meth:`continue_without_message`.
        """
        await self._authorize("operator")
        async with self._threads.writing(self.tenant, self.thread_id) as log:
            wait = _open_wait(log.state, question_id)
            to = answer_target(self.harness, wait, value)
            await self._append_close(log, wait, "answer", wire_answer(value), to)
            return to

    async def resolve(self, wait_id: str) -> str | None:
        """End a wait; the agent that answered before the handoff gets the thread back."""
        return await self._end(wait_id, "resolve")

    async def cancel(self, wait_id: str) -> str | None:
        """Cancel a wait; the agent that answered before the handoff gets the thread back."""
        return await self._end(wait_id, "cancel")

    async def _end(self, wait_id: str, how: str) -> str | None:
        await self._authorize("operator")
        async with self._threads.writing(self.tenant, self.thread_id) as log:
            wait = _open_wait(log.state, wait_id)
            to = resume_target(self.harness, wait)
            await self._append_close(log, wait, how, None, to)
            return to

    async def _append_close(
        self, log: ThreadLog, wait: Wait, how: str, value: Any, to: str | None
    ) -> None:
        by = self.user.id if self.user is not None else None
        closed = {"waitId": wait.wait_id, "how": how, "value": value, "by": by, "to": to}
        handoff = Handoff(source=dict(HUMAN), target=to, note=None, by="operator")
        with (
            spans.wait_closed_span(
                thread_id=self.thread_id, wait_id=wait.wait_id, how=how, by=by, link=log.state.trace
            ),
            spans.handoff_span(handoff, kind="human"),
        ):
            await log.append(
                [
                    (WAIT_CLOSED, closed),
                    (HANDOFF, handoff_event(handoff, run_id=wait.run_id, wait_id=wait.wait_id)),
                ]
            )

    # -- reading ----------------------------------------------------------------
    async def snapshot(self) -> Snapshot:
        """The transcript (assistant messages with ``agent``), active agent, open waits."""
        entry = await self._authorize("read")
        state = await self._threads.read_state(self.tenant, self.thread_id)
        return Snapshot(
            thread_id=self.thread_id,
            harness=entry.harness,
            messages=tuple(state.messages),
            active_agent=state.active_agent,
            pending_waits=tuple(state.open_waits),
            status=state.status,
            seq=state.seq,
            usage=state.usage,
            owner=entry.owner,
            members=dict(entry.members),
            metadata=dict(entry.metadata),
        )

    async def events(self, *, after: int = 0) -> AsyncGenerator[Event]:
        """The thread's events from ``after`` (a seq / event id) on, live, forever."""
        await self._authorize("read")
        stream = self._threads.stream(self.tenant, self.thread_id)
        async for record in self._threads.persistence.watch(stream, after=after):
            yield Event.from_record(record)

    # -- helpers ----------------------------------------------------------------
    async def _authorize(self, *actions: Action) -> ThreadEntry:
        """Check that the session's user holds one of ``actions`` on its thread."""
        return await self._threads.check(self.tenant, self.thread_id, self.user, *actions)

    def _message(self, role: Any, parts: tuple[Part, ...], metadata: dict[str, Any]) -> Message:
        return Message(self._threads.next_id(), role, parts, metadata, self._threads.now())


def check_send(
    text: Any, as_: Any, files: Sequence[FilePart], input_id: str | None
) -> tuple[FilePart, ...]:
    """What a send takes, checked before anything is read or written; the files as a tuple."""
    if as_ not in ("user", "operator"):
        raise InvalidInputError(
            f"as_ must be 'user' or 'operator', got {as_!r}; send as 'user', or as "
            "'operator' to reply as the person"
        )
    files = tuple(files)
    _check_text(text, files)
    if input_id is not None:
        check_id("input_id", input_id)
    return files


def _check_text(text: Any, files: tuple[FilePart, ...]) -> None:
    if not isinstance(text, str):
        raise InvalidInputError(f"text must be a string, got {type(text).__name__}")
    if not text.strip() and not files:
        raise InvalidInputError("the message is empty; send some text or a file")
    if len(text) > MAX_TEXT:
        raise InvalidInputError(f"the message has {len(text)} characters; the most is {MAX_TEXT}")
    for f in files:
        if not isinstance(f, FilePart):
            raise InvalidInputError(f"files must be FilePart values, got {type(f).__name__}")


def _input(
    input_id: str,
    digest: str,
    kind: str,
    run_id: str | None,
    user: User | None,
    *,
    held: bool = False,
) -> dict[str, Any]:
    return {
        "inputId": input_id,
        "hash": digest,
        "kind": kind,
        "runId": run_id,
        "held": held,
        "userId": user.id if user is not None else None,
    }


def _known(
    state: ThreadState, input_id: str, digest: str, *, sent_text: str = ""
) -> TurnResult | None:
    """The recorded result of an input this thread already took, or None if it is new.

    ``sent_text`` is what an operator reply returns again: the payload's digest
    matched, so it is the text that was sent the first time.
    """
    prior: InputRecord | None = state.inputs.get(input_id)
    if prior is None:
        return None
    if prior.hash != digest:
        raise InputConflictError(
            f"input {input_id!r} was already sent with another payload; send new input "
            "under a new input id",
            input_id=input_id,
        )
    if prior.run_id is None:
        if prior.held:
            return TurnResult("", "held", None, input_id)
        return TurnResult(sent_text, "sent", None, input_id)
    run = state.runs[prior.run_id]
    status: TurnStatus = "failed" if run.status == "running" else run.status
    return TurnResult(run.text, status, run.run_id, input_id, run.code, run.message, run.refusals)


def _open_wait(state: ThreadState, wait_id: str) -> Wait:
    wait = state.waits.get(wait_id)
    if wait is None:
        raise WaitNotFoundError(
            f"thread has no wait {wait_id!r}; take the wait id from snapshot().pending_waits",
            wait_id=wait_id,
        )
    if wait.status != "open":
        raise ConflictError(
            f"wait {wait_id!r} is already {wait.status}; take an open wait from "
            "snapshot().pending_waits",
            code="wait_closed",
        )
    return wait
