"""What the adapters on a provider's official SDK share: the key rule and the endpoint.

Both SDKs refuse to build a client without some API key, yet a local server
(Ollama, vLLM) needs none, and a turn may carry the sending user's own key. So
a client is built with :data:`NO_KEY` when nothing is configured, and whether a
real key is configured is read off the client itself (also one passed in).
Each adapter decides what to do without one: the OpenAI-compatible adapter
leaves the ``Authorization`` header out, the Anthropic adapter refuses the
turn with the fix. The placeholder is never sent.
"""

from __future__ import annotations

import importlib
import json
import os
from typing import Any, Literal

from ..core.errors import RemoteError
from .model_errors import MODEL_ERROR

__all__ = ["NO_KEY", "SdkModel", "configured_key", "sdk_client", "tool_arguments"]

NO_KEY = "no-key-configured"
"""The key a client is built with when none is configured; never sent."""


def configured_key(api_key: str | None, env_name: str) -> str:
    """``api_key`` if given, else the environment's ``env_name``, else :data:`NO_KEY`."""
    key = api_key if api_key is not None else os.environ.get(env_name)
    return key or NO_KEY


def sdk_client(
    package: str,
    client_class: str,
    missing: str,
    *,
    api_key: str | None,
    key_env: str,
    base_url: str | None,
    max_retries: int,
    timeout: float,
) -> Any:
    """A new client of ``package`` (imported here: it is an extra); ``missing`` if it is absent."""
    try:
        sdk = importlib.import_module(package)
    except ImportError:
        raise RemoteError(missing, code="model_unavailable") from None
    return getattr(sdk, client_class)(
        api_key=configured_key(api_key, key_env),
        base_url=base_url,
        max_retries=max_retries,
        timeout=timeout,
    )


def tool_arguments(
    raw: str, tool: str, *, where: str, noun: Literal["input", "arguments"], fix: str
) -> dict[str, Any]:
    """The JSON object a model sent as a tool's ``noun``; a ``model_error`` if it is none."""
    said = f"{where} sent {noun} for tool {tool!r} that {'is' if noun == 'input' else 'are'}"
    try:
        arguments = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError:
        raise RemoteError(f"{said} not JSON ({raw[:200]!r}); {fix}", code=MODEL_ERROR) from None
    if not isinstance(arguments, dict):
        raise RemoteError(f"{said} not a JSON object; {fix}", code=MODEL_ERROR)
    return arguments


class SdkModel:
    """Base of a ``Model`` that streams through an SDK client held in ``_client``."""

    model: str
    _client: Any

    @property
    def has_key(self) -> bool:
        """Whether the client holds a real key (configured, or its own)."""
        key = getattr(self._client, "api_key", None)
        return bool(key) and key != NO_KEY

    @property
    def base_url(self) -> str:
        """The endpoint this adapter talks to (shown in error messages)."""
        return str(self._client.base_url)

    async def aclose(self) -> None:
        """Close the HTTP connections of the client (also one passed in as ``client``)."""
        await self._client.close()

    def _describe(self) -> str:
        return f"model {self.model!r} at {self.base_url}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model!r}, base_url={self.base_url!r})"
