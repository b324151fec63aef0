"""Where each route stands, without asking the remote: ``sync --status`` and ``doctor``."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.clock import format_datetime
from .engine import RouteSync
from .gate import PRIVATE_KIND, Held, held_notes, said
from .identity import identity
from .inflight import stranded
from .journal import waiting
from .routes import Route, load_config
from .signing import signer_for
from .stranded import stranded_line
from .syncer import syncer_running
from .view import ask_after, failures

if TYPE_CHECKING:
    from ..ops.base import VaultBase

__all__ = ["RouteStatus", "status"]


@dataclass(frozen=True, slots=True)
class RouteStatus:
    """Where a route stands, without asking the remote (``sync --status``, ``doctor``)."""

    route: Route
    ahead: int
    """Commits here the remote did not have at the last fetch or push."""
    behind: int
    """Commits the remote had at the last fetch that are not merged here."""
    waiting: int
    """Changes noted and not yet committed (of every route)."""
    last_fetch: str | None
    last_push: str | None
    error: dict[str, Any] | None
    """The last failure talking to the remote (code, message, at), if the last talk failed."""
    syncer: int | None = field(default=None)
    """The pid of the background syncer, if one runs."""
    failures: int = 0
    """Talks with the remote in a row that it did not answer (refused, silent, gone)."""
    ask_after: str | None = None
    """Until when session starts and views do not ask it again (RFC 3339), if they wait."""
    held: dict[str, list[Held]] = field(default_factory=dict)
    """Notes kept off the remote for a secret they gained here (path → the secrets,
    ``gate.py``): each a problem until redacted or allowed."""
    private: tuple[str, ...] = ()
    """Notes that stay on this machine because they say ``private: true``: as asked."""
    sender: str | None = None
    """Who the entries this machine sends are authored by (``identity.py``); None: nobody
    is named, git has no user for this route."""
    machine: str = ""
    signs_with: str | None = None
    """The key what this route sends is signed with (``signing.py``); None: unsigned."""
    signing: dict[str, str] | None = None
    """While that key cannot sign without a person: since when, why, and the fix."""
    stranded: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Handoffs a read of this machine took on the remote before it stopped, unanswered
    (``inflight.py``): each a problem until reopened or let be."""
    trust: dict[str, Any] | None = None
    """What the route checks what arrives against and what it found (``trust_ops.py``);
    None: it checks nothing (no signers file)."""

    def trust_line(self) -> str | None:
        """One line: the signers file, and the entries verified and not."""
        if self.trust is None:
            return None
        if self.trust.get("refused"):
            return f"checks against {self.trust['signers']}; not taken: {self.trust['refused']}"
        if self.trust.get("problem"):
            return f"checks nothing: the signers file cannot be used ({self.trust['problem']})"
        counts = dict(self.trust.get("entries") or {})
        good = counts.pop("verified", 0)
        rest = sum(counts.values())
        why = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
        found = f"{good} verified, {rest} not" + (f" ({why})" if why else "")
        return f"checks who signed what arrives against {self.trust['signers']}: {found}"

    def held_lines(self) -> list[str]:
        """One line for each note held back, saying what to do (``gate.said``)."""
        return [said(path, found, self.route.label) for path, found in self.held.items()]

    def problems(self) -> list[str]:
        """What ``doctor`` lists for this route: each note held back, and a key that
        cannot sign (everything this route sends waits for it)."""
        return [
            *self.held_lines(),
            *([self.signing_line()] if self.signing else []),
            *self.stranded_lines(),
        ]

    def stranded_lines(self) -> list[str]:
        return [stranded_line(self.route.label, i, m) for i, m in self.stranded.items()]

    def signing_line(self) -> str:
        held = self.signing or {}
        return (
            f"{self.route.label}: sending held back since {held.get('since')}: the key "
            f"{held.get('key')} {held.get('why')}; {held.get('fix')} (nothing goes out "
            "unsigned)"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "remote": self.route.url or self.route.remote,
            "remote_name": self.route.remote if self.route.repo else None,
            "ref": self.route.ref,
            "namespace": self.route.namespace,
            "repository": self.route.repo,
            "layout": self.route.layout,
            "ahead": self.ahead,
            "behind": self.behind,
            "waiting": self.waiting,
            "last_fetch": self.last_fetch,
            "last_push": self.last_push,
            "error": self.error,
            "syncer": self.syncer,
            "failures": self.failures,
            "ask_after": self.ask_after,
            "private": list(self.private),
            "sender": self.sender,
            "machine": self.machine,
            "signs_with": self.signs_with,
            "signing_held": None
            if self.signing is None
            else {**self.signing, "said": self.signing_line()},
            "trust": None if self.trust is None else {**self.trust, "said": self.trust_line()},
            "stranded": [
                {"id": i, **m, "said": line}
                for (i, m), line in zip(self.stranded.items(), self.stranded_lines(), strict=True)
            ],
            "held_back": [
                {"path": p, "found": [h.to_dict() for h in found], "said": line}
                for (p, found), line in zip(self.held.items(), self.held_lines(), strict=True)
            ],
        }


def status(vault: VaultBase) -> tuple[RouteStatus, ...]:
    """Each route: remote, ahead/behind as of the last fetch, the last error."""
    config = load_config(vault.path)
    if config is None:
        return ()
    pid = syncer_running(vault.path)
    out = []
    for route in config.routes:
        sync = RouteSync(vault, config, route)
        try:
            ahead, behind = sync.ahead_behind()
        except Exception:  # a git folder gone or damaged: the state file still says why
            ahead = behind = 0
        state = sync.state()
        kept = held_notes(sync)
        who = identity(sync.git.git_dir)
        signer = signer_for(sync.git.git_dir, route)
        signing = state.get("signing")
        out.append(
            RouteStatus(
                route=route,
                ahead=ahead,
                behind=behind,
                waiting=waiting(vault.path),
                last_fetch=state.get("last_fetch"),
                last_push=state.get("last_push"),
                error=state.get("error"),
                syncer=pid,
                failures=failures(state),
                ask_after=_stamp(ask_after(state)),
                held={p: h for p, h in kept.items() if h[0].kind != PRIVATE_KIND},
                private=tuple(p for p, h in kept.items() if h[0].kind == PRIVATE_KIND),
                sender=None if who is None else str(who),
                machine=config.machine,
                signs_with=None if signer is None else signer.label,
                signing=signing if isinstance(signing, dict) and signer is not None else None,
                stranded=stranded(state),
                trust=_trust(vault.path, route),
            )
        )
    return tuple(out)


def _trust(root: Path, route: Route) -> dict[str, Any] | None:
    from .trust_ops import trust_status_of

    found = trust_status_of(root, route)
    if found.policy == "off" and not found.problem:
        return None
    return found.to_dict()


def _stamp(epoch: float | None) -> str | None:
    """A time to wait for, as the state's other times are written; None if it has passed."""
    if epoch is None or epoch <= time.time():
        return None
    return format_datetime(datetime.fromtimestamp(epoch, UTC))
