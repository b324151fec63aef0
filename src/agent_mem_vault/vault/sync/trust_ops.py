"""``agent-mem-vault trust``: which keys a route checks entries against, and what it found.

The commands behind it: name the signers file (``trust signers``), turn checking off
or on (``trust policy``), say what the checks found (``trust status``), and stand
behind notes for the team (``trust vouch``, ``team_vouch.py``). The
checks themselves run as entries arrive (``team.py`` → ``verdicts.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.errors import InvalidInputError, NotFoundError
from .routes import Route, load_config, route_named, save_config
from .signers import POLICIES, Trust, trust_for
from .syncer import ensure_syncer
from .verdicts import VerdictStore, store_path
from .verify import AllowedSigners

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..ops.base import VaultBase
    from .team_vouch import Vouched

__all__ = [
    "TrustStatus",
    "trust_policy",
    "trust_signers",
    "trust_status",
    "trust_status_of",
    "untrusted_notes",
    "vouch",
]

_NO_ROUTE = "join one first: 'agent-mem-vault sync init REMOTE' (or --project)"


@dataclass(frozen=True, slots=True)
class TrustStatus:
    """What a route checks, and what its checks found."""

    route: Route
    policy: str
    source: str | None
    """The signers file and who names it (the route, or git)."""
    problem: str | None = None
    refused: str | None = None
    """A change to the team's list on the project's branch that was not taken."""
    principals: tuple[str, ...] = ()
    counts: dict[str, int] = field(default_factory=dict)
    """Entries judged: ``verified`` and each reason not."""
    unverified: tuple[tuple[str, str, str, str], ...] = ()
    """(path, writer, machine, why) of notes whose last text change is not verified."""
    untrusted: int = 0
    """Notes no listed key stands behind as they are (``trust vouch --all`` vouches for them)."""

    @property
    def layout_checks(self) -> bool:
        """Only a log per machine keeps each writer's entries apart to check."""
        return self.route.layout == 2

    def to_dict(self) -> dict[str, Any]:
        return {
            "route": self.route.label,
            "namespace": self.route.namespace,
            "policy": self.policy,
            "signers": self.source,
            "problem": self.problem,
            "refused": self.refused,
            "principals": list(self.principals),
            "entries": dict(self.counts),
            "unverified_notes": [
                {"path": p, "person": a, "machine": m, "why": w} for p, a, m, w in self.unverified
            ],
            "checked": self.layout_checks,
            "untrusted": self.untrusted,
        }


def trust_signers(
    vault: VaultBase,
    namespace: str | None,
    path: str | None,
    *,
    clear: bool = False,
    branch: str | None = None,
) -> TrustStatus:
    """Check what the route of ``namespace`` (None: the vault's) receives against the
    allowed signers file at ``path`` from now on (``clear``: against git's own, if any;
    ``branch``: the project's list on that branch, taken as it is now and then change by
    change, each signed by a key the list already names). The file is read now: one that
    does not parse is refused, naming its line."""
    config, route = route_named(vault.path, namespace, _NO_ROUTE)
    if branch is not None:
        from .local import LocalRoute
        from .signers_branch import pin_first

        changed = replace(route, signers=None, signers_branch=branch)
        pin_first(LocalRoute(vault, config, changed).git, vault.path, config, changed, 60.0)
        with vault._held(), vault._locked():
            save_config(vault.path, config.with_route(changed))
        ensure_syncer(vault.path)
        return trust_status_of(vault.path, changed)
    signers: str | None = None
    if not clear:
        if path is None:
            raise InvalidInputError("name the allowed signers file, or --clear", code="no_path")
        file = Path(path).expanduser().absolute()
        try:
            AllowedSigners.parse(file.read_text(encoding="utf-8"), source=str(file))
        except OSError as error:
            raise NotFoundError(
                f"{file} cannot be read ({error.strerror}); name the team's allowed signers "
                "file (git's format: 'ada@example.com namespaces=\"git\" ssh-ed25519 AAAA…')",
                code="signers_not_found",
            ) from None
        except (UnicodeDecodeError, ValueError) as error:
            raise InvalidInputError(
                f"{error}; nothing was changed", code="signers_invalid"
            ) from None
        signers = str(file)
    changed = replace(route, signers=signers, signers_branch=None)
    with vault._held(), vault._locked():
        save_config(vault.path, config.with_route(changed))
    ensure_syncer(vault.path)  # the next fetch judges what arrived before
    return trust_status_of(vault.path, changed)


def trust_policy(vault: VaultBase, namespace: str | None, policy: str) -> TrustStatus:
    """``off``: check nothing on the route; ``label``: check every entry once there is a
    signers file, and mark what is not verified in every view; ``require``: as ``label``,
    and quarantine every handoff whose text no listed key signed."""
    if policy not in POLICIES:
        raise InvalidInputError(
            f"no policy {policy!r}; one of: {', '.join(POLICIES)}", code="unknown_policy"
        )
    config, route = route_named(vault.path, namespace, _NO_ROUTE)
    if policy == "require":
        if route.layout != 2:
            raise InvalidInputError(
                f"{route.label} keeps one log for every machine, whose entries cannot be told "
                "apart; move it to a log per machine first: agent-mem-vault sync upgrade",
                code="require_needs_a_log_per_machine",
            )
        if trust_for(vault.path, replace(route, trust=None)).signers is None:
            raise InvalidInputError(
                f"{route.label} has no signers file to check against, so every handoff would "
                "wait; name the team's first: agent-mem-vault trust signers PATH",
                code="require_needs_signers",
            )
    changed = replace(route, trust={"off": "off", "require": "require"}.get(policy))
    with vault._held(), vault._locked():
        save_config(vault.path, config.with_route(changed))
    if policy == "off":
        store_path(vault.path, changed).unlink(missing_ok=True)
        for suffix in ("-wal", "-shm", ".stamp"):
            Path(str(store_path(vault.path, changed)) + suffix).unlink(missing_ok=True)
    else:
        ensure_syncer(vault.path)
    return trust_status_of(vault.path, changed)


def untrusted_notes(vault: VaultBase, namespace: str | None) -> dict[str, str]:
    """The notes of ``namespace``'s route (None: the vault's) that no listed key or person
    stands behind as they are, as this machine last judged them: path → blob."""
    _config, route = route_named(vault.path, namespace, _NO_ROUTE)
    where = store_path(vault.path, route)
    if not trust_for(vault.path, route).checks or not where.exists():
        return {}
    with VerdictStore(where, read_only=True) as store:
        return store.untrusted()


def vouch(
    vault: VaultBase,
    namespace: str | None,
    shown: Mapping[str, str] | None,
    listed: Mapping[str, str] | None = None,
) -> Vouched:
    """Vouch for the notes of ``shown`` (path → the text the person read), which must all
    travel by one route (``namespace``'s, where named); or, with None, for every note of
    ``namespace``'s route (None: the vault's) that no listed key stands behind."""
    from .team_vouch import vouch as send

    if shown is None or namespace is not None:
        config, route = route_named(vault.path, namespace, _NO_ROUTE)
        if shown is None:
            return send(vault, config, route, None, listed=listed)
    else:  # the notes say which route: it must be one for all
        known = load_config(vault.path)
        if known is None:
            raise NotFoundError(
                f"the vault syncs with no remote here; {_NO_ROUTE}", code="no_sync_route"
            )
        config = known
        routes = {r.key: r for p in shown if (r := config.route_of(p)) is not None}
        if len(routes) != 1:
            raise InvalidInputError(
                "the notes travel by different routes, or by none: vouch for each route's "
                "notes apart (-n NS)",
                code="one_route_at_a_time",
            )
        route = next(iter(routes.values()))
    for path in shown:
        if config.route_of(path) != route:
            raise InvalidInputError(
                f"{path} does not travel by {route.label}: vouch for each route's notes apart",
                code="one_route_at_a_time",
            )
    return send(vault, config, route, shown)


def trust_status(vault: VaultBase, namespace: str | None) -> TrustStatus:
    _config, route = route_named(vault.path, namespace, _NO_ROUTE)
    return trust_status_of(vault.path, route)


def trust_status_of(root: Path, route: Route) -> TrustStatus:
    trust: Trust = trust_for(root, route)
    principals = () if trust.signers is None else tuple(trust.signers.principals())
    counts: dict[str, int] = {}
    unverified: tuple[tuple[str, str, str, str], ...] = ()
    untrusted = 0
    where = store_path(root, route)
    if trust.checks and where.exists():
        with VerdictStore(where, read_only=True) as store:
            counts = store.counts()
            unverified = tuple(store.unverified_notes())
            untrusted = len(store.untrusted())
    return TrustStatus(
        route,
        trust.policy,
        trust.source,
        trust.problem,
        trust.refused,
        principals,
        counts,
        unverified,
        untrusted,
    )
