"""HTTP errors: the codes this interface adds, and the one place errors become responses.

Every failure a request can meet ends in :func:`error_response`: library
errors (the tree in ``core/errors.py``) keep their status and code, Starlette's
own routing errors (unknown path, wrong method) get a code too, and anything
else is logged and answered with a plain 500 that leaks nothing. Bad input is
never a 500: bodies, ids and headers are checked before a service is called.
"""

from __future__ import annotations

import logging
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..core.errors import AgentMemVaultError, InvalidInputError, NotFoundError

__all__ = [
    "BadEventIdError",
    "BodyTooDeepError",
    "BodyTooLargeError",
    "BodyTooWideError",
    "MalformedJsonError",
    "UnknownHarnessError",
    "UnsupportedMediaTypeError",
    "error_response",
]

log = logging.getLogger(__name__)


class BodyTooLargeError(InvalidInputError, code="body_too_large", http_status=413):
    """The request body is larger than the app's limit (``max_body_bytes``)."""


class UnsupportedMediaTypeError(InvalidInputError, code="unsupported_media_type", http_status=415):
    """A body sent as anything but JSON (``Content-Type: application/json``)."""


class BodyTooDeepError(InvalidInputError, code="body_too_deep"):
    """The body nests arrays and objects deeper than the limit (checked before parsing)."""


class BodyTooWideError(InvalidInputError, code="body_too_wide"):
    """An array or object in the body has more items than the limit."""


class MalformedJsonError(InvalidInputError, code="malformed_json"):
    """The body is not a JSON document, or not the object the route expects.

    Refinements carry their own code: ``duplicate_key``, ``number_out_of_range``
    (NaN, Infinity, a number beyond a float or a 64-bit integer) and
    ``invalid_string`` (a NUL or a lone surrogate).
    """


class BadEventIdError(InvalidInputError, code="bad_event_id"):
    """``Last-Event-ID`` (or ``lastEventId``) is not an event id of this stream."""


class UnknownHarnessError(NotFoundError, code="unknown_harness"):
    """The path names a harness this app does not serve."""


_HTTP_CODES = {
    400: "bad_request",
    404: "route_not_found",
    405: "method_not_allowed",
    413: "body_too_large",
    415: "unsupported_media_type",
}


async def error_response(request: Request, exc: Exception) -> Response:
    """The one exception handler of the app: an error becomes a JSON body with its code."""
    if isinstance(exc, AgentMemVaultError):
        status = exc.http_status
        body: dict[str, Any] = exc.to_dict()
        if status >= 500:
            log.error("%s %s failed: %s", request.method, request.url.path, exc, exc_info=exc)
    elif isinstance(exc, HTTPException):
        status = exc.status_code
        code = _HTTP_CODES.get(status, f"http_{status}")
        message = str(exc.detail)
        if status == 404:
            message = f"no route {request.url.path}; see /openapi.json for the routes"
        elif status == 405:
            message = f"{request.method} is not allowed on {request.url.path}"
        body = {"code": code, "message": message}
    else:
        log.exception("%s %s failed", request.method, request.url.path, exc_info=exc)
        status = 500
        body = {"code": "internal_error", "message": "the server failed; see its log"}
    headers = getattr(exc, "headers", None) if isinstance(exc, HTTPException) else None
    return JSONResponse(body, status_code=status, headers=headers)
