"""agent-mem-vault: hand work between AI agents, and between agents and people.

>>> from agent_mem_vault import Vault
>>> vault = Vault("/tmp/my-vault")  # doctest: +SKIP

The three faces each have their own namespace: ``agent_mem_vault`` (the vault),
``agent_mem_vault.harness``, ``agent_mem_vault.runs`` and
``agent_mem_vault.atproto``. Names here are imported lazily so that the CLI
starts fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .core.errors import (
    AccessDeniedError,
    AgentMemVaultError,
    ConflictError,
    DataError,
    InvalidInputError,
    NotFoundError,
    RemoteError,
    UnauthenticatedError,
    UnavailableError,
    UserError,
)
from .core.version import __version__

if TYPE_CHECKING:
    from .vault import Vault

__all__ = [
    "AccessDeniedError",
    "AgentMemVaultError",
    "ConflictError",
    "DataError",
    "InvalidInputError",
    "NotFoundError",
    "RemoteError",
    "UnauthenticatedError",
    "UnavailableError",
    "UserError",
    "Vault",
    "__version__",
]


def __getattr__(name: str) -> Any:
    if name == "Vault":
        from .vault import Vault

        return Vault
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
