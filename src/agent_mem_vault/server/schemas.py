"""Request and response bodies of the harness HTTP API, as pydantic models.

These are the edge of the harness service: the server validates every body
against them (so bad input is a 400 with a code, never a 500) and the OpenAPI
document is generated from them. Field names are the harness design's wire names
(``threadId``, ``pendingWaits``, ``questionId``); Python code uses snake_case
and the aliases carry the camelCase.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..harness.log import ID_PATTERN, MAX_ID

__all__ = [
    "AnswerBody",
    "ContinueBody",
    "EndWaitBody",
    "ErrorBody",
    "EventBody",
    "FileBody",
    "HarnessInfo",
    "MessageBody",
    "OkBody",
    "SendBody",
    "ShareBody",
    "SnapshotBody",
    "TransferBody",
    "TransferResultBody",
    "TurnResultBody",
    "UserBody",
    "WaitBody",
    "WaitingThreadBody",
]

MAX_TEXT = 100_000
"""Longest message text accepted over HTTP, in characters."""


_BASE64 = r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"
_URL = r"^https?://[!-~]+$"  # printable ASCII: other characters are %-encoded in a URL


def _id_field(alias: str, description: str) -> Any:
    """An optional id in a body: the same characters and length as ids in paths."""
    return Field(default=None, alias=alias, pattern=ID_PATTERN, description=description)


class _Body(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")


class _Out(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="allow")


class FileBody(_Body):
    """A file sent with a message: inline base64 ``data`` or a ``url``."""

    # Exactly one of data and url, said in the schema too (for clients and the fuzz test).
    model_config = ConfigDict(
        populate_by_name=True,
        extra="forbid",
        json_schema_extra={
            "oneOf": [
                {"required": [source], "properties": {source: {"type": "string"}}}
                for source in ("data", "url")
            ]
        },
    )

    media_type: str = Field(
        alias="mediaType", max_length=200, pattern=r"^[A-Za-z0-9.+-]+/[A-Za-z0-9.+-]+$"
    )
    # The patterns are checked below, with messages a person can act on.
    data: str | None = Field(
        default=None, description="Base64 content.", json_schema_extra={"pattern": _BASE64}
    )
    url: str | None = Field(
        default=None,
        max_length=4096,
        description="An http(s) URL.",
        json_schema_extra={"pattern": _URL},
    )
    name: str | None = Field(default=None, max_length=512)

    @model_validator(mode="after")
    def _one_source(self) -> FileBody:
        # A file without content would reach the model as an empty image link.
        if (self.data is None) == (self.url is None):
            raise ValueError("a file has either base64 `data` or a `url`, not both or neither")
        if self.data is not None and not re.fullmatch(_BASE64, self.data):
            raise ValueError("`data` is not base64; encode the file's bytes with base64")
        if self.url is not None and not re.fullmatch(_URL, self.url):
            raise ValueError(
                "`url` must be an http:// or https:// URL (non-ASCII characters %-encoded)"
            )
        return self


class SendBody(_Body):
    """``POST …/messages``: a user message, or an operator reply with ``as: "operator"``.

    A message has some text that is not only whitespace, or at least one file.
    """

    model_config = ConfigDict(
        populate_by_name=True,
        extra="forbid",
        json_schema_extra={
            "anyOf": [
                {"properties": {"text": {"pattern": r"\S"}}, "required": ["text"]},
                {"properties": {"files": {"minItems": 1}}, "required": ["files"]},
            ]
        },
    )

    text: str = Field(default="", max_length=MAX_TEXT, description="The message text.")
    as_: Literal["user", "operator"] = Field(
        default="user",
        alias="as",
        description="`operator` sends a reply as the person who took over (needs the "
        "operator action and an open human wait).",
    )
    input_id: str | None = _id_field("inputId", "Idempotency key: the same input id runs once.")
    files: list[FileBody] = Field(default_factory=list, max_length=20)

    @model_validator(mode="after")
    def _not_empty(self) -> SendBody:
        if not self.text.strip() and not self.files:
            raise ValueError("the message is empty; send some text or a file")
        return self


class TurnResultBody(_Out):
    """What one ``send`` gave: the turn's text, its status and run id."""

    text: str
    status: str = Field(
        description="completed, interrupted (a person took over), failed, held (the thread "
        "waits for a person; the message is kept) or sent (an operator's reply)."
    )
    run_id: str | None = Field(default=None, alias="runId")
    input_id: str | None = Field(default=None, alias="inputId")
    code: str | None = Field(default=None, description="Why the turn failed, as a code.")
    message: str | None = Field(
        default=None,
        description="Why the turn failed, in words; for interrupted and held, that a person "
        "from the team has the conversation and will answer.",
    )
    refusals: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Each tool call the harness answered with an error during the turn "
        "({code, message, tool, toolCallId, agent}): the handoff limit, an unknown agent "
        "or tool, bad arguments, a tool that raised.",
    )


class MessageBody(_Out):
    """One transcript message; assistant messages carry ``agent`` (null: main model)."""

    id: str
    role: str
    parts: list[dict[str, Any]]
    metadata: dict[str, Any] = Field(default_factory=dict)
    agent: str | None = None
    created_at: str | None = Field(default=None, alias="createdAt")


class WaitBody(_Out):
    """An open wait: ``kind`` is ``human`` for a handoff to a person; ``message`` its note."""

    wait_id: str = Field(alias="waitId")
    kind: str
    message: str | None = None


class SnapshotBody(_Out):
    """The state of a thread as its members see it."""

    thread_id: str = Field(alias="threadId")
    harness: str = Field(description="The key of the harness in this app.")
    messages: list[MessageBody]
    active_agent: str | None = Field(default=None, alias="activeAgent")
    pending_waits: list[WaitBody] = Field(alias="pendingWaits")
    status: str | None = Field(default=None, description="idle, running or paused.")
    metadata: dict[str, Any] = Field(
        default_factory=dict,
        description="The thread's metadata, e.g. `harness:transferredFrom` after a transfer.",
    )
    last_event_id: str | None = Field(
        default=None,
        alias="lastEventId",
        description="Id of the newest event this snapshot includes; pass it to the event "
        "stream to continue from here.",
    )


class AnswerBody(_Body):
    """``POST …/answer``: e.g. ``{"resume": true}`` or ``{"handBack": "billing"}``."""

    question_id: str = Field(alias="questionId", pattern=ID_PATTERN)
    value: Any = Field(description='{"resume": true} or {"handBack": "<agent>"|"main"}')


class EndWaitBody(_Body):
    """``POST …/waits/{waitId}/resolve`` and ``…/cancel``: an empty object, or no body."""


class ContinueBody(_Body):
    """``POST …/continue``: run a turn on the held messages; an empty object, or no body."""

    input_id: str | None = _id_field(
        "inputId", "Idempotency key: a retry with the same input id runs no second turn."
    )


class ShareBody(_Body):
    """``POST …/members``: add a member to the thread with a role."""

    user_id: str = Field(alias="userId", min_length=1, max_length=256, pattern=r"^[^/]+$")
    role: str = Field(
        min_length=1,
        max_length=64,
        pattern=r"^[A-Za-z0-9_-]+$",
        description="A role other than `owner` (a thread has one owner, who opened it).",
        json_schema_extra={"not": {"enum": ["owner"]}},
    )

    @model_validator(mode="after")
    def _not_owner(self) -> ShareBody:
        if self.role == "owner":
            raise ValueError("a thread has one owner, who opened it; share with another role")
        return self


class TransferBody(_Body):
    """``POST …/transfer``: move the conversation to a thread of another harness."""

    to: str = Field(min_length=1, max_length=MAX_ID, description="Key of the target harness.")
    thread_id: str | None = _id_field("threadId", "An existing target thread; omit for a new one.")
    note: str = Field(default="", max_length=MAX_TEXT, description="The target's first message.")
    messages: Literal["none", "summary", "all"] = "none"
    transfer_id: str | None = _id_field(
        "transferId", "A retry with the same id makes no second thread."
    )


class TransferResultBody(_Out):
    thread_id: str = Field(alias="threadId")
    harness: str


class ShareResultBody(_Out):
    thread_id: str = Field(alias="threadId")
    user_id: str = Field(alias="userId")
    role: str


class OkBody(_Out):
    ok: bool = True


class EventBody(_Out):
    """One event of a thread, as the ``data`` of an SSE message (its ``id`` is the SSE id)."""

    id: str
    name: str
    value: Any = None
    run_id: str | None = Field(default=None, alias="runId")


class UserBody(_Out):
    id: str | None
    tenant_id: str | None = Field(default=None, alias="tenantId")


class HarnessInfo(_Out):
    """A harness this app serves, with what the console needs to drive it."""

    key: str
    name: str
    agents: list[str]
    allow_handoff_to_human: bool = Field(alias="allowHandoffToHuman")


class WaitingThreadBody(_Out):
    """A thread that waits for a person, as the operator console lists it."""

    thread_id: str = Field(alias="threadId")
    harness: str
    wait_id: str = Field(alias="waitId")
    message: str | None = None
    active_agent: str | None = Field(default=None, alias="activeAgent")


class ErrorBody(_Out):
    """Every 4xx/5xx answer: the stable rejection code and what to do."""

    code: str
    message: str
    details: dict[str, Any] | None = None
