"""The turn runner: the main model and root agents answer, and hand off.

A turn starts with the active agent from the log. The router may hand off
first; then the answerer runs (the main model's tool loop, or an agent's
``run``). A handoff — by the model's ``handoff`` tool, by code, by the router —
takes effect when the part that made it ends, and the target answers next in
the same turn, at most ``MAX_HANDOFFS_PER_TURN`` times. A handoff to a person
opens a ``human`` wait and ends the turn ``interrupted``.

Everything the turn does is appended to the thread's log as it happens.
A turn whose append meets another writer (``LogConflictError``) or another
owner (``LogOwnedElsewhereError``) has lost its thread to another host, which
closes it in the log: from then on it writes nothing, not even its own
``run.finished`` (see :mod:`.threadlog`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..core.clock import Clock, format_datetime
from ..core.errors import AgentMemVaultError, ConflictError, InvalidInputError
from ..store import LogConflictError
from . import spans
from .access import User
from .children import ChildTurn
from .context import AgentContext, Chat, RouterContext
from .definitions import Agent, Harness, check_reply
from .errors import DuplicateToolError, LogOwnedElsewhereError, NotARootAgentError
from .handoff import (
    Handoff,
    handoff_event,
    handoff_messages,
    handoff_result_text,
    handoff_tool_spec,
    is_human,
    resolve_target,
    turn_text,
)
from .log import HANDOFF, MESSAGE, REFUSED, RUN_FINISHED, USAGE, WAIT_OPENED, Record
from .messages import Message, Part, TextPart, ToolResultPart
from .model import Model, ToolCallRequest, ToolSpec, Usage
from .model_call import ask, usage_record
from .run_context import HarnessRunContext, ToolContext, _Part
from .state import Refusal
from .threadlog import ThreadLog
from .tools import HANDOFF_TOOL, Tool

__all__ = ["Turn", "TurnOutcome", "check_note"]


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    status: Literal["completed", "interrupted", "failed"]
    text: str
    code: str | None = None
    message: str | None = None
    refusals: tuple[Refusal, ...] = ()


@dataclass(eq=False, repr=False, kw_only=True)
class Turn:
    """One turn of one thread, run by one host that owns the thread's log."""

    harness: Harness
    log: ThreadLog
    thread_id: str
    run_id: str
    user: User | None
    text: str | None
    next_id: Callable[[], str]
    clock: Clock
    handoffs: int = field(init=False, default=0)
    _pending: Handoff | None = field(init=False, default=None)
    _segments: list[tuple[str | None, str]] = field(init=False, default_factory=list)
    # Records that may wait for the next append: a final reply goes out
    # with run.finished, a handoff's tool result with the handoff. Fewer
    # appends, fewer fsyncs; nothing deferred was acknowledged to anyone.
    _deferred: list[Record] = field(init=False, default_factory=list)
    _deferred_messages: list[Message] = field(init=False, default_factory=list)
    # Set once an append finds the thread taken by another host; every
    # later write re-raises it, even if app code swallowed the first.
    _lost: LogConflictError | LogOwnedElsewhereError | None = field(init=False, default=None)
    refusals: list[Refusal] = field(init=False, default_factory=list)
    """Each tool call answered with an error in this turn (also ``harness.refused``)."""

    # -- what contexts reach ------------------------------------------------
    @property
    def messages(self) -> tuple[Message, ...]:
        return (*self.log.state.messages, *self._deferred_messages)

    def request_handoff(self, source: str | None, to: Any, note: str | None, by: str) -> None:
        if self._pending is not None:
            raise ConflictError(
                f"this part already handed off to {self._pending.target!r}; hand off once"
            )
        note = check_note(note)
        target = resolve_target(self.harness, to, source=source, handoffs_so_far=self.handoffs)
        self._pending = Handoff(source=source, target=target, note=note, by=by)  # type: ignore[arg-type]

    async def chat(self, chat: Chat) -> str:
        return await self._tool_loop(
            chat.source,
            chat.model or self.harness.model,
            chat.system_prompts,
            chat.tools,
            chat.part,
        )

    async def run_child(self, agent: Agent | str, text: str) -> str:
        found = self.harness.any_agent(agent) if isinstance(agent, str) else agent
        if found is None:
            raise NotARootAgentError(
                f"harness {self.harness.name!r} has no agent {agent!r} to start as a child"
            )
        return await ChildTurn(self, found).run(text)

    # -- the turn -----------------------------------------------------------
    async def run(self) -> TurnOutcome:
        """Run to the end and append ``run.finished``; errors become a failed turn."""
        try:
            outcome = await self._run()
        except AgentMemVaultError as exc:
            outcome = TurnOutcome("failed", self._text(), exc.code, exc.message)
        except Exception as exc:  # an app's agent or router raised
            outcome = TurnOutcome(
                "failed", self._text(), "turn_error", f"{type(exc).__name__}: {exc}"
            )
        finished: dict[str, Any] = {
            "runId": self.run_id,
            "status": outcome.status,
            "text": outcome.text,
        }
        if outcome.code is not None:
            finished.update(code=outcome.code, message=outcome.message)
        if self._lost is not None:
            raise self._lost  # another host closes this turn; write nothing more
        await self._write([(RUN_FINISHED, finished)])
        return TurnOutcome(
            outcome.status, outcome.text, outcome.code, outcome.message, tuple(self.refusals)
        )

    async def _run(self) -> TurnOutcome:
        self._check_tools(self.harness.tools)
        current = self.log.state.active_agent
        if current is not None and self.harness.root_agent(current) is None:
            current = None  # the agent left the definition; the main model answers
        routing = self.harness.routing
        if routing is not None and routing.router is not None:
            decision = routing.router(
                RouterContext(
                    thread_id=self.thread_id,
                    run_id=self.run_id,
                    text=self.text,
                    active_agent=current,
                    messages=self.messages,
                    user=self.user,
                )
            )
            if inspect.isawaitable(decision):
                decision = await decision
            if decision is not None:
                handoff = self._router_handoff(current, decision)
                if handoff is not None:
                    await self._take(handoff)
                    if is_human(handoff.target):
                        return TurnOutcome("interrupted", self._text())
                    current = handoff.target  # type: ignore[assignment]
        while True:
            handoff = await self._answer(current)
            if handoff is None:
                return TurnOutcome("completed", self._text())
            await self._take(handoff)
            if is_human(handoff.target):
                return TurnOutcome("interrupted", self._text())
            current = handoff.target  # type: ignore[assignment]

    def _text(self) -> str:
        return turn_text(self._segments)

    def _router_handoff(self, current: str | None, decision: Any) -> Handoff | None:
        if not isinstance(decision, Mapping) or "handoff" not in decision:
            raise InvalidInputError(
                f"the router returned {decision!r}; return None or "
                "{'handoff': <agent>, 'note': <text>}"
            )
        to = decision["handoff"]
        if to == current or (to == "main" and current is None):
            return None  # already answering: nothing to hand off
        note = check_note(decision.get("note"))
        target = resolve_target(self.harness, to, source=current, handoffs_so_far=self.handoffs)
        return Handoff(source=current, target=target, note=note, by="router")

    async def _answer(self, current: str | None) -> Handoff | None:
        """Let ``current`` answer; returns the handoff it made, if any."""
        part = _Part(current)
        if current is None:
            text = await self._tool_loop(
                None, self.harness.model, self.harness.system_prompts, self.harness.tools, part
            )
        else:
            agent = self.harness.root_agent(current)
            assert agent is not None
            ctx = AgentContext(self, agent, part)
            result = agent.run(ctx)
            if inspect.isawaitable(result):
                result = await result
            result = check_reply(agent, result)
            replies = list(ctx.replies)
            if result and result != ctx.last_reply:
                await self._write_messages(
                    [self._assistant(current, (TextPart(result),))], defer=True
                )
                replies.append(result)
            text = "\n\n".join(r for r in replies if r)
        part.open = False
        self._segments.append((current, text))
        pending, self._pending = self._pending, None
        return pending

    async def _take(self, handoff: Handoff) -> None:
        """Record an accepted handoff (and, for a person, the wait it opens)."""
        self.handoffs += 1
        records: list[Record] = []
        if handoff.by in ("router", "code"):
            with_tool = bool(self.harness.routing and self.harness.routing.give_models_handoff_tool)
            ids = [self.next_id(), self.next_id()]
            for message in handoff_messages(
                handoff, ids=ids, with_tool=with_tool, created_at=self._now()
            ):
                records.append((MESSAGE, {"message": message.to_json()}))
        wait_id = self.next_id() if is_human(handoff.target) else None
        records.append((HANDOFF, handoff_event(handoff, run_id=self.run_id, wait_id=wait_id)))
        if wait_id is not None:
            records.append(
                (
                    WAIT_OPENED,
                    {
                        "waitId": wait_id,
                        "kind": "human",
                        "message": handoff.note,
                        "runId": self.run_id,
                        "before": handoff.source,
                        "createdAt": self._now(),
                    },
                )
            )
        with spans.handoff_span(handoff):
            await self._write(records)
        if wait_id is not None:
            spans.wait_opened(wait_id, handoff.source)

    # -- the tool loop --------------------------------------------------------
    def _check_tools(self, tools: Sequence[Tool]) -> None:
        routing = self.harness.routing
        give = routing is not None and routing.give_models_handoff_tool
        if give and any(t.name == HANDOFF_TOOL for t in tools):
            raise DuplicateToolError(
                f"an app tool is named {HANDOFF_TOOL!r}, the name of the harness's handoff "
                "tool; rename it, or set Routing(give_models_handoff_tool=False)"
            )

    def _specs(self, source: str | None, tools: Sequence[Tool]) -> tuple[ToolSpec, ...]:
        specs = [t.spec() for t in tools]
        routing = self.harness.routing
        if routing is not None and routing.give_models_handoff_tool:
            specs.append(handoff_tool_spec(self.harness, source))
        return tuple(specs)

    async def _tool_loop(
        self,
        source: str | None,
        model: Model,
        system_prompts: tuple[str, ...],
        tools: tuple[Tool, ...],
        part: _Part,
    ) -> str:
        """Ask ``model`` and run its tool calls until it answers, or it (or a tool) hands off."""
        self._check_tools(tools)
        if not part.open:
            raise ConflictError("this part of the turn has ended; it cannot ask a model again")
        specs = self._specs(source, tools)
        by_name = {t.name: t for t in tools}
        handoff_tool = any(s.name == HANDOFF_TOOL for s in specs) and HANDOFF_TOOL not in by_name
        texts: list[str] = []
        while self._pending is None:
            reply = await ask(
                model,
                system_prompts=system_prompts,
                messages=self.messages,
                tools=specs,
                model_name=self.harness.model_name,
                user=self.user,
            )
            if reply.text:
                texts.append(reply.text)
            message = self._assistant(source, reply.parts())
            records: list[Record] = [
                (MESSAGE, {"message": message.to_json()}),
                (USAGE, self._usage(model, reply.usage, "turn", source)),
            ]
            if not reply.tool_calls:
                self._defer(records, [message])
                break
            if all(c.name == HANDOFF_TOOL and handoff_tool for c in reply.tool_calls):
                # Only the harness's own handoff tool, which has no effect outside
                # the log: the call can go out together with its result.
                self._defer(records, [message])
            else:
                # An app tool may act on the world: the call is on disk before it runs.
                await self._write(records)
            results = [
                await self._answer_call(source, call, by_name, handoff_tool, part)
                for call in reply.tool_calls
            ]
            # A handoff's tool result goes out with the handoff record.
            await self._write_messages(results, defer=self._pending is not None)
        return "\n\n".join(texts)

    async def _answer_call(
        self,
        source: str | None,
        call: ToolCallRequest,
        by_name: Mapping[str, Tool],
        handoff_tool: bool,
        part: _Part,
    ) -> Message:
        """Run one tool call (the harness's handoff, or an app tool); its result message."""
        if call.name == HANDOFF_TOOL and handoff_tool:
            # No tool span: the handoff's own span (kind "tool") tells this call.
            output, failed = self._tool_handoff(source, call)
        else:
            with spans.tool_span(call.name, call.id, source) as span:
                output, failed = await self._run_tool(by_name.get(call.name), call, part)
                if failed:
                    span.set_attribute("error.type", "tool_error")
        return self._tool_message(source, ToolResultPart(call.id, call.name, output, failed))

    def _tool_handoff(self, source: str | None, call: ToolCallRequest) -> tuple[Any, bool]:
        try:
            if self._pending is not None:
                raise ConflictError(
                    "you already handed off in this reply; hand off once",
                    code="duplicate_handoff",
                )
            arguments = dict(call.arguments)
            if "to" not in arguments:
                # Never a silent hand back to the main model: the model must name it.
                raise InvalidInputError(
                    "the handoff tool needs 'to': an agent name, 'main' or {'human': true}; "
                    "call it again with 'to'"
                )
            note = check_note(arguments.get("note"))
            target = resolve_target(
                self.harness, arguments.get("to"), source=source, handoffs_so_far=self.handoffs
            )
        except AgentMemVaultError as exc:
            return self._refuse(source, call, exc.code, exc.message), True
        self._pending = Handoff(source, target, note, "tool", call.id)
        return handoff_result_text(target), False

    async def _run_tool(
        self, found: Tool | None, call: ToolCallRequest, part: _Part
    ) -> tuple[Any, bool]:
        if found is None:
            message = f"there is no tool {call.name!r}; use one of the tools you were given"
            return self._refuse(part.source, call, "unknown_tool", message), True
        ctx = ToolContext(
            run=HarnessRunContext(self, part),
            agent=part.source,
            user=self.user,
            thread_id=self.thread_id,
        )
        try:
            return await found.call(call.arguments, ctx), False
        except (LogConflictError, LogOwnedElsewhereError):
            raise  # the thread is lost to another host: nothing more is written
        except AgentMemVaultError as exc:
            return self._refuse(part.source, call, exc.code, exc.message), True
        except Exception as exc:  # the app's tool failed; the model hears why
            message = f"tool {call.name!r} failed: {type(exc).__name__}: {exc}"
            return self._refuse(part.source, call, "tool_error", message), True

    def _refuse(self, source: str | None, call: ToolCallRequest, code: str, message: str) -> str:
        """Note a refusal for the app (turn result and a ``harness.refused`` event)."""
        refusal = Refusal(code, message, call.name, call.id, source)
        self.refusals.append(refusal)
        self._defer([(REFUSED, {"runId": self.run_id, **refusal.to_json()})], [])
        return message

    # -- message helpers ------------------------------------------------------
    def _now(self) -> str:
        return format_datetime(self.clock.now())

    def _assistant(self, source: str | None, parts: tuple[Part, ...]) -> Message:
        metadata: dict[str, Any] = {"harness": {"agent": source}} if source else {}
        return Message(self.next_id(), "assistant", parts, metadata, self._now())

    def _tool_message(self, source: str | None, part: ToolResultPart) -> Message:
        metadata: dict[str, Any] = {"harness": {"agent": source}} if source else {}
        return Message(self.next_id(), "tool", (part,), metadata, self._now())

    async def _write_messages(self, messages: Sequence[Message], *, defer: bool = False) -> None:
        records: list[Record] = [(MESSAGE, {"message": m.to_json()}) for m in messages]
        if defer:
            self._defer(records, messages)
        else:
            await self._write(records)

    def _defer(self, records: Sequence[Record], messages: Sequence[Message]) -> None:
        self._deferred.extend(records)
        self._deferred_messages.extend(messages)

    async def _write(self, records: Sequence[Record]) -> None:
        """Append ``records`` after whatever was deferred, in one append."""
        if self._lost is not None:
            raise self._lost
        batch = [*self._deferred, *records]
        self._deferred.clear()
        self._deferred_messages.clear()
        try:
            await self.log.append(batch)
        except (LogConflictError, LogOwnedElsewhereError) as exc:
            self._lost = exc
            raise

    def _usage(self, model: Model, usage: Usage, source: str, agent: str | None) -> dict[str, Any]:
        return usage_record({"runId": self.run_id, "source": source, "agent": agent}, model, usage)


def check_note(note: Any) -> str | None:
    if note is None:
        return None
    if not isinstance(note, str) or len(note) > 10_000:
        raise InvalidInputError("a handoff note must be text of at most 10000 characters")
    return note
