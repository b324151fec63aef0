"""Transfers: move a conversation to a thread of another harness, with only its envelope.

A transfer is keyed by its ``transfer_id`` in the ``harness.transfers``
collection (put-if-absent), and every step checks what the logs already hold
before it writes, so a retry — also after a crash half way — makes no second
thread and copies nothing twice:

1. check the source (tenant, harness, ``transfer`` action) and an existing
   target (harness, ``send``); record the plan (target thread id fixed here);
2. own the target's and the source's logs (``LogOwnedElsewhereError`` if
   another host does);
3. ``summary``: the source harness's model writes it with the user's keys,
   within ``host.summary_timeout``; its usage goes into the source log; the
   text is kept in the plan so a retry does not ask again;
4. target log: ``harness.transferred`` + the note + the envelope's messages,
   in one append; index entry with the owner and ``harness:transferredFrom``;
5. source log: ``harness.transferred``; index ``harness:transferredTo``;
6. host stream: one ``transferred`` event; the plan is marked done.

A tool may transfer (or fork) the thread whose turn runs it: the source is
written through the turn's own hold on the thread (:mod:`.threads`), so
nothing waits for the turn to end. Only settled messages move: the tool's
own call has no result yet and stays behind, and the turn goes on.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..core.clock import format_datetime
from ..core.errors import InvalidInputError
from ..store.base import LogConflictError, VersionConflictError, check_name
from . import spans
from .access import User
from .copies import copy_messages, settled_messages
from .definitions import Harness
from .errors import TransferConflictError, TransferTimeoutError, WrongHarnessError
from .events import HOST_STREAM
from .index import create_entry, get_entry, update_entry
from .log import MESSAGE, TRANSFERRED, USAGE, Record
from .messages import Message, TextPart
from .model_call import ask, usage_record

if TYPE_CHECKING:
    from .threads import Threads

__all__ = [
    "TRANSFERS",
    "Endpoint",
    "EndpointLike",
    "Envelope",
    "TransferResult",
    "run_transfer",
]

TRANSFERS = "harness.transfers"
SUMMARY_PROMPT = (
    "Summarize the conversation so far for the team that takes it over. Keep the facts, "
    "names, amounts and order numbers, what was done, and what the user still waits for."
)
EnvelopeMessages = Literal["none", "summary", "all"]


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One side of a transfer: a harness and (for the source, or an existing target) a thread.

    ``host.transfer`` also takes ``(harness, thread_id)`` or a bare harness.
    """

    harness: Harness
    thread_id: str | None = None

    @classmethod
    def of(cls, value: EndpointLike, side: str) -> Endpoint:
        """``value`` as an Endpoint: an Endpoint, ``(harness, thread_id)`` or a harness."""
        if isinstance(value, Endpoint):
            endpoint = value
        elif isinstance(value, Harness):
            endpoint = cls(value)
        elif isinstance(value, tuple) and len(value) in (1, 2):
            endpoint = cls(*value)
        else:
            raise InvalidInputError(
                f"{side} must be an Endpoint, (harness, thread_id) or a harness, got "
                f"{type(value).__name__}; pass e.g. {side}=Endpoint(desk, 'case-42')"
            )
        if not isinstance(endpoint.harness, Harness):
            raise InvalidInputError(
                f"{side} names {endpoint.harness!r} as its harness; pass the Harness that "
                "define_harness returned"
            )
        return endpoint


EndpointLike = Endpoint | tuple[Harness, str | None] | tuple[Harness] | Harness


@dataclass(frozen=True, slots=True)
class Envelope:
    """What moves: ``note`` (the target's first message) and ``messages`` after it."""

    note: str | None = None
    messages: EnvelopeMessages = "none"


@dataclass(frozen=True, slots=True)
class TransferResult:
    thread_id: str
    """The target thread."""
    transfer_id: str
    retried: bool = False
    """True when this transfer id had already completed and nothing new was done."""

    def to_json(self) -> dict[str, Any]:
        return {"threadId": self.thread_id, "transferId": self.transfer_id, "retried": self.retried}


def _check_envelope(envelope: Envelope) -> None:
    if envelope.messages not in ("none", "summary", "all"):
        raise InvalidInputError(
            f"envelope messages must be 'none', 'summary' or 'all', got {envelope.messages!r}"
        )
    if envelope.note is not None and (
        not isinstance(envelope.note, str) or len(envelope.note) > 20_000
    ):
        raise InvalidInputError("envelope note must be text of at most 20000 characters")


@dataclass(frozen=True, slots=True)
class _Move:
    """One transfer under way: where from, where to, for whom (the plan's values)."""

    tenant: str
    transfer_id: str
    source_id: str
    target_id: str
    origin: dict[str, Any]
    """``{threadId, harness, transferId}`` of the source, as both logs and the index say."""
    destination: dict[str, Any]
    user: User | None


async def run_transfer(
    host: Threads,
    *,
    from_: EndpointLike,
    to: EndpointLike,
    envelope: Envelope | None,
    user: User | None,
    transfer_id: str | None,
    summary_timeout: float,
) -> TransferResult:
    """Run (or finish, or find done) the transfer ``transfer_id``; the steps are above."""
    from_ = Endpoint.of(from_, "from_")
    to = Endpoint.of(to, "to")
    envelope = envelope or Envelope()
    if not isinstance(envelope, Envelope):
        raise InvalidInputError(
            f"envelope must be an Envelope, got {type(envelope).__name__}; pass e.g. "
            "Envelope(note='...', messages='summary')"
        )
    with spans.transfer_span(
        source_harness=from_.harness.name,
        source_thread=from_.thread_id,
        target_harness=to.harness.name,
        transfer_id=transfer_id,
        envelope_messages=envelope.messages,
        envelope_note=envelope.note,
    ) as span:
        tenant = host.tenant(user)
        source_id = _check_request(host, from_, to, envelope)
        transfer_id = check_name("transfer_id", transfer_id) if transfer_id else host.next_id()
        await _check_access(host, tenant, source_id, from_, to, user)
        if span.is_recording():
            # Started from app code, the transfer is a new trace: it continues the
            # source thread's story (its last turn's trace), as a link.
            source_state = await host.read_state(tenant, source_id)
            spans.continue_story(span, source_state.trace)
        plan = await _record_plan(host, tenant, transfer_id, from_, to, envelope, user)
        target_id = str(plan["targetThreadId"])
        if plan.get("status") == "done":
            return _traced(span, TransferResult(target_id, transfer_id, retried=True))
        move = _Move(
            tenant=tenant,
            transfer_id=transfer_id,
            source_id=source_id,
            target_id=target_id,
            origin={
                "threadId": source_id,
                "harness": from_.harness.name,
                "transferId": transfer_id,
            },
            destination={
                "threadId": target_id,
                "harness": to.harness.name,
                "transferId": transfer_id,
            },
            user=user,
        )

        # Both logs must be ours before anything moves: LogOwnedElsewhereError otherwise.
        target_log = host.log(tenant, target_id)
        source_log = host.log(tenant, source_id)
        await target_log.own()
        await source_log.own()
        summary = plan.get("summary")
        if envelope.messages == "summary" and summary is None:
            # The summary call may outlast the leases (up to summary_timeout): keep both.
            async with target_log.renewing(), source_log.renewing():
                summary = await _summarize(host, move, from_.harness, summary_timeout)
            await _remember_summary(host, move, summary)

        await _open_target(host, move, to)
        await _write_target(host, move, envelope, summary)
        await _write_source(host, move)
        await _announce(
            host,
            tenant,
            transfer_id,
            move.origin,
            move.destination,
            user,
            int(plan.get("hostSeq", 0)),
        )
        return _traced(span, TransferResult(target_id, transfer_id))


def _traced(span: Any, result: TransferResult) -> TransferResult:
    """``result``, its ids and whether it was a retry said on the transfer's span."""
    span.set_attributes(
        {
            "agent_mem_vault.transfer.id": result.transfer_id,
            "agent_mem_vault.transfer.target.thread_id": result.thread_id,
            "agent_mem_vault.transfer.retried": result.retried,
        }
    )
    return result


def _check_request(host: Threads, from_: Endpoint, to: Endpoint, envelope: Envelope) -> str:
    """Check what a caller may get wrong before anything is read; returns the source id."""
    _check_envelope(envelope)
    if from_.thread_id is None:
        raise InvalidInputError(
            "from_ needs the thread_id of the thread to transfer: Endpoint(harness, thread_id)"
        )
    host.check_thread_id(from_.thread_id)
    if to.thread_id is not None:
        host.check_thread_id(to.thread_id)
        if to.thread_id == from_.thread_id:
            raise InvalidInputError(
                "a thread cannot be transferred into itself; name another target thread or none"
            )
    return from_.thread_id


async def _check_access(
    host: Threads,
    tenant: str,
    source_id: str,
    from_: Endpoint,
    to: Endpoint,
    user: User | None,
) -> None:
    """``transfer`` on the source, of its own harness; ``send`` on an existing target."""
    source = await host.check(tenant, source_id, user, "transfer")
    if source.harness != from_.harness.name:
        raise WrongHarnessError(
            f"thread {source_id!r} belongs to harness {source.harness!r}, not "
            f"{from_.harness.name!r}; name its own harness in from_",
        )
    if to.thread_id is not None:
        existing = await get_entry(host.persistence, tenant, to.thread_id)
        if existing is not None:
            _check_target(existing.harness, to)
            await host.check(tenant, to.thread_id, user, "send")


async def _record_plan(
    host: Threads,
    tenant: str,
    transfer_id: str,
    from_: Endpoint,
    to: Endpoint,
    envelope: Envelope,
    user: User | None,
) -> dict[str, Any]:
    """Put the plan if absent (the target id is fixed here); a retry gets the first plan.

    The same transfer id with other endpoints, envelope or user is a conflict.
    """
    p = host.persistence
    plan = {
        "tenant": tenant,
        "from": {"harness": from_.harness.name, "threadId": from_.thread_id},
        "to": {"harness": to.harness.name, "threadId": to.thread_id},
        "envelope": {"note": envelope.note, "messages": envelope.messages},
        "userId": user.id if user is not None else None,
    }
    doc, created = await p.insert(
        TRANSFERS,
        f"{tenant}/{transfer_id}",
        {
            **plan,
            "targetThreadId": to.thread_id or host.next_id(),
            "status": "started",
            "hostSeq": await p.last_seq(HOST_STREAM),
            "createdAt": format_datetime(host.clock.now()),
        },
    )
    if not created and any(doc.value.get(k) != v for k, v in plan.items()):
        raise TransferConflictError(
            f"transfer {transfer_id!r} was already made with other endpoints, envelope or "
            "user; use a new transfer id for a new transfer",
            transfer_id=transfer_id,
        )
    return dict(doc.value)


async def _open_target(host: Threads, move: _Move, to: Endpoint) -> None:
    """The target's index entry: the user as owner, ``harness:transferredFrom``."""
    entry, _ = await create_entry(
        host.persistence,
        host.new_entry(
            move.tenant,
            move.target_id,
            to.harness.name,
            move.user,
            {"harness:transferredFrom": move.origin},
        ),
    )
    _check_target(entry.harness, to)
    if entry.metadata.get("harness:transferredFrom") != move.origin:
        await update_entry(
            host.persistence,
            move.tenant,
            move.target_id,
            lambda v: v.setdefault("metadata", {}).update({"harness:transferredFrom": move.origin}),
        )


async def _write_target(
    host: Threads, move: _Move, envelope: Envelope, summary: str | None
) -> None:
    """One append: ``harness.transferred``, the note, the envelope's messages (once)."""
    source_state = await host.read_state(move.tenant, move.source_id)
    async with host.writing(move.tenant, move.target_id) as log:
        if move.transfer_id in log.state.transfers:
            return  # an earlier attempt wrote it
        now = format_datetime(host.clock.now())
        # The target's first turn links to this transfer (its trace field).
        records: list[Record] = [(TRANSFERRED, _transferred(move, "target"))]
        mark = {"transfer": {"transferId": move.transfer_id, "from": move.origin}}
        messages: list[Message] = []
        if envelope.note:
            meta = {"harness": {**mark, "kind": "note"}}
            messages.append(
                Message(host.next_id(), "system", (TextPart(envelope.note),), meta, now)
            )
        if envelope.messages == "summary":
            meta = {"harness": {**mark, "kind": "summary"}}
            messages.append(
                Message(host.next_id(), "assistant", (TextPart(str(summary)),), meta, now)
            )
        elif envelope.messages == "all":
            messages += copy_messages(
                settled_messages(source_state.messages),
                new_id=host.next_id,
                thread_id=move.source_id,
                created_at=now,
                extra={"transferId": move.transfer_id},
            )
        records.extend((MESSAGE, {"message": m.to_json()}) for m in messages)
        await log.append(records)


async def _write_source(host: Threads, move: _Move) -> None:
    """The source keeps running; it only learns where the conversation went (once)."""
    async with host.writing(move.tenant, move.source_id) as log:
        if move.transfer_id not in log.state.transfers:
            # The source's next operation links to the transfer too.
            await log.append_one(TRANSFERRED, _transferred(move, "source"))
    await update_entry(
        host.persistence,
        move.tenant,
        move.source_id,
        lambda v: v.setdefault("metadata", {}).update({"harness:transferredTo": move.destination}),
    )


def _transferred(move: _Move, role: Literal["source", "target"]) -> dict[str, Any]:
    """The ``harness.transferred`` record of one side, with the trace to link to."""
    return {
        "transferId": move.transfer_id,
        "role": role,
        "from": move.origin,
        "to": move.destination,
        **spans.trace_field(),
    }


def _check_target(harness: str, to: Endpoint) -> None:
    if harness != to.harness.name:
        raise WrongHarnessError(
            f"thread {to.thread_id!r} belongs to harness {harness!r}, not {to.harness.name!r}; "
            "a target must belong to to.harness — name another thread or none",
        )


async def _summarize(host: Threads, move: _Move, harness: Harness, seconds: float) -> str:
    """The source harness's model writes the summary, with the user's keys, in time.

    Its usage goes into the source log under ``source: "transfer"``.
    """
    state = await host.read_state(move.tenant, move.source_id)
    try:
        async with asyncio.timeout(seconds):
            reply = await ask(
                harness.model,
                system_prompts=(SUMMARY_PROMPT,),
                messages=settled_messages(state.messages),
                model_name=harness.model_name,
                user=move.user,
            )
    except TimeoutError:
        raise TransferTimeoutError(
            f"the summary model did not answer within {seconds:g}s, so transfer "
            f"{move.transfer_id!r} failed and nothing moved; retry it, or transfer with "
            "messages='none'",
            transfer_id=move.transfer_id,
        ) from None
    async with host.writing(move.tenant, move.source_id) as log:
        head = {"runId": None, "source": "transfer", "transferId": move.transfer_id}
        await log.append_one(USAGE, usage_record(head, harness.model, reply.usage))
    return reply.text


async def _remember_summary(host: Threads, move: _Move, summary: str) -> None:
    """Keep the summary in the plan, so that a retry does not ask the model again."""
    key = f"{move.tenant}/{move.transfer_id}"
    doc = await host.persistence.get(TRANSFERS, key)
    assert doc is not None
    await host.persistence.put(
        TRANSFERS, key, {**doc.value, "summary": summary}, expected_version=doc.version
    )


async def _announce(
    host: Threads,
    tenant: str,
    transfer_id: str,
    origin: dict[str, Any],
    destination: dict[str, Any],
    user: User | None,
    host_seq: int,
) -> None:
    """One ``transferred`` host event per transfer, then the plan is done.

    The host stream is shared by every host: the event is appended only after
    what was read (``expected_seq``), so two hosts finishing the same transfer
    (a retry racing a stalled first attempt) cannot both announce it.
    """
    p = host.persistence
    event = {
        "transferId": transfer_id,
        "tenant": tenant,
        "from": origin,
        "to": destination,
        "userId": user.id if user is not None else None,
    }
    after = host_seq
    while True:
        fresh = await p.read(HOST_STREAM, after=after)
        if any(
            r.type == "transferred"
            and r.data.get("transferId") == transfer_id
            and r.data.get("tenant") == tenant
            for r in fresh
        ):
            break
        after = fresh[-1].seq if fresh else after
        try:
            await p.append(HOST_STREAM, [("transferred", event)], expected_seq=after)
            break
        except LogConflictError:
            continue  # another host announced something meanwhile: look again
    await _mark_done(host, f"{tenant}/{transfer_id}")


async def _mark_done(host: Threads, key: str) -> None:
    """The plan's last step: a retry from now on returns at once (``retried``)."""
    p = host.persistence
    while True:
        doc = await p.get(TRANSFERS, key)
        assert doc is not None
        if doc.value.get("status") == "done":
            return
        try:
            await p.put(
                TRANSFERS, key, {**doc.value, "status": "done"}, expected_version=doc.version
            )
            return
        except VersionConflictError:
            continue  # another host marked it (or kept the summary) meanwhile
