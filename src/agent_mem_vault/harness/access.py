"""Who may do what to a thread: users, roles, and the access actions.

Every call is checked against one of five actions: ``read``, ``send``,
``operator`` (reply as the person, answer a person's wait), ``transfer`` and
``share``. A thread's members hold roles (``owner``, ``member``,
``operator``, or any role an app names); the rules map each action to the
roles that have it. Threads of another tenant are not found at all.

>>> rules = members_only(operator={"roles": ["owner", "operator"]})
>>> rules.allows("owner", "operator")
True
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..core.errors import AccessDeniedError, InvalidInputError, UnauthenticatedError

__all__ = [
    "ACTIONS",
    "Access",
    "Action",
    "Rules",
    "User",
    "as_user",
    "authorize",
    "members_only",
]

Action = Literal["read", "send", "operator", "transfer", "share"]
ACTIONS: tuple[Action, ...] = ("read", "send", "operator", "transfer", "share")
DEFAULT_TENANT = "default"


@dataclass(frozen=True, slots=True)
class User:
    """A signed-in user. ``keys`` are their provider keys, given to models on their turns."""

    id: str
    tenant_id: str = DEFAULT_TENANT
    keys: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name, value in (("id", self.id), ("tenant_id", self.tenant_id)):
            if not isinstance(value, str) or not value or "/" in value or len(value) > 256:
                raise InvalidInputError(
                    f"user {name} must be 1 to 256 characters without '/', got {value!r}"
                )


@dataclass(frozen=True, slots=True)
class Rules:
    """Which roles hold each action."""

    roles: Mapping[str, frozenset[str]]

    def allows(self, role: str | None, action: Action) -> bool:
        return role is not None and role in self.roles.get(action, frozenset())


_DEFAULT_ROLES: dict[str, tuple[str, ...]] = {
    "read": ("owner", "member", "operator"),
    "send": ("owner", "member"),
    # Only a person of the team answers as the person: the user who waits
    # (the owner) must not be able to play the operator.
    "operator": ("operator",),
    "transfer": ("owner",),
    "share": ("owner",),
}


def members_only(**overrides: Mapping[str, Sequence[str]]) -> Rules:
    """Rules where only a thread's members act, by role.

    Defaults: read — owner, member, operator; send — owner, member;
    operator — operator; transfer — owner; share — owner. Override one action
    with ``members_only(operator={"roles": ["owner", "operator"]})``.
    """
    roles = {action: frozenset(names) for action, names in _DEFAULT_ROLES.items()}
    for action, spec in overrides.items():
        if action not in ACTIONS:
            raise InvalidInputError(
                f"members_only got unknown action {action!r}; use one of {', '.join(ACTIONS)}"
            )
        names = spec.get("roles") if isinstance(spec, Mapping) else None
        if names is None or isinstance(names, str):
            raise InvalidInputError(
                f"members_only({action}=...) needs {{'roles': [...]}}, got {spec!r}"
            )
        roles[action] = frozenset(str(n) for n in names)
    return Rules(roles=roles)


GetUser = Callable[
    [Any], "User | Mapping[str, Any] | Awaitable[User | Mapping[str, Any] | None] | None"
]
"""What ``get_user`` may return, awaited or not: see ``as_user``."""


@dataclass(frozen=True, slots=True)
class Access:
    """Access for a host: how to find the user of a request, and the rules."""

    get_user: GetUser
    rules: Rules = field(default_factory=members_only)


def authorize(
    access: Access | None,
    *,
    user: User | None,
    members: Mapping[str, str],
    action: Action,
    thread_id: str,
) -> None:
    """Raise unless ``user`` may do ``action`` on a thread with ``members``. Pure."""
    if access is None:
        return
    if user is None:
        raise UnauthenticatedError(
            f"no user for this call on thread {thread_id!r}; sign in (pass user=...)"
        )
    role = members.get(user.id)
    if not access.rules.allows(role, action):
        held = f"role {role!r}" if role else "no role"
        raise AccessDeniedError(
            f"user {user.id!r} has {held} on thread {thread_id!r}, which does not allow "
            f"{action!r}; ask the owner to share it with a role that does",
            action=action,
            thread_id=thread_id,
        )


def as_user(value: Any) -> User | None:
    """A ``User`` from what ``get_user`` returned: a User, a mapping with ``id`` and
    ``tenantId`` (the harness design's shape), or None."""
    if value is None or isinstance(value, User):
        return value
    if isinstance(value, Mapping) and isinstance(value.get("id"), str):
        tenant = value.get("tenantId") or value.get("tenant_id") or DEFAULT_TENANT
        return User(id=value["id"], tenant_id=str(tenant), keys=dict(value.get("keys") or {}))
    raise InvalidInputError(
        f"get_user returned {type(value).__name__}; return a User, "
        "{'id': ..., 'tenantId': ...} or None"
    )


def require_user(access: Access | None, user: User | None) -> None:
    if access is not None and user is None:
        raise UnauthenticatedError("this host checks access and no user was given; sign in")
