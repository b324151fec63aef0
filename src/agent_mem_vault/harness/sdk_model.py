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

import os
from typing import Any

__all__ = ["NO_KEY", "SdkModel", "configured_key"]

NO_KEY = "no-key-configured"
"""The key a client is built with when none is configured; never sent."""


def configured_key(api_key: str | None, env_name: str) -> str:
    """``api_key`` if given, else the environment's ``env_name``, else :data:`NO_KEY`."""
    key = api_key if api_key is not None else os.environ.get(env_name)
    return key or NO_KEY


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
