"""The network half of a route: fetch, push and checkpoints, and a whole sync of one route.

``RouteSync`` is a ``local.LocalRoute`` (the route's git folder, index, refs,
turn, and the local steps: stage, commit, merge what arrived) that also talks
to the remote, holding the route's turn but not the vault lock, so writers go
on meanwhile:

- **fetch**: the log's new entries (``log.py``) applied to ``fetched``, from the
  remote's checkpoint when the log was folded into one;
- **push**: what ``local`` changed since ``fetched``, sent as the log's next
  entry, refused unless it fast-forwards the log, and the remote updates a ref
  only from the value the push saw: that refusal is the compare-and-swap
  ``claim`` builds on;
- **checkpoint**: now and then, every note in one commit, so that a new
  machine need not read the whole log.

``sync_route`` is one whole sync of a route: stage, commit, fetch if asked,
merge, push until the remote takes it.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ...core.clock import format_datetime, utc_now
from ...core.errors import AgentMemVaultError, RemoteError, UnavailableError
from . import log_fetch, team, team_push
from .gitcmd import NET_TIMEOUT_ENV, GitResult, net_timeout, remote_failure
from .heads import Heads
from .identity import identity
from .inflight import settle
from .journal import take_changes
from .layout import team_prefix
from .local import FETCH_FIRST, LATER_MAX, LocalRoute, RouteReport, read_state, state_file
from .log import (
    CHECKPOINT_EVERY,
    CHECKPOINT_FROM,
    checkpoint_message,
    entry_message,
    log_position,
)
from .outside_changes import undo_outside_changes
from .prune import prune_claims
from .routes import SYNC_DIR, Route, SyncConfig
from .signing import HELD_KEYS, HELD_MARK, SigningHeld, commit_signed, signer_for
from .stamps import stamp_edits
from .team_checkpoint import checkpoint_if_due
from .team_verify import check_arrivals
from .trees import edited_tree, empty_tree_id

if TYPE_CHECKING:
    from ..ops.base import VaultBase

__all__ = [
    "NET_TIMEOUT_ENV",
    "RouteSync",
    "net_timeout",
    "stage_journal",
    "sync_route",
]

PATIENT = 300.0
"""Seconds a fetch or a push of a whole sync (``sync``, joining, the background syncer)
may take: the first push of a large vault sends every note."""
MAX_ROUNDS = 200
"""Pushes a sync or a claim tries before it gives up on a remote that keeps moving."""
UNANSWERED = ("remote_unreachable", "remote_not_found")
"""The failures that mean the remote could not be asked (``view.py``'s back-off)."""


class RouteSync(LocalRoute):
    """One route of one vault, with the network half: fetch, push and checkpoints."""

    def integrate(self, theirs: str | None, report: RouteReport) -> None:
        """Merge the fetched commit ``theirs`` into the vault's notes and ``local``
        (``arrivals.py``, loaded by the first fetch that brought something; the caller
        holds the vault lock)."""
        from .arrivals import integrate, keep_followups

        integrate(self, theirs, report)
        if self._followups is not None:
            keep_followups(self, self._followups, report)
            self._followups = None

    # -- network (the caller has the route's turn) -------------------------------------

    def fetch(self, timeout: float | None = None) -> str | None:
        """What the remote has for the route, applied to ``fetched`` (layout 1:
        ``log_fetch.py``; layout 2: ``team.py``); None when the remote has nothing yet.
        A layout-1 route whose log meets layout 2's fence follows the remote there."""
        limit = net_timeout() if timeout is None else timeout
        if self.route.layout == 2:
            return self._judged(team.fetch(self, limit))
        try:
            return log_fetch.fetch(self, limit)
        except RemoteError as exc:
            if exc.code != "remote_moved" or not team.fenced(self):
                raise
        self._follow_layout(2)
        return self._judged(team.fetch(self, limit))

    def _judged(self, fetched: str | None) -> str | None:
        """``fetched``, once the entries that brought it are judged (``team_verify.py``)."""
        check_arrivals(self)
        return fetched

    def _follow_layout(self, layout: int) -> None:
        """The remote keeps the route in ``layout`` (moved to 2 by ``upgrade.py``; or made
        in 1 by a release that knows one log, first): so does this route, here."""
        from .routes import load_config, save_config

        self.route = replace(self.route, layout=layout)
        with self.vault._held(), self.vault._locked():
            current = load_config(self.root) or self.config
            self.config = current.with_route(self.route)
            save_config(self.root, self.config)

    def _set_refs(self, moves: dict[str, tuple[str | None, str | None]]) -> None:
        """Move refs in one transaction: name → (new value or None to delete, old value
        or None for any)."""
        lines = []
        for name, (new, old) in moves.items():
            if new is None:
                lines.append(f"delete {name}\n")
            else:
                lines.append(f"update {name} {new}{' ' + old if old else ''}\n")
        self.git.run("update-ref", "--stdin", input="".join(lines).encode())
        fields = self._mirrored()
        moved = {fields[name]: new for name, (new, _old) in moves.items() if name in fields}
        self._moved(**moved)  # the refs a push reads, as they are now

    def _empty_tree(self, digits: int) -> str:
        """The empty tree, written (a marker's tree), in a repository whose ids have
        ``digits`` hex digits."""
        return edited_tree(self.git, empty_tree_id(digits), {})

    def push(
        self,
        commit: str,
        timeout: float | None = None,
        title: str = "notes",
        claims: Sequence[str] = (),
    ) -> str | None:
        """Send what ``commit`` changed since ``fetched`` as one entry of the route's log:
        None if the remote took it, else why it refused (it did not fast-forward the
        log: another machine pushed first). ``claims``: the handoffs a read takes, each
        with a claim ref of its own in layout 2 (``team.py``)."""
        limit = net_timeout() if timeout is None else timeout
        if self.route.layout == 2:
            refused = team_push.push(self, commit, limit, title, claims)
            if refused is None:
                check_arrivals(self)
            return refused
        known = self._refs()
        if known.log != known.applied or (
            known.fetched is not None and not self.is_ancestor(known.fetched, commit)
        ):
            return FETCH_FIRST
        changes: dict[str, tuple[str | None, str | None]]
        if self._made.get(commit) == (known.fetched,) and commit in self._set_by:
            changes = {p: (None, b) for p, (_, b) in self._set_by[commit].items()}  # a claim's
        else:
            changes = self.changes(known.fetched, commit)
        if not changes:
            self._set_refs({self.fetched: (commit, known.fetched)})
            self._moved(fetched=commit, fetched_tree=None)
            return None
        removed = [p for p, (_old, new) in changes.items() if new is None]
        after = [("-p", known.log)] if known.log else []
        parent = [a for pair in after for a in pair]
        if len(changes) > CHECKPOINT_FROM or known.fetched is None:
            return self._push_checkpoint(commit, known, parent, limit)
        blobs = {p: new for p, (_old, new) in changes.items() if new is not None}
        tree = edited_tree(self.git, empty_tree_id(len(commit)), blobs)
        entry = self._sent(tree, parent, entry_message(title, removed, machine=self.config.machine))
        return self._send_entry(commit, entry, known, limit, f"{entry}:{self.route.log_ref}")

    def _sent(self, tree: str, parents: list[str], message: str) -> str:
        """A commit the remote will receive (a log entry, a checkpoint; ``parents`` as
        ``commit-tree`` takes them: ``-p ID …``), authored by the
        person git names for this route (``identity.py``), by agent-mem-vault when none;
        signed as their git signs (``signing.py``): ``SigningHeld`` when the key cannot
        sign now, and nothing is sent."""
        who = identity(self.git.git_dir)
        env = None if who is None else who.env()
        signer = signer_for(self.git.git_dir, self.route)
        if signer is None:
            return self.git.commit_tree(tree, parents[1::2], message, env)
        try:
            commit = commit_signed(
                self.git, signer, self.root / SYNC_DIR, [tree, *parents, "-m", message], env
            )
        except SigningHeld as exc:
            self._signing({k: str(exc.details.get(k)) for k in HELD_KEYS}, exc)
            raise
        self._signing(None)
        return commit

    def _signing(self, held: dict[str, str] | None, error: SigningHeld | None = None) -> None:
        """Write down that this route's key cannot sign (``held``: why, the fix), or that
        it signs again; the sync folder's mark tells writes to look (``signing.py``)."""
        state = self.state()
        if held is None and "signing" not in state:
            return
        mark = self.root / SYNC_DIR / HELD_MARK
        if held is None:
            del state["signing"]
            self.save_state(state)
            if not any("signing" in self._state_of(r) for r in self.config.routes):
                mark.unlink(missing_ok=True)
            return
        before = state.get("signing")
        since = before.get("since") if isinstance(before, dict) else None
        state["signing"] = {**held, "since": since or format_datetime(utc_now())}
        if error is not None:
            state["error"] = {
                "code": error.code,
                "message": error.message,
                "at": format_datetime(utc_now()),
            }
        self.save_state(state)
        with suppress(OSError):
            mark.touch()

    def _state_of(self, route: Route) -> dict[str, Any]:
        return (
            self.state()
            if route.key == self.route.key
            else read_state(state_file(self.root, route))
        )

    def _push_checkpoint(
        self, commit: str, known: Heads, parent: list[str], limit: float
    ) -> str | None:
        """Many notes at once: a checkpoint of every note, and a log entry pointing at it,
        in one atomic push (the log's compare-and-swap decides for both)."""
        tree = self._tree(commit)
        checkpoint = self._sent(tree, [], checkpoint_message(known.log))
        marker = self._sent(
            self._empty_tree(len(commit)),
            parent,
            entry_message("checkpoint", [], checkpoint, machine=self.config.machine),
        )
        refused = self._send_entry(
            commit,
            marker,
            known,
            limit,
            f"+{checkpoint}:{self.route.ref}",
            f"{marker}:{self.route.log_ref}",
        )
        if refused is None:
            self._set_refs({self.checkpoint: (checkpoint, None)})
        return refused

    def _send_entry(
        self, commit: str, entry: str, known: Heads, limit: float, *specs: str
    ) -> str | None:
        """Push ``entry`` (with ``specs``, atomically), the log entry of ``commit``. Until
        the remote answers, the pair is written down (``sent``): if the answer is lost
        but the entry landed, the fetch that brings it back makes ``commit`` a parent of
        ``fetched``, so that what this machine did since (a claim put back) still
        counts as its own change in the next merge."""
        state = self.state()
        sent = state.get("sent")
        state["sent"] = {**(sent if isinstance(sent, dict) else {}), entry: commit}
        self.save_state(state)
        # Raises if the remote did not answer: the pair stays written down.
        refused = self._send(limit, *specs, atomic=len(specs) > 1, sent=entry)
        if refused is None:
            self._pushed(commit, entry, known)
        else:
            self._unsent(entry)  # refused: it never landed
        return refused

    def _unsent(self, *entries: str) -> None:
        state = self.state()
        sent = state.get("sent")
        if isinstance(sent, dict) and any(e in sent for e in entries):
            state["sent"] = {e: c for e, c in sent.items() if e not in entries}
            self.save_state(state)

    def checkpoint_if_due(self, timeout: float | None = None) -> bool:
        """A new checkpoint of the remote's notes, if its log has grown ``CHECKPOINT_EVERY``
        entries past the one this machine knows (and it is still that one on the remote);
        whether one was written. Only after this machine applied the whole log."""
        if self.route.layout == 2:
            return checkpoint_if_due(self, net_timeout() if timeout is None else timeout)
        known = self._refs()
        if known.log is None or known.log != known.applied or known.fetched is None:
            return False
        state = self.state()
        since = state.get("checkpoint_tried")
        if not isinstance(since, str) or not since:
            since = log_position(self.git, known.checkpoint) if known.checkpoint else None
        span = [f"{since}..{known.log}"] if since else [known.log]
        if int(self.git.text("rev-list", "--count", *span)) < CHECKPOINT_EVERY:
            return False
        state["checkpoint_tried"] = known.log  # tried once per CHECKPOINT_EVERY entries
        self.save_state(state)
        tree = known.fetched_tree or self._tree(known.fetched)
        checkpoint = self._sent(tree, [], checkpoint_message(known.log))
        lease = f"--force-with-lease={self.route.ref}:{known.checkpoint or ''}"
        limit = net_timeout() if timeout is None else timeout
        # No "+": a forced refspec would override the lease.
        if self._send(limit, f"{checkpoint}:{self.route.ref}", options=(lease,)) is not None:
            return False  # another machine wrote one first: it stands
        self._set_refs({self.checkpoint: (checkpoint, None)})
        self._moved(checkpoint=checkpoint)
        return True

    def _send(
        self,
        limit: float,
        *specs: str,
        atomic: bool = False,
        options: Sequence[str] = (),
        sent: str | None = None,
    ) -> str | None:
        """Push ``specs``: None if the remote took them, else why it refused; ``sent``:
        the log entry written down as sent, no longer so once the remote took it."""
        result, refused = self.push_refs(limit, specs, options, atomic=atomic)
        if result.status == 0 and not refused:
            self._remember(pushed=True, unsent=sent)
            return None
        if refused:
            # With --atomic every ref is refused; one the remote objected to says why.
            cause = [r for r in refused if "atomic push failed" not in r] or refused
            return cause[0].rsplit("\t", 1)[-1]
        raise self._failed(result)

    def fetch_refs(self, limit: float, specs: Sequence[str], *, prune: bool = False) -> GitResult:
        """One ``git fetch`` of ``specs`` from the route's remote (no tags, no FETCH_HEAD,
        no submodules); what git said, for the caller to judge."""
        return self._network(
            "fetch",
            *(["--prune"] if prune else []),
            "--no-tags",
            "--no-write-fetch-head",
            "--no-recurse-submodules",
            "--quiet",
            self.remote,
            *specs,
            timeout=limit,
        )

    def push_refs(
        self, limit: float, specs: Sequence[str], options: Sequence[str] = (), *, atomic: bool
    ) -> tuple[GitResult, list[str]]:
        """One ``git push`` of ``specs`` (no hooks of ours, machine-readable): what git
        said, and the lines of the refs it refused (``!``)."""
        result = self._network(
            "push",
            "--no-verify",
            "--porcelain",
            "--quiet",
            *(["--atomic"] if atomic else []),
            *options,
            self.remote,
            *specs,
            timeout=limit,
        )
        out = result.out.decode("utf-8", "replace").splitlines()
        return result, [line for line in out if line[:1] == "!"]

    def _pushed(self, commit: str, entry: str, known: Heads) -> None:
        """The remote took ``entry``: it has the notes of ``commit`` now."""
        self._set_refs(
            {
                self.fetched: (commit, known.fetched),
                self.log: (entry, known.log),
                self.applied: (entry, known.applied),
            }
        )
        self._moved(fetched=commit, fetched_tree=None, log=entry, applied=entry)

    def refused(self, reason: str) -> RemoteError:
        """The error for a push refused although the remote has nothing newer: a rule
        there (a protected ref, a hook), not another machine."""
        refs = (
            f"the refs under {team_prefix(self.route)}/"
            if self.route.layout == 2
            else f"the refs {self.route.log_ref} and {self.route.ref}"
        )
        where = "--project" if self.route.namespace else "REMOTE"
        name = (self.route.namespace or "notes").rsplit("/", 1)[-1]
        fix = (
            "allow pushes to that branch there"
            if self.route.branch
            else f"allow {refs} there, or keep the notes on one branch: agent-mem-vault "
            f"sync init {where} --branch agent-mem-vault/{name}"
        )
        error = RemoteError(
            f"{self.route.label} refused the push ({reason}) although nothing newer is "
            "there; a rule on the remote forbids it (a protected ref, a hook, a host that "
            f"takes only branches): {fix}",
            code="push_refused",
        )
        self._remember(error=error)
        return error

    def _network(self, *args: str, timeout: float) -> GitResult:
        try:
            return self.git.run(*args, timeout=timeout, check=False)
        except TimeoutError:
            error = remote_failure(self.route.label, None, timeout=timeout)
            self._remember(error=error, unanswered=True)
            raise error from None

    def _failed(self, result: GitResult) -> AgentMemVaultError:
        error = remote_failure(self.route.label, result)
        # Refused, silent or gone: callers that need not wait leave it alone for a while.
        # A remote that answered "no" (credentials, a rule) is asked as before.
        self._remember(error=error, unanswered=error.code in UNANSWERED)
        return error


# -- a whole sync of one route -----------------------------------------------------------


def stage_journal(
    vault: VaultBase,
    config: SyncConfig,
    also: Sequence[str] = (),
    syncs: Sequence[RouteSync] = (),
    unstamped: Sequence[str] = (),
) -> None:
    """Stage every change the journal holds (and the notes ``also`` names) into its
    route's index (the caller holds the vault lock): taking the journal stages it for
    every route at once. ``syncs``: routes already at hand, used as they are;
    ``unstamped``: notes that go with the writer pair they have (a note written again
    as the team left it)."""
    changes = take_changes(vault.path)
    if changes is not None and not changes and not also:
        return
    at_hand = {s.route.key: s for s in syncs}
    for route in config.routes:
        sync = at_hand.get(route.key) or RouteSync(vault, config, route)
        # A note edited by hand names its editor before it goes (stamps.py).
        edits = sync.modified() if changes is None else changes
        if route.key in at_hand:  # a note committed from disk since may have been edited
            edits = [*edits, *(p for p in sync.state().get("unstaged", ()) if p not in edits)]
        stamp_edits(sync, [p for p in edits if p not in unstamped])
        mine = [p for p in (*(changes or ()), *also) if config.covers(route, p)]
        if changes is not None and route.key in at_hand and len(mine) <= LATER_MAX:
            sync.later(mine)  # committed next, from disk (``LocalRoute.commit``)
        else:
            sync.stage(None if changes is None else [*changes, *also])


def sync_route(
    vault: VaultBase,
    config: SyncConfig,
    route: Route,
    *,
    fetch: bool = True,
    full: bool = False,
    wait: float | None = None,
    patient: bool = True,
) -> RouteReport:
    """Commit what changed, fetch (``fetch``, else only when a push is refused), merge,
    push; errors are raised (the caller decides whether one is a report's line).
    ``patient``: a fetch or push may take ``PATIENT`` seconds (a large vault's first
    push), else ``net_timeout()`` (the syncer's look at the remote)."""
    sync = RouteSync(vault, config, route)
    report = RouteReport(route)
    patience = max(net_timeout(), PATIENT) if patient else net_timeout()
    with sync.network_turn(wait):
        if route.layout == 2:
            settle(vault, sync)  # a read here that stopped half-way (``inflight.py``)
        with vault._held(), vault._locked():
            stage_journal(vault, config, syncs=[sync])
            if full:
                stamp_edits(sync, sync.modified())
                sync.stage(None)
            head = sync.commit("notes changed here")
        known = sync.heads()[1]
        if fetch:
            # What this machine had before the fetch: a note it removed is not written back
            # (``require`` only: every other sync reads nothing more).
            trees: tuple[str | None, str | None] = (None, None)
            if route.trust == "require":
                trees = (sync.local_tree(), sync.fetched_tree(known) if known else None)
            known = sync.fetch(patience)
            report.fetched = True
            with vault._held(), vault._locked():
                sync.integrate(known, report)
                head = sync.heads()[0]
            if route.trust == "require" and (undone := undo_outside_changes(vault, sync, trees)):
                report.undone = undone  # an outsider's read or forget does not count: sent now
                with vault._held(), vault._locked():
                    stage_journal(vault, config, syncs=[sync], unstamped=undone)
                    head = sync.commit("put back: changed outside the team")
            if route.layout == 2 and route.branch is None:
                with suppress(AgentMemVaultError):  # claim refs only wait for the next time
                    prune_claims(sync, patience)
        for _ in range(MAX_ROUNDS):
            if head is None or head == known:
                return report
            if known is not None and sync.is_ancestor(head, known):
                return report  # the remote has it all already
            refused = sync.push(head, patience)
            if refused is None:
                report.pushed = True
                with suppress(AgentMemVaultError):  # a checkpoint only makes joining quicker
                    sync.checkpoint_if_due(patience)
                return report
            before = known
            known = sync.fetch(patience)
            report.fetched = True
            if refused != FETCH_FIRST and (
                known == before or (known is not None and sync.is_ancestor(known, head))
            ):
                raise sync.refused(refused)
            with vault._held(), vault._locked():
                sync.integrate(known, report)
                head = sync.heads()[0]
            time.sleep(random.uniform(0, 0.02))
    raise _too_busy(route)


def _too_busy(route: Route) -> UnavailableError:
    return UnavailableError(
        f"{route.label} kept moving: {MAX_ROUNDS} pushes in a row were overtaken by other "
        "machines; retry in a moment",
        code="sync_busy",
    )
