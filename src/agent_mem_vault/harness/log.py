"""The thread log's record types, how to build them, and how to replay them.

A thread's log is an append-only stream (``harness/<tenant>/<thread>``). Each
record is also an event of the session's stream, under the same name:

================== ==========================================================
``input``          an accepted input: id, payload hash, run id (None: held)
``message``        one transcript message (JSON wire form)
``run.started``    a turn began, with the agent that answers it
``harness.handoff`` from, to, note, by, runId (and waitId for a person)
``wait.opened``    a wait (``human``): message, the agent before it
``wait.closed``    answered, resolved or cancelled; who gets the thread
``run.finished``   status (completed / interrupted / failed), text, code
``usage``          tokens a model call spent, and for what (turn, transfer)
``harness.transferred`` a transfer in or out, with its transfer id
``harness.refused`` a tool call answered with an error: code, message, tool
================== ==========================================================

Everything here is pure: records in, state out.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from ..core.errors import DataError, InvalidInputError
from .messages import Message
from .model import Usage
from .state import InputRecord, Refusal, RunRecord, ThreadState, Wait

__all__ = [
    "HANDOFF",
    "ID_PATTERN",
    "INPUT",
    "MAX_ID",
    "MESSAGE",
    "REFUSED",
    "RUN_FINISHED",
    "RUN_STARTED",
    "TRANSFERRED",
    "USAGE",
    "WAIT_CLOSED",
    "WAIT_OPENED",
    "Record",
    "apply",
    "check_id",
    "input_hash",
    "replay",
    "stream_name",
]

INPUT = "input"
MESSAGE = "message"
RUN_STARTED = "run.started"
HANDOFF = "harness.handoff"
WAIT_OPENED = "wait.opened"
WAIT_CLOSED = "wait.closed"
RUN_FINISHED = "run.finished"
USAGE = "usage"
TRANSFERRED = "harness.transferred"
REFUSED = "harness.refused"

Record = tuple[str, dict[str, Any]]

MAX_ID = 200
"""Longest id (thread, input, wait, transfer) accepted anywhere: it ends up in stream names."""

ID_PATTERN = rf"^[A-Za-z0-9._:~-]{{1,{MAX_ID}}}$"
"""The one id rule: the HTTP schemas publish it; server and client check with :func:`check_id`."""

_ID = re.compile(ID_PATTERN)


def check_id(field: str, value: Any, *, code: str | None = None) -> str:
    """A thread or input id as callers give it: 1 to 200 URL-safe characters.

    Ids end up in stream names, document keys and URLs, so they are checked
    before anything is written. ``code`` refines ``invalid_input`` where an
    interface names the rejection (``invalid_id`` over HTTP).
    """
    if not isinstance(value, str) or not _ID.fullmatch(value):
        raise InvalidInputError(
            f"{field.replace('_', ' ')} {str(value)[:80]!r} is not valid: use 1 to {MAX_ID} "
            "ASCII letters, digits, '.', '_', ':', '~' or '-'",
            code=code,
            field=field,
        )
    return value


def stream_name(tenant: str, thread_id: str) -> str:
    """The log stream of a thread; tenants never share a stream."""
    return f"harness/{tenant}/{thread_id}"


# One encoder: ``json.dumps`` with options builds a new one per call.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def input_hash(payload: Mapping[str, Any]) -> str:
    """A stable digest of an input's payload, to tell a retry from a different input."""
    return hashlib.sha256(_CANONICAL.encode(payload).encode()).hexdigest()


def replay(records: Iterable[Any], state: ThreadState | None = None) -> ThreadState:
    """Fold records (anything with ``seq``, ``type``, ``data``) into a state."""
    state = state if state is not None else ThreadState()
    for record in records:
        # A record this state has seen (read by a concurrent refresh) is not applied twice.
        if record.seq > state.seq:
            apply(state, record.type, record.data, record.seq)
    return state


def apply(state: ThreadState, kind: str, data: Mapping[str, Any], seq: int) -> None:
    """Apply one record; unknown record types are skipped so that old hosts read new logs."""
    try:
        _APPLY.get(kind, _skip)(state, data)
    except (KeyError, TypeError, ValueError) as exc:
        raise DataError(
            f"log record {seq} ({kind}) is damaged: {exc!r}; inspect the thread's log"
        ) from exc
    state.seq = seq


def _skip(state: ThreadState, data: Mapping[str, Any]) -> None:
    return None


def _input(state: ThreadState, data: Mapping[str, Any]) -> None:
    state.inputs[data["inputId"]] = InputRecord(
        input_id=data["inputId"],
        hash=data["hash"],
        kind=data["kind"],
        run_id=data.get("runId"),
        held=bool(data.get("held", False)),
    )


def _message(state: ThreadState, data: Mapping[str, Any]) -> None:
    state.messages.append(Message.from_json(data["message"]))


def _run_started(state: ThreadState, data: Mapping[str, Any]) -> None:
    run_id = data["runId"]
    trace = data.get("trace")
    state.runs[run_id] = RunRecord(
        run_id=run_id, agent=data.get("agent"), start=len(state.messages), trace=trace
    )
    state.running = run_id
    if trace:
        state.trace = trace


def _handoff(state: ThreadState, data: Mapping[str, Any]) -> None:
    to = data["to"]
    # A handoff to a person leaves the active agent as it was: the wait record
    # pauses the thread, and ``before`` remembers who gets it back.
    if to is None or isinstance(to, str):
        state.active_agent = to


def _wait_opened(state: ThreadState, data: Mapping[str, Any]) -> None:
    wait = Wait(
        wait_id=data["waitId"],
        kind=data["kind"],
        message=data.get("message"),
        run_id=data.get("runId"),
        before=data.get("before"),
        created_at=data.get("createdAt"),
    )
    state.waits[wait.wait_id] = wait


def _wait_closed(state: ThreadState, data: Mapping[str, Any]) -> None:
    wait = state.waits[data["waitId"]]
    how = data["how"]
    status: Any = {"answer": "answered", "resolve": "resolved", "cancel": "cancelled"}[how]
    state.waits[wait.wait_id] = Wait(
        wait.wait_id, wait.kind, wait.message, wait.run_id, wait.before, status, wait.created_at
    )


def _run_finished(state: ThreadState, data: Mapping[str, Any]) -> None:
    run_id = data["runId"]
    old = state.runs.get(run_id) or RunRecord(run_id=run_id, agent=None)
    state.runs[run_id] = RunRecord(
        run_id=run_id,
        agent=old.agent,
        status=data["status"],
        text=data.get("text", ""),
        code=data.get("code"),
        message=data.get("message"),
        start=old.start,
        refusals=old.refusals,
    )
    if state.running == run_id:
        state.running = None


def _usage(state: ThreadState, data: Mapping[str, Any]) -> None:
    state.usage = state.usage + Usage(
        int(data.get("inputTokens", 0)), int(data.get("outputTokens", 0))
    )


def _transferred(state: ThreadState, data: Mapping[str, Any]) -> None:
    state.transfers[data["transferId"]] = dict(data)
    if data.get("trace"):
        state.trace = data["trace"]


def _refused(state: ThreadState, data: Mapping[str, Any]) -> None:
    run = state.runs.get(data["runId"])
    if run is not None:
        state.runs[run.run_id] = replace(run, refusals=(*run.refusals, Refusal.from_json(data)))


_APPLY = {
    REFUSED: _refused,
    INPUT: _input,
    MESSAGE: _message,
    RUN_STARTED: _run_started,
    HANDOFF: _handoff,
    WAIT_OPENED: _wait_opened,
    WAIT_CLOSED: _wait_closed,
    RUN_FINISHED: _run_finished,
    USAGE: _usage,
    TRANSFERRED: _transferred,
}
