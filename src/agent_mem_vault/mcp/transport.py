"""Running the server: stdio for local agents, streamable HTTP for remote ones.

HTTP beyond loopback needs a bearer token: anyone who can reach the port could
otherwise read and consume every handoff. The token is checked by the SDK's own
bearer middleware through a one-token verifier.
"""

from __future__ import annotations

import hmac
import ipaddress
from dataclasses import dataclass

from mcp.server.auth.provider import AccessToken

from ..core.errors import InvalidInputError

__all__ = ["StaticTokenVerifier", "check_http_exposure", "is_loopback"]

# The environment variable that carries the token (cli/agents.py names it in --token).
TOKEN_ENV = "AGENT_MEM_VAULT_TOKEN"


@dataclass(frozen=True)
class StaticTokenVerifier:
    """Accepts exactly one shared secret as a bearer token.

    Compared in constant time so the token cannot be guessed byte by byte.
    """

    token: str

    async def verify_token(self, token: str) -> AccessToken | None:
        if hmac.compare_digest(token.encode(), self.token.encode()):
            return AccessToken(token=token, client_id="agent-mem-vault", scopes=[])
        return None


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and localhost: only this machine can connect."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_http_exposure(host: str, token: str | None) -> None:
    """Refuse to listen beyond loopback without a token; a short token is as bad as none."""
    if token is not None and len(token) < 16:
        raise InvalidInputError(
            "the bearer token is too short: use at least 16 characters, "
            "e.g. from `python -c 'import secrets; print(secrets.token_urlsafe())'`",
            field="token",
        )
    if not is_loopback(host) and not token:
        raise InvalidInputError(
            f"listening on {host} needs a bearer token: pass --token or set {TOKEN_ENV}, "
            "or listen on 127.0.0.1",
            field="token",
        )
