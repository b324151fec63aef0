"""One error tree for the whole package.

Every error carries a stable ``code`` (a wire name such as ``handoff_not_found``
or ``no_human_wait``) and a message that says what was wrong and what to do.
Interfaces convert errors in exactly one place each: the CLI maps the branch to
an exit status, MCP to a tool error, HTTP to a status and a JSON body.

    AgentMemVaultError                 base; never raised itself
    ├── UserError                      the caller asked for something wrong
    │   ├── InvalidInputError          400 · exit 2   bad value, missing field, too large
    │   ├── NotFoundError              404 · exit 3   unknown id, thread, agent
    │   ├── ConflictError              409 · exit 4   state forbids it, or someone else won
    │   ├── UnauthenticatedError       401 · exit 5   no user could be found for the request
    │   └── AccessDeniedError          403 · exit 5   the user lacks the access action
    ├── UnavailableError               503 · exit 6   a lock or lease did not come in time
    ├── DataError                      500 · exit 7   stored data is damaged or unreadable
    ├── RemoteError                    502 · exit 8   a remote service (PDS, model) failed
    └── StartupError                   500 · exit 9   a server could not start listening
                                                      (port in use, bad address)

Subclasses in the services add codes; they never add branches.
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "AccessDeniedError",
    "AgentMemVaultError",
    "ConflictError",
    "DataError",
    "InvalidInputError",
    "NotFoundError",
    "RemoteError",
    "StartupError",
    "UnauthenticatedError",
    "UnavailableError",
    "UserError",
]


class AgentMemVaultError(Exception):
    """Base of every error the package raises on purpose.

    ``code`` is stable and machine-readable; ``details`` holds the values the
    message talks about (the id that was not found, the field that was wrong)
    so that JSON renderings can carry them without parsing the message.
    """

    code: ClassVar[str] = "error"
    http_status: ClassVar[int] = 500
    exit_status: ClassVar[int] = 1

    def __init__(self, message: str, *, code: str | None = None, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            # An instance-level code refines the class default without a new class
            # for every rejection the specifications name.
            self.code = code  # type: ignore[misc]
        self.details = details

    def to_dict(self) -> dict[str, Any]:
        """The JSON body an interface sends for this error."""
        body: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            body["details"] = {k: v for k, v in self.details.items() if _jsonable(v)}
        return body

    def __str__(self) -> str:
        return self.message


def _jsonable(value: Any) -> bool:
    return isinstance(value, str | int | float | bool | type(None) | list | dict)


class UserError(AgentMemVaultError):
    """The caller asked for something that cannot be done as asked."""

    code = "user_error"
    http_status = 400
    exit_status = 2


class InvalidInputError(UserError):
    code = "invalid_input"
    http_status = 400
    exit_status = 2


class NotFoundError(UserError):
    code = "not_found"
    http_status = 404
    exit_status = 3


class ConflictError(UserError):
    code = "conflict"
    http_status = 409
    exit_status = 4


class UnauthenticatedError(UserError):
    code = "unauthenticated"
    http_status = 401
    exit_status = 5


class AccessDeniedError(UserError):
    code = "forbidden"
    http_status = 403
    exit_status = 5


class UnavailableError(AgentMemVaultError):
    """Something needed (a lock, a lease, a server) did not come in time; retrying may work."""

    code = "unavailable"
    http_status = 503
    exit_status = 6


class DataError(AgentMemVaultError):
    """Stored data is damaged or does not parse; a person has to look."""

    code = "data_error"
    http_status = 500
    exit_status = 7


class RemoteError(AgentMemVaultError):
    """A remote service answered with a failure or did not answer."""

    code = "remote_error"
    http_status = 502
    exit_status = 8


class StartupError(AgentMemVaultError):
    """A server command could not start: its port is in use, its address is not this machine's.

    Reported before the command prints anything else (no banner, no links), so a
    script or a person sees only what went wrong and what to change.
    """

    code = "startup_failed"
    http_status = 500
    exit_status = 9
