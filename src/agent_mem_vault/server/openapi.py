"""The OpenAPI 3.1 document of the harness app, generated from the pydantic bodies.

Written out by hand per route (it is short) so that every status a route can
answer, and the error body that goes with it, is in the document: clients and
the schemathesis fuzz test read it as the contract.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from ..core.version import __version__
from ..harness.log import ID_PATTERN
from . import schemas as s
from .json_body import MAX_DEPTH, MAX_ITEMS

__all__ = ["openapi_document"]

_REF = "#/components/schemas/{model}"
_MODELS: list[type[BaseModel]] = [
    s.SendBody,
    s.TurnResultBody,
    s.SnapshotBody,
    s.AnswerBody,
    s.EndWaitBody,
    s.ContinueBody,
    s.ShareBody,
    s.ShareResultBody,
    s.TransferBody,
    s.TransferResultBody,
    s.OkBody,
    s.EventBody,
    s.UserBody,
    s.HarnessInfo,
    s.WaitingThreadBody,
    s.ErrorBody,
]


def _ref(model: type[BaseModel]) -> dict[str, str]:
    return {"$ref": _REF.format(model=model.__name__)}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _errors(*statuses: int) -> dict[str, Any]:
    reasons = {
        400: "Bad input: malformed JSON, a body or id that does not validate, a body nested "
        f"deeper than {MAX_DEPTH} levels (`body_too_deep`) or with a collection of more than "
        f"{MAX_ITEMS:,} items (`body_too_wide`), duplicate keys, NaN/Infinity, NUL or lone "
        "surrogates, a wait answer of the wrong shape (`invalid_answer`).",
        401: "No user could be found for the request: no credentials, or credentials that "
        "match no user (`unauthenticated`), or an `Authorization` header that does not use "
        "the Bearer scheme (`bad_auth_scheme`).",
        403: "The user lacks the access action.",
        404: "Unknown harness, thread, wait or agent.",
        409: "The thread's state forbids it (e.g. `no_human_wait`, `wrong_harness`).",
        413: "The body is larger than the limit.",
        415: "The body is not sent as `application/json`.",
    }
    return {str(code): _json(_ref(s.ErrorBody), reasons[code]) for code in statuses}


def _op(
    summary: str,
    ok: dict[str, Any],
    *,
    body: type[BaseModel] | None = None,
    body_required: bool = True,
    errors: tuple[int, ...] = (400, 401, 403, 404, 409),
    params: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    op: dict[str, Any] = {"summary": summary, "responses": {"200": ok, **_errors(*errors)}}
    if params:
        op["parameters"] = params
    if body is not None:
        op["requestBody"] = {
            "required": body_required,
            "content": {"application/json": {"schema": _ref(body)}},
        }
        op["responses"].update(_errors(400, 413, 415))
    return op


def _id_param(name: str, where: str, *, required: bool = True) -> dict[str, Any]:
    """A TID in the path or the query string."""
    param: dict[str, Any] = {"name": name, "in": where}
    if required:
        param["required"] = True
    param["schema"] = {"type": "string", "pattern": ID_PATTERN}
    return param


def openapi_document(*, title: str, harness_keys: list[str]) -> dict[str, Any]:
    """The document for an app that serves ``harness_keys``."""
    _, defs = models_json_schema(
        [(m, "validation") for m in _MODELS], by_alias=True, ref_template=_REF
    )
    harness = {
        "name": "harness",
        "in": "path",
        "required": True,
        "schema": {"type": "string", "enum": harness_keys},
        "description": "The key of a harness this app serves.",
    }
    thread_params = [harness, _id_param("threadId", "path")]

    def thread_post(
        summary: str, result: dict[str, Any], body: type[BaseModel], *, body_required: bool = True
    ) -> dict[str, Any]:
        """A POST on one thread: the harness and the thread id in the path, a JSON body."""
        return {
            "post": _op(
                summary, result, body=body, body_required=body_required, params=thread_params
            )
        }

    base = "/api/{harness}/threads/{threadId}"
    ok = _json(_ref(s.OkBody), "Done.")
    turn = _json(_ref(s.TurnResultBody), "The turn's text, status and run id.")
    paths: dict[str, Any] = {
        "/api/me": {
            "get": _op(
                "The user of the request",
                _json(
                    _ref(s.UserBody),
                    "The user; `id` null when the request sends no `Authorization` header.",
                ),
                errors=(401,),
            )
        },
        "/api/harnesses": {
            "get": _op(
                "The harnesses this app serves",
                _json({"type": "array", "items": _ref(s.HarnessInfo)}, "The harnesses."),
                errors=(401,),
            )
        },
        "/api/{harness}/waiting": {
            "get": _op(
                "Threads waiting for a person that the user may act on as operator",
                _json({"type": "array", "items": _ref(s.WaitingThreadBody)}, "The threads."),
                params=[harness],
                errors=(401, 404),
            )
        },
        base: {
            "get": _op(
                "Snapshot: messages (each with its agent), active agent, pending waits",
                _json(_ref(s.SnapshotBody), "The snapshot."),
                params=thread_params,
            )
        },
        f"{base}/messages": thread_post(
            'Send a message; `as: "operator"` replies as the person who took over',
            turn,
            s.SendBody,
        ),
        f"{base}/answer": thread_post(
            "Answer a wait (`questionId` from the snapshot's pendingWaits)", ok, s.AnswerBody
        ),
        **{
            f"{base}/waits/{{waitId}}/{how}": {
                "post": _op(
                    f"{how.capitalize()} a wait; the agent before the handoff gets the thread back",
                    ok,
                    body=s.EndWaitBody,
                    body_required=False,
                    params=[*thread_params, _id_param("waitId", "path")],
                )
            }
            for how in ("resolve", "cancel")
        },
        f"{base}/continue": thread_post(
            "Run a turn on the held user messages without a new message",
            turn,
            s.ContinueBody,
            body_required=False,
        ),
        f"{base}/members": thread_post(
            "Share the thread: add a member with a role (`member`, `operator`, …)",
            _json(_ref(s.ShareResultBody), "The member was added."),
            s.ShareBody,
        ),
        f"{base}/transfer": thread_post(
            "Move the conversation to a thread of another harness",
            _json(_ref(s.TransferResultBody), "The target thread."),
            s.TransferBody,
        ),
        "/api/{harness}/move-to-{target}": {
            "post": _op(
                "Transfer in the harness design's form: answers the target thread id as text",
                {
                    "description": "The target thread id.",
                    "content": {"text/plain": {"schema": {"type": "string"}}},
                },
                params=[
                    harness,
                    {**harness, "name": "target"},
                    _id_param("threadId", "query"),
                    {"name": "note", "in": "query", "schema": {"type": "string"}},
                    {
                        "name": "messages",
                        "in": "query",
                        "schema": {"type": "string", "enum": ["none", "summary", "all"]},
                    },
                    _id_param("transferId", "query", required=False),
                ],
            )
        },
        f"{base}/events": {
            "get": _op(
                "Server-sent events of the thread; resume with Last-Event-ID",
                {
                    "description": "An endless `text/event-stream`; each `data:` is an EventBody.",
                    "content": {"text/event-stream": {"schema": {"type": "string"}}},
                },
                params=[
                    *thread_params,
                    {
                        "name": "Last-Event-ID",
                        "in": "header",
                        "schema": {"type": "string", "pattern": r"^[0-9]{1,18}$"},
                        "description": "The last event id received; the stream continues after it.",
                    },
                    {
                        "name": "lastEventId",
                        "in": "query",
                        "schema": {"type": "string", "pattern": r"^[0-9]{1,18}$"},
                        "description": "The same, for clients that cannot set headers.",
                    },
                ],
            )
        },
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": title,
            "version": __version__,
            "description": "A conversation handed between agents, to a person and back, and "
            "moved to another harness. Errors answer with an ErrorBody carrying a stable code.",
        },
        "paths": paths,
        "components": {
            "schemas": defs.get("$defs", {}),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}, {}],
    }
