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

Subclasses in the services add codes, named where the class is declared
(``class RunStopped(ConflictError, code="run_stopped")``); they never add branches.

A message quotes at most about :data:`QUOTE_LIMIT` characters of any value it
names: a 100 KB argument that was refused comes back as its first 200
characters and its length, in the message and in ``details`` alike. The bound
is applied here, where every error is made, so no interface can forget it.
An ``OSError`` (a path the operating system refuses) becomes an error of this
tree through :func:`from_os_error`, in each interface's one converting place.
"""

from __future__ import annotations

import errno
import re
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
    "bounded",
    "from_os_error",
]

QUOTE_LIMIT = 200
"""Most characters of one value an error message or its details quote."""

# A quoted value (as ``{value!r}`` writes it), or a run of characters with no space
# (a value written without quotes; a ':' or ',' after it is the message's own),
# longer than the limit.
_LONG_QUOTED = re.compile(
    rf"'(?:[^'\\]|\\.){{{QUOTE_LIMIT},}}'"
    rf'|"(?:[^"\\]|\\.){{{QUOTE_LIMIT},}}"'
    rf"|[^\s,;:]{{{QUOTE_LIMIT + 1},}}",
    re.DOTALL,
)
_MESSAGE_LIMIT = 2_000


class AgentMemVaultError(Exception):
    """Base of every error the package raises on purpose.

    ``code`` is stable and machine-readable; ``details`` holds the values the
    message talks about (the id that was not found, the field that was wrong)
    so that JSON renderings can carry them without parsing the message.
    """

    code: ClassVar[str] = "error"
    http_status: ClassVar[int] = 500
    exit_status: ClassVar[int] = 1

    def __init_subclass__(
        cls,
        *,
        code: str | None = None,
        http_status: int | None = None,
        exit_status: int | None = None,
        **kwargs: Any,
    ) -> None:
        """A class names its code (and, for a branch, its statuses) where it is declared:
        ``class RunStopped(ConflictError, code="run_stopped")``; what it leaves out it
        inherits."""
        super().__init_subclass__(**kwargs)
        if code is not None:
            cls.code = code
        if http_status is not None:
            cls.http_status = http_status
        if exit_status is not None:
            cls.exit_status = exit_status

    def __init__(self, message: str, *, code: str | None = None, **details: Any) -> None:
        message = _bounded_message(message)
        super().__init__(message)
        self.message = message
        if code is not None:
            # An instance-level code refines the class default without a new class
            # for every rejection the specifications name.
            self.code = code  # type: ignore[misc]
        self.details = {key: _bounded_detail(value) for key, value in details.items()}

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


def bounded(text: str, limit: int = QUOTE_LIMIT) -> str:
    """``text`` itself if short, else its first ``limit`` characters and its length.

    >>> bounded("x" * 1000, 5)
    'xxxxx… (1000 characters)'
    """
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text)} characters)"


def _bounded_message(message: str) -> str:
    if len(message) <= QUOTE_LIMIT:
        return message

    def cut(match: re.Match[str]) -> str:
        quoted = match.group()
        quote = quoted[0] if quoted[0] in "'\"" and quoted[-1] == quoted[0] else ""
        inner = quoted[1:-1] if quote else quoted
        return quote + bounded(inner) + quote

    message = _LONG_QUOTED.sub(cut, message)
    if len(message) > _MESSAGE_LIMIT:
        # Long prose with no single long value: keep both ends, where a message
        # says what was wrong and what to do.
        half = _MESSAGE_LIMIT // 2
        message = f"{message[:half]} … {message[-half:]}"
    return message


def _bounded_detail(value: Any) -> Any:
    if isinstance(value, str):
        return bounded(value)
    if isinstance(value, list):
        return [_bounded_detail(item) for item in value]
    if isinstance(value, tuple):
        return tuple(_bounded_detail(item) for item in value)
    if isinstance(value, dict):
        return {
            bounded(k) if isinstance(k, str) else k: _bounded_detail(v) for k, v in value.items()
        }
    return value


class UserError(AgentMemVaultError, code="user_error", http_status=400, exit_status=2):
    """The caller asked for something that cannot be done as asked."""


class InvalidInputError(UserError, code="invalid_input"):
    """A value is wrong: malformed, missing, out of range or too large."""


class NotFoundError(UserError, code="not_found", http_status=404, exit_status=3):
    """What the caller named (an id, a thread, an agent) does not exist."""


class ConflictError(UserError, code="conflict", http_status=409, exit_status=4):
    """The state forbids it now, or somebody else got there first."""


class UnauthenticatedError(UserError, code="unauthenticated", http_status=401, exit_status=5):
    """No user could be found for the request."""


class AccessDeniedError(UserError, code="forbidden", http_status=403, exit_status=5):
    """The user is known but lacks the access the action needs."""


class UnavailableError(AgentMemVaultError, code="unavailable", http_status=503, exit_status=6):
    """Something needed (a lock, a lease, a server) did not come in time; retrying may work."""


class DataError(AgentMemVaultError, code="data_error", http_status=500, exit_status=7):
    """Stored data is damaged or does not parse; a person has to look."""


class RemoteError(AgentMemVaultError, code="remote_error", http_status=502, exit_status=8):
    """A remote service answered with a failure or did not answer."""


class StartupError(AgentMemVaultError, code="startup_failed", http_status=500, exit_status=9):
    """A server command could not start: its port is in use, its address is not this machine's.

    Reported before the command prints anything else (no banner, no links), so a
    script or a person sees only what went wrong and what to change.
    """


def _refusals(
    branch: type[AgentMemVaultError], code: str, fixes: dict[int, str]
) -> dict[int, tuple[type[AgentMemVaultError], str, str]]:
    return {number: (branch, code, fix) for number, fix in fixes.items()}


# errno → (branch, code, what to do). A path the operating system refuses is the
# caller's to change (a typo, a file where a folder belongs) or their rights to fix.
_OS_ERRORS: dict[int, tuple[type[AgentMemVaultError], str, str]] = {
    **_refusals(
        AccessDeniedError,
        "permission_denied",
        {
            errno.EACCES: "use a path you may write to",
            errno.EPERM: "use a path you may write to",
            errno.EROFS: "the filesystem is read-only: use a path on a writable one",
        },
    ),
    **_refusals(
        InvalidInputError,
        "bad_path",
        {
            errno.ENOENT: "check the path: a folder on it is missing, or its filesystem allows "
            "none there",
            errno.ENOTDIR: "a file stands where the path needs a folder: check the path",
            errno.EISDIR: "a folder stands where a file belongs",
            errno.EEXIST: "a file stands where a folder belongs: move it or check the path",
            errno.ENAMETOOLONG: "use a shorter path",
            errno.ELOOP: "the path has a symbolic-link loop",
        },
    ),
    **_refusals(
        UnavailableError,
        "no_space",
        {
            errno.ENOSPC: "the disk holding it is full: free space on it, then retry",
            errno.EDQUOT: "the disk quota is used up: free space under it, then retry",
        },
    ),
}


def from_os_error(exc: OSError) -> AgentMemVaultError:
    """The error of this tree for an ``OSError``: a code, a one-line message, the fix.

    >>> from_os_error(NotADirectoryError(20, "Not a directory", "/tmp/f/vault")).code
    'bad_path'
    """
    if isinstance(exc, ConnectionError | TimeoutError):
        return UnavailableError(
            f"a connection failed: {exc.strerror or exc}; check that the other side runs, "
            "then retry",
            code="connection_failed",
        )
    branch, code, fix = _OS_ERRORS.get(
        exc.errno or 0, (DataError, "os_error", "check the path and the disk")
    )
    reason = exc.strerror or type(exc).__name__
    where = exc.filename if exc.filename is not None else None
    subject = f"{where}" if where is not None else "a file"
    return branch(
        f"the operating system refused {subject}: {reason}; {fix}",
        code=code,
        path=str(where) if where is not None else None,
        errno=errno.errorcode.get(exc.errno or 0),
    )
