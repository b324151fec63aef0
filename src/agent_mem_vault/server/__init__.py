"""The harness over HTTP: an ASGI app (Starlette) with an SSE event stream and a web console.

>>> from agent_mem_vault.server import create_harness_app
>>> app = create_harness_app(host, {"desk": desk, "billing": billing_desk})  # doctest: +SKIP
>>> # uvicorn.run(app)  or  fastapi_app.mount("/", app)

Routes are listed in :mod:`agent_mem_vault.server.app`; the OpenAPI document is
served at ``/openapi.json`` and the operator console at ``/console/``.
"""

from __future__ import annotations

from .app import DEFAULT_MAX_BODY_BYTES, create_harness_app
from .auth import BadAuthSchemeError, bearer_token

__all__ = ["DEFAULT_MAX_BODY_BYTES", "BadAuthSchemeError", "bearer_token", "create_harness_app"]
