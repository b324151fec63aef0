"""A person vouching for notes, for the whole team: one entry their listed key signs.

A note no listed key signed (written before the team signed its entries, or by
someone the signers file does not list) is marked in every view, and under
``require`` no agent takes it. A person who read it can stand behind it. ``trust
vouch`` sends one entry on this machine's log whose tree is empty and whose facts
name each note with the blob vouched for (``entries.py``): the fold takes nothing
from it, so it changes no note, and a release that does not know the key ignores it.
Every machine that checks records it (``verdicts.py``); while the entry verifies
(its key listed, its author the key's principal), the note as it said then counts
there as trusted. A later change by someone not listed is judged as any other.

Only what the remote has can be vouched for: a note changed here goes out signed by
this machine anyway. Before anything is sent, a commit this machine would sign is
checked against the team's list, so a vouch no machine would take is refused here,
naming the fix.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...core.errors import AccessDeniedError, ConflictError, InvalidInputError
from . import team_push
from .engine import MAX_ROUNDS, PATIENT, RouteSync, net_timeout
from .identity import identity
from .judging import commit_author
from .local import FETCH_FIRST, RouteReport
from .routes import Route
from .signers import trust_for
from .team_verify import check_arrivals
from .trees import edited_tree, empty_tree_id
from .verdicts import VerdictStore, store_path, text_digest
from .verify import AllowedSigners, verify_commit

if TYPE_CHECKING:
    from ..ops.base import VaultBase
    from .routes import SyncConfig

__all__ = ["Vouched", "vouch"]

TITLE = "vouch"


@dataclass(frozen=True, slots=True)
class Vouched:
    """What one vouch sent."""

    route: Route
    by: str
    """The person, as the entry's author names them."""
    entry: str | None = None
    """The entry the remote took; None: nothing needed vouching."""
    notes: dict[str, str] = field(default_factory=dict)
    """path → the blob vouched for."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "route": self.route.label,
            "namespace": self.route.namespace,
            "by": self.by,
            "entry": self.entry,
            "notes": sorted(self.notes),
            "count": len(self.notes),
        }


def vouch(
    vault: VaultBase,
    config: SyncConfig,
    route: Route,
    shown: Mapping[str, str] | None,
    *,
    listed: Mapping[str, str] | None = None,
    wait: float | None = None,
) -> Vouched:
    """Vouch for notes of ``route`` as the remote has them: ``shown`` (path → the text the
    person read; each must say what the remote's version says); or ``listed`` (path →
    the blob the person was told of), those the remote still has so; or with neither,
    every note no listed key stands behind. Refused, changing nothing, where this
    machine's entries would not verify against the team's list."""
    if route.layout != 2:
        raise InvalidInputError(
            f"{route.label} keeps one log for every machine, whose entries cannot be told "
            "apart; move it to a log per machine first: agent-mem-vault sync upgrade",
            code="vouch_needs_a_log_per_machine",
        )
    trust = trust_for(vault.path, route)
    if trust.signers is None:
        raise InvalidInputError(
            f"{route.label} has no signers file, so no machine would know whose vouch it is; "
            "name the team's first: agent-mem-vault trust signers PATH",
            code="vouch_needs_signers",
        )
    sync = RouteSync(vault, config, route)
    patience = max(net_timeout(), PATIENT)
    with sync.network_turn(wait):
        report = RouteReport(route)
        by: str | None = None
        for _ in range(MAX_ROUNDS):
            fetched = sync.fetch(patience)
            with vault._held(), vault._locked():
                sync.integrate(fetched, report)
            commit = sync.heads()[1]
            if commit is None:
                raise InvalidInputError(
                    f"{route.label} holds no notes yet: nothing there to vouch for",
                    code="not_on_remote",
                )
            if by is None:
                by = _listed(sync, trust.signers, trust.source or "the signers file", commit)
            notes = _which(sync, commit, shown, listed)
            if not notes:
                return Vouched(route, by)
            refused = team_push.push(sync, commit, patience, TITLE, vouch=notes)
            if refused is None:
                sent = sync.sent_entry[0].commit if sync.sent_entry is not None else None
                check_arrivals(sync)
                return Vouched(route, by, sent, notes)
            if refused not in (FETCH_FIRST, team_push.LOG_MOVED):
                raise sync.refused(refused)
    raise sync.refused(f"{MAX_ROUNDS} pushes in a row were overtaken by other machines")


def _which(
    sync: RouteSync,
    commit: str,
    shown: Mapping[str, str] | None,
    listed: Mapping[str, str] | None,
) -> dict[str, str]:
    """path → blob: each note of ``shown`` as the remote has it, refused where what the
    person read is not what it says; else those of ``listed`` (else every note no listed
    key stands behind) the remote has as listed."""
    tree = sync._tree(commit)
    if shown is None:
        if listed is None:
            with VerdictStore(store_path(sync.root, sync.route)) as store:
                listed = store.untrusted()
        have = sync.entries(tree, sorted(listed))
        return {p: b for p, b in listed.items() if have.get(p) == b}
    have = sync.entries(tree, sorted(shown))
    missing = sorted(p for p in shown if p not in have)
    if missing:
        raise InvalidInputError(
            f"{missing[0]} is not on {sync.route.label}'s remote: a note written here goes out "
            "signed by this machine, and needs no vouch",
            code="not_on_remote",
        )
    texts = sync.blobs(sorted(set(have.values())))
    for path, text in shown.items():
        if text_digest(texts.get(have[path], "")) != text_digest(text):
            raise ConflictError(
                f"{path} says something else on the remote than what you read (changed here "
                "and not sent, or changed on the remote since): read it again and vouch for "
                "what it says then",
                code="changed_since_read",
            )
    return {p: have[p] for p in shown}


def _listed(sync: RouteSync, signers: AllowedSigners, source: str, commit: str) -> str:
    """The person this machine's entries name, where a commit it signs now verifies against
    ``signers``; else ``not_a_listed_signer``, naming what to add or set up."""
    empty = edited_tree(sync.git, empty_tree_id(len(commit)), {})
    probe = sync._sent(empty, [], f"{TITLE} (a probe: never sent)\n")
    raw = sync.objects([probe], "commit")[probe]
    verdict = verify_commit(raw, signers, time.time(), digits=len(probe))
    who = commit_author(raw)
    if verdict.verified:
        return who
    person = identity(sync.git.git_dir)
    email = person.email if person is not None else "you@example.com"
    if verdict.why == "unsigned":
        fix = (
            "this machine does not sign what it sends; set it up with "
            "'agent-mem-vault sync init --sign' (add --project for a project route), then list "
            f"its key in {source}"
        )
    else:
        key = f" ({verdict.key})" if verdict.key else ""
        fix = (
            f"what this machine sends as {who} is {verdict.words}{key}; add the line "
            f"'{email} namespaces=\"git\" <its public key>' to {source} (agent-mem-vault sync "
            "init --sign prints it), or vouch from a machine the list names"
        )
    raise AccessDeniedError(
        f"a vouch counts only when a key the team lists signs it: {fix}",
        code="not_a_listed_signer",
    )
