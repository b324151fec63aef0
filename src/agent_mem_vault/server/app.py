"""``create_harness_app``: the harness service over HTTP, as one Starlette app.

The app is an interface and stays thin: each route first finds the user of the
request with the host's access (``access.get_user(request)``; 401 before any
input is looked at), then parses its input (path, query, a JSON body: its
content type, size, depth and widths checked before it is parsed, then a
pydantic model, see :mod:`.json_body`), calls ONE method of the harness
service and renders the result. Errors go to the single
handler in :mod:`.errors`. The service never sees Starlette: it gets plain
values and the request object only through ``get_user``.

Routes (``{harness}`` is the key the app was given for a harness):

====== ============================================================ =========================
GET    /api/me                                                      the user of the request
GET    /api/harnesses                                               the harnesses served here
GET    /api/{harness}/waiting                                       threads waiting for a person
GET    /api/{harness}/threads/{threadId}                            snapshot
POST   /api/{harness}/threads/{threadId}/messages                   send (``as: "operator"``)
POST   /api/{harness}/threads/{threadId}/answer                     answer a wait
POST   /api/{harness}/threads/{threadId}/waits/{waitId}/resolve     resolve a wait
POST   /api/{harness}/threads/{threadId}/waits/{waitId}/cancel      cancel a wait
POST   /api/{harness}/threads/{threadId}/continue                   continue without a message
POST   /api/{harness}/threads/{threadId}/members                    share the thread
POST   /api/{harness}/threads/{threadId}/transfer                   transfer (JSON body)
POST   /api/{harness}/move-to-{target}?threadId=…                   transfer, the design's form
GET    /api/{harness}/threads/{threadId}/events                     SSE stream, resumable
GET    /openapi.json                                                the OpenAPI document
GET    /console/                                                    the operator console
====== ============================================================ =========================
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from ..core.errors import AgentMemVaultError, InvalidInputError
from ..harness.log import check_id
from . import schemas as s
from .bridge import HarnessService
from .errors import (
    BodyTooLargeError,
    MalformedJsonError,
    UnsupportedMediaTypeError,
    error_response,
)
from .events import SEND_TIMEOUT_SECONDS, event_stream_response
from .json_body import is_json_media_type, parse_json_body
from .openapi import openapi_document

__all__ = ["DEFAULT_MAX_BODY_BYTES", "create_harness_app"]

DEFAULT_MAX_BODY_BYTES = 1_000_000
"""Largest request body accepted (1 MB); larger ones get 413 ``body_too_large``."""

CONSOLE_DIR = Path(__file__).parent / "console"

B = TypeVar("B", bound=BaseModel)
Handler = Callable[[Request], Awaitable[Response]]


def create_harness_app(
    host: Any,
    harnesses: Mapping[str, Any] | Sequence[Any],
    *,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    console: bool = True,
    title: str = "agent-mem-vault harness",
    sse_send_timeout: float = SEND_TIMEOUT_SECONDS,
) -> Starlette:
    """Serve ``harnesses`` of ``host`` over HTTP, with the operator console at ``/console/``.

    ``harnesses`` maps a URL key to a harness (``{"desk": desk, "billing":
    billing_desk}``); a plain list uses the last segment of each harness name
    (``acme/desk`` → ``desk``). Mount the result in FastAPI with
    ``api.mount("/", app)`` or run it with ``uvicorn.run(app)``. An event
    stream whose client reads nothing for ``sse_send_timeout`` seconds is
    closed (the client resumes from its last event id).

    >>> app = create_harness_app(host, {"desk": desk, "billing": billing_desk})  # doctest: +SKIP
    """
    service = HarnessService(host, harnesses)
    api = _Api(service, max_body_bytes, sse_send_timeout)
    document = openapi_document(title=title, harness_keys=service.keys())

    async def openapi(request: Request) -> Response:
        return JSONResponse(document)

    async def root(request: Request) -> Response:
        # root_path keeps the redirect right when the app is mounted under a prefix.
        prefix = request.scope.get("root_path", "")
        return RedirectResponse(
            prefix + ("/console/" if console else "/openapi.json"), status_code=307
        )

    routes: list[BaseRoute] = [
        Route("/", root, methods=["GET"]),
        Route("/openapi.json", openapi, methods=["GET"]),
        Route("/api/me", api.me, methods=["GET"]),
        Route("/api/harnesses", api.list_harnesses, methods=["GET"]),
        Route("/api/{harness}/waiting", api.waiting, methods=["GET"]),
        Route("/api/{harness}/threads/{thread_id}", api.snapshot, methods=["GET"]),
        Route("/api/{harness}/threads/{thread_id}/messages", api.send, methods=["POST"]),
        Route("/api/{harness}/threads/{thread_id}/answer", api.answer, methods=["POST"]),
        Route(
            "/api/{harness}/threads/{thread_id}/waits/{wait_id}/resolve",
            api.resolve,
            methods=["POST"],
        ),
        Route(
            "/api/{harness}/threads/{thread_id}/waits/{wait_id}/cancel",
            api.cancel,
            methods=["POST"],
        ),
        Route("/api/{harness}/threads/{thread_id}/continue", api.continue_, methods=["POST"]),
        Route("/api/{harness}/threads/{thread_id}/members", api.share, methods=["POST"]),
        Route("/api/{harness}/threads/{thread_id}/transfer", api.transfer, methods=["POST"]),
        Route("/api/{harness}/move-to-{target}", api.move_to, methods=["POST"]),
        Route("/api/{harness}/threads/{thread_id}/events", api.events, methods=["GET"]),
    ]
    if console:
        routes.append(Mount("/console", StaticFiles(directory=CONSOLE_DIR, html=True)))
    return Starlette(
        routes=routes,
        exception_handlers={
            AgentMemVaultError: error_response,
            HTTPException: error_response,
            Exception: error_response,
        },
    )


class _Api:
    """The route handlers; each one parses, makes one service call and renders."""

    def __init__(self, service: HarnessService, max_body_bytes: int, send_timeout: float) -> None:
        self.service = service
        self.max_body_bytes = max_body_bytes
        self.send_timeout = send_timeout

    async def me(self, request: Request) -> Response:
        user = await self.service.user_of(request, required=False)
        return _json(self.service.render_user(user))

    async def list_harnesses(self, request: Request) -> Response:
        await self.service.user_of(request)
        return JSONResponse([h.model_dump(by_alias=True) for h in self.service.harness_infos()])

    async def waiting(self, request: Request) -> Response:
        user = await self.service.user_of(request)
        key = _path(request, "harness")
        rows = await self.service.waiting(key, user)
        return JSONResponse([r.model_dump(by_alias=True) for r in rows])

    async def snapshot(self, request: Request) -> Response:
        user, key, thread_id = await self._on_thread(request)
        return _json(await self.service.snapshot(key, thread_id, user))

    async def send(self, request: Request) -> Response:
        user, key, thread_id = await self._on_thread(request)
        body = await self._body(request, s.SendBody)
        return _json(await self.service.send(key, thread_id, user, body))

    async def answer(self, request: Request) -> Response:
        user, key, thread_id = await self._on_thread(request)
        body = await self._body(request, s.AnswerBody)
        await self.service.answer(key, thread_id, user, body.question_id, body.value)
        return _json(s.OkBody())

    async def resolve(self, request: Request) -> Response:
        return await self._end_wait(request, "resolve")

    async def cancel(self, request: Request) -> Response:
        return await self._end_wait(request, "cancel")

    async def _end_wait(self, request: Request, how: str) -> Response:
        user, key, thread_id = await self._on_thread(request)
        wait_id = _id(request.path_params["wait_id"], "waitId")
        await self._body(request, s.EndWaitBody, optional=True)
        await self.service.end_wait(key, thread_id, user, wait_id, how)
        return _json(s.OkBody())

    async def continue_(self, request: Request) -> Response:
        user, key, thread_id = await self._on_thread(request)
        body = await self._body(request, s.ContinueBody, optional=True)
        return _json(
            await self.service.continue_without_message(key, thread_id, user, body.input_id)
        )

    async def share(self, request: Request) -> Response:
        user, key, thread_id = await self._on_thread(request)
        body = await self._body(request, s.ShareBody)
        await self.service.share(key, thread_id, user, body.user_id, body.role)
        return _json(s.ShareResultBody(threadId=thread_id, userId=body.user_id, role=body.role))

    async def transfer(self, request: Request) -> Response:
        user, key, thread_id = await self._on_thread(request)
        body = await self._body(request, s.TransferBody)
        return _json(await self.service.transfer(key, thread_id, user, body))

    async def move_to(self, request: Request) -> Response:
        """The design's ``POST /api/move-to-billing?threadId=…``: answers the new thread id."""
        user = await self.service.user_of(request)
        key = _path(request, "harness")
        target = _path(request, "target")
        query = request.query_params
        raw_thread = query.get("threadId")
        if not raw_thread:
            raise InvalidInputError(
                "missing threadId: call POST …/move-to-<harness>?threadId=<thread>",
                code="missing_thread_id",
            )
        body = _validate(
            s.TransferBody,
            {
                "to": target,
                "note": query.get("note", ""),
                "messages": query.get("messages", "none"),
                **({"transferId": query["transferId"]} if "transferId" in query else {}),
            },
        )
        result = await self.service.transfer(key, _id(raw_thread, "threadId"), user, body)
        return PlainTextResponse(result.thread_id)

    async def events(self, request: Request) -> Response:
        user, key, thread_id = await self._on_thread(request)
        raw = request.headers.get("last-event-id") or request.query_params.get("lastEventId")
        session, after = await self.service.open_for_events(key, thread_id, user, raw)
        return event_stream_response(session, after, send_timeout=self.send_timeout)

    async def _on_thread(self, request: Request) -> tuple[Any, str, str]:
        """Who asks, and the harness key and thread id of the path; the user first, so
        a request without a login learns nothing about the path."""
        user = await self.service.user_of(request)
        key, thread_id = _thread(request)
        return user, key, thread_id

    async def _body(self, request: Request, model: type[B], *, optional: bool = False) -> B:
        """The body as ``model``: content type, then size, then depth and widths, then fields.

        Called after the user is known, so a request without a login never has
        its body read. A route whose body is optional takes no body at all
        (no content type needed) as an empty object.
        """
        content_type = request.headers.get("content-type")
        if not is_json_media_type(content_type):
            if optional and not _has_body(request):
                return model()
            raise UnsupportedMediaTypeError(
                f"the request body is sent as {content_type or 'no content type'}; "
                "send JSON with Content-Type: application/json",
                contentType=content_type,
            )
        raw = await _read_body(request, self.max_body_bytes)
        if not raw.strip():
            if optional:
                return model()
            raise MalformedJsonError(
                f"the request body is empty; send a JSON object ({model.__name__})"
            )
        value = parse_json_body(raw)
        if not isinstance(value, dict):
            raise MalformedJsonError(
                f"the request body must be a JSON object ({model.__name__}), "
                f"got {type(value).__name__}"
            )
        return _validate(model, value)


def _has_body(request: Request) -> bool:
    """Whether the request says it carries a body (a non-zero length, or chunks)."""
    declared = request.headers.get("content-length")
    if declared is not None:
        return declared.strip() != "0"
    return "transfer-encoding" in request.headers


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise InvalidInputError("Content-Length must be a number of bytes", code="bad_request")
        if int(declared) > limit:
            raise BodyTooLargeError(
                f"the request body has {declared} bytes; the limit is {limit}",
                limit=limit,
            )
    chunks = bytearray()
    async for chunk in request.stream():
        chunks += chunk
        if len(chunks) > limit:
            raise BodyTooLargeError(
                f"the request body is larger than the limit of {limit} bytes", limit=limit
            )
    return bytes(chunks)


def _validate(model: type[B], value: dict[str, Any]) -> B:
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        problems = [
            {
                "field": ".".join(str(p) for p in err["loc"]) or "(body)",
                "problem": err["msg"].removeprefix("Value error, "),
            }
            for err in exc.errors(include_url=False, include_input=False, include_context=False)
        ]
        first = problems[0]
        raise InvalidInputError(
            f"invalid {model.__name__}: {first['field']}: {first['problem']}"
            + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""),
            code="invalid_body",
            errors=problems,
        ) from None


def _path(request: Request, name: str) -> str:
    return str(request.path_params[name])


def _thread(request: Request) -> tuple[str, str]:
    return _path(request, "harness"), _id(_path(request, "thread_id"), "threadId")


def _id(value: str, field: str) -> str:
    """Ids in paths and queries (``ID_PATTERN``), checked before any service call."""
    return check_id(field, value, code="invalid_id")


def _json(model: BaseModel) -> Response:
    """``model`` as JSON, serialized once by pydantic (no dict, then ``json.dumps``, between)."""
    return Response(model.model_dump_json(by_alias=True), media_type="application/json")
