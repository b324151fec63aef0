"""Reading a bearer token from a request, for an app's ``access.get_user``.

A login sends ``Authorization: Bearer <token>`` (RFC 6750). A header that
uses another scheme (``Basic …``, or a bare token with no scheme) is refused
with a 401 that names the scheme to use, rather than read as if it were a
token: a client that sends the wrong form learns why it is not let in.

>>> def get_user(request):  # doctest: +SKIP
...     token = bearer_token(request)
...     return users.get(token) if token else None
"""

from __future__ import annotations

from typing import Any

from ..core.errors import UnauthenticatedError, bounded

__all__ = ["BadAuthSchemeError", "bearer_token"]


class BadAuthSchemeError(UnauthenticatedError, code="bad_auth_scheme"):
    """The ``Authorization`` header does not use the ``Bearer`` scheme."""


def bearer_token(request: Any) -> str | None:
    """The token of ``Authorization: Bearer <token>``; None without the header.

    The scheme is matched without regard to case, as HTTP asks; anything else
    raises :class:`BadAuthSchemeError` (401).
    """
    raw = (request.headers.get("authorization") or "").strip()
    if not raw:
        return None
    scheme, _, token = raw.partition(" ")
    token = token.strip()
    if scheme.lower() == "bearer" and token:
        return token
    said = f"the scheme {bounded(scheme, 40)!r}" if token else "no scheme"
    raise BadAuthSchemeError(
        f"the Authorization header uses {said}; send 'Authorization: Bearer <token>' "
        "with the token your login gives you",
        expected="Bearer",
    )
