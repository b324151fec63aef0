"""Fetching in layout 2 (``layout.py``): a log per machine, folded by each reader.

- **fetch**: one ``git fetch`` of every ref under the route's prefix but the claims
  (a wildcard never fails on a log that is not there), then every new entry of
  every log in two git processes (``entries.py``), folded per note into ``fetched``
  (``fold.py``: the same entries give the same notes everywhere). A log that went
  back (a backup restored, a ``push --mirror``) is read again from its start, and
  ``fetched`` is then unlinked: what this machine still has merges with no common
  version, where a read stays read.

Pushing is ``team_push.py``. ``engine.RouteSync`` calls both for a route whose
``layout`` is 2; the route's turn is held by the caller, as for layout 1. The
helpers both use (the store, this machine's copy of the remote's refs, the route's
state as a fetch or push changes it) are here.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from . import loose
from .entries import LogEntry, read_chains, read_entries
from .fold import FoldStore, Tip
from .gitcmd import net_timeout
from .layout import (
    FENCE_TITLE,
    check_marker,
    checkpoint_facts,
    new_route_layout,
    team_prefix,
)
from .routes import SYNC_DIR
from .signers_branch import fetch_spec as signers_spec
from .team_branch import BRANCH, check_root, fetch_specs
from .trees import edited_tree, empty_tree_id

if TYPE_CHECKING:
    from .engine import RouteSync

__all__ = [
    "GitTexts",
    "claims_on_remote",
    "covered_of",
    "fenced",
    "fetch",
    "mine_of",
    "mirror_of",
    "mirror_refs",
    "present",
    "remote_layout",
    "save_said",
    "store_of",
]


def remote_layout(sync: RouteSync) -> int:
    """The layout the route's remote holds: 2 where it has a marker, 1 where it has
    layout 1's refs, else the one new routes are made in (``new_route_layout``)."""
    prefix, route = team_prefix(sync.route), sync.route
    result = sync._network(
        "ls-remote",
        sync.remote,
        f"{prefix}/_layout",
        route.log_ref,
        route.ref,
        timeout=net_timeout(),
    )
    if result.status != 0:
        raise sync._failed(result)
    found = {line.partition("\t")[2] for line in result.out.decode().splitlines()}
    if f"{prefix}/_layout" in found:
        return 2
    return 1 if found else new_route_layout()


def fenced(sync: RouteSync) -> bool:
    """Whether the layout-1 log this machine just fetched ends in layout 2's fence: the
    remote was upgraded (``upgrade.py``)."""
    sync._known = None
    log = sync._refs().log
    if log is None:
        return False
    found = sync.git.run("cat-file", "commit", log, check=False)
    message = found.out.decode("utf-8", "replace").partition("\n\n")[2]
    return found.status == 0 and message.startswith(FENCE_TITLE)


def store_of(sync: RouteSync) -> FoldStore:
    """The route's fold store (disposable: rebuilt from the remote when lost)."""
    return FoldStore(sync.root / SYNC_DIR / f"{sync.route.key}.fold.sqlite")


def mirror_of(sync: RouteSync) -> str:
    """Where this machine keeps its copy of the route's refs on the remote."""
    return sync.mirror


def mine_of(sync: RouteSync) -> str:
    """This machine's own log tip, as the remote last confirmed it (kept when the
    remote loses the log, so the next push writes it back whole)."""
    return sync.mine


def mirror_refs(sync: RouteSync, prefix: str) -> dict[str, str]:
    """The refs this machine keeps under ``prefix`` (its copy of the remote's): name
    under it → commit."""
    raw = sync.git.run("for-each-ref", "--format=%(refname) %(objectname)", prefix + "/")
    out = {}
    for line in raw.out.decode().splitlines():
        name, _, commit = line.partition(" ")
        out[name.removeprefix(prefix + "/")] = commit
    return out


def fetch(sync: RouteSync, limit: float) -> str | None:
    """What the remote has for the route, folded into ``fetched``; None when the remote
    has nothing yet."""
    started = time.time()
    prefix, mirror = team_prefix(sync.route), mirror_of(sync)
    branch = sync.route.branch
    specs = [f"+{prefix}/*:{mirror}/*", f"^{prefix}/_claim/*"]
    if branch is not None:
        specs = fetch_specs(sync.route, mirror)
    if sync.route.signers_branch is not None and sync.route.repo is not None:
        specs.append(signers_spec(sync.config, sync.route))  # the team's list, in one fetch
    result = sync.fetch_refs(limit, specs, prune=True)
    if result.status != 0:
        if branch is None or f"couldn't find remote ref {branch}" not in result.err:
            raise sync._failed(result)
        sync._set_refs({f"{mirror}/{BRANCH}": (None, None)})  # not made yet, or deleted
    sync._remember(fetched=True)
    refs = sync._read_refs(mirror)[1]  # the refs the fetch moved, read with the rest
    state = sync.state()
    # What this fetch changes in the route's state, written over a fresh read of it at
    # each save: another writer (a private note's unsend, under the vault lock) may have
    # written it meanwhile.
    said: dict[str, Any] = {}
    if branch is not None:  # one branch holds every machine's entries
        refs = {f"_log/{BRANCH}": refs[BRANCH]} if BRANCH in refs else {}
        if refs and state.get("marker") is None:
            said["marker"] = check_root(sync, refs[f"_log/{BRANCH}"])
    marker = refs.get("_layout")
    if marker is not None and state.get("marker") != marker:
        message = sync.git.run("cat-file", "commit", marker).out.decode("utf-8", "replace")
        check_marker(sync.route, message.partition("\n\n")[2])
        said["marker"] = marker
    logs = {n.removeprefix("_log/"): c for n, c in refs.items() if n.startswith("_log/")}
    known = sync._refs()
    # The checkpoint every fold starts from (a route upgraded from layout 1 has one); one
    # the remote lost is written there again from here.
    checkpoint = refs.get("_checkpoint") or state.get("checkpoint")
    if checkpoint is not None and "_checkpoint" not in refs and branch is None:
        _restore(sync, limit, {f"{prefix}/_checkpoint": checkpoint})
    covered = covered_of(state)
    adopting = checkpoint != state.get("checkpoint")
    frontier: dict[str, Tip] = {}
    if checkpoint is not None and adopting:
        frontier, lamport = _frontier(sync, checkpoint, logs)
        said["lamport"] = max(int(state.get("lamport") or 0), lamport)
    store = store_of(sync)
    try:
        tips = store.tips()
        fresh = not tips or adopting
        if not fresh and state.get("fold_tree") != known.fetched_tree:
            fresh = True  # the store went on without ``fetched`` (a process stopped between)
        gone = [
            m
            for m, tip in tips.items()
            if logs.get(m) != tip.commit
            and (m not in logs or not sync.is_ancestor(tip.commit, logs[m]))
            # a log let go once a checkpoint held all of it (``prune.py``) is no loss
            and not (m not in logs and _held(sync, tip.commit, m, covered, frontier))
        ]
        # A log that went back or went away: its notes are what the remote has now, so
        # everything is folded again from the start, unlinked from what was here.
        linked = not gone
        if tips and (fresh or gone):
            store.reset()
            tips = {}
        fresh = fresh or bool(gone)
        if fresh and checkpoint is not None and not frontier:
            frontier, lamport = _frontier(sync, checkpoint, logs)
            said["lamport"] = max(int(state.get("lamport") or 0), lamport)
        if frontier or (fresh and checkpoint is None):
            covered = {m: (t.commit, t.seq) for m, t in frontier.items()}
            said["covered"] = {m: list(c) for m, c in covered.items()}
        said["checkpoint"] = checkpoint
        # Folded from the checkpoint: only the entries after the ones it holds.
        since = {m: t.commit for m, t in (tips or frontier).items()}
        new = {m: c for m, c in logs.items() if since.get(m) != c}
        said["last_full_fetch"] = started
        said["machines"] = len(logs)
        moved = state.get("moved")
        said["moved"] = {
            **(moved if isinstance(moved, dict) else {}),
            **{m: started for m in new if m in tips},
        }
        # Every claim that landed before this fetch began came with its entry: what a
        # lost race learned from the claim refs alone is known from the logs now.
        drop = ("taken_elsewhere",)
        if not new and not fresh:
            save_said(sync, said, drop)
            return known.fetched
        digits = len(checkpoint or known.fetched or next(iter(logs.values()), "0" * 40))
        folded_to = tips or frontier
        grown = {
            m: (c, folded_to[m].commit, folded_to[m].seq) for m, c in new.items() if m in folded_to
        }
        arrived = (
            read_chains(sync.git, grown, empty_tree_id(digits)) if len(grown) == len(new) else None
        )
        if arrived is None:  # a log that is new here, went back, or is long: git reads them
            arrived = read_entries(
                sync.git,
                list(new.values()),
                present(sync, [since[m] for m in logs if m in since]),
                empty_tree_id(digits),
            )
        entries = [
            e
            for e in arrived
            if e.seq > covered.get(e.machine, ("", 0))[1]  # the checkpoint holds the rest
        ]
        new_tips = {**frontier, **_tips(entries, new)}
        changes = [
            c for e in entries for c in e.changes() if sync.config.covers(sync.route, c.path)
        ]
        start_tree = sync._tree(checkpoint) if checkpoint is not None else None
        base_tree = start_tree if fresh else known.fetched_tree

        def current(paths: Sequence[str]) -> dict[str, str | None]:
            found = sync.entries(base_tree, list(paths))
            return {p: found.get(p) for p in paths}

        def start(paths: Sequence[str]) -> dict[str, str | None]:
            found = sync.entries(start_tree, list(paths))
            return {p: found.get(p) for p in paths}

        # Until ``fetched`` holds this fold, the store is ahead of it: said so first, so
        # that a process stopped in between folds everything again next time.
        save_said(sync, {**said, "fold_tree": None}, drop)
        folded = store.fold(changes, new_tips, current, GitTexts(sync), start)
        said["lamport"] = max(int(said.get("lamport") or 0), store.max_lamport())
    finally:
        store.close()
    sync._followups = folded
    sent = state.get("sent") if isinstance(state.get("sent"), dict) else {}
    assert isinstance(sent, dict)
    ours = [sent[e.commit] for e in entries if e.commit in sent]
    if not logs and checkpoint is None and known.fetched is None:
        save_said(sync, said, drop)
        return None
    origin = base_tree or empty_tree_id(digits)
    tree = edited_tree(sync.git, origin, folded.blobs) if folded.blobs else origin
    parents = [known.fetched] if linked and known.fetched is not None else []
    parents = list(dict.fromkeys([*parents, *ours]))
    commit = sync.git.commit_tree(tree, parents, f"the remote's {len(logs)} logs")
    sync._made[commit] = tuple(parents)
    moves: dict[str, tuple[str | None, str | None]] = {sync.fetched: (commit, known.fetched)}
    mine = logs.get(sync.config.machine)
    if mine is not None and mine != known.mine:
        moves[mine_of(sync)] = (mine, None)  # confirmed: this machine's log, as it stands
    sync._set_refs(moves)
    # ``fetched`` holds the fold now, and the entries this machine sent with it.
    answered = {e.commit for e in entries}
    current_sent = sync.state().get("sent")
    said["sent"] = {
        e: c
        for e, c in (current_sent.items() if isinstance(current_sent, dict) else ())
        if e not in answered
    }
    save_said(sync, {**said, "fold_tree": tree}, drop)
    sync._moved(fetched=commit, fetched_tree=tree)
    return commit


def save_said(sync: RouteSync, said: dict[str, Any], drop: Sequence[str] = ()) -> None:
    """Write ``said`` over the route's state as it is now (and take ``drop`` out)."""
    state = sync.state()
    state.update(said)
    for key in drop:
        state.pop(key, None)
    sync.save_state(state)


def covered_of(state: dict[str, Any]) -> dict[str, tuple[str, int]]:
    """Each machine's last entry that the adopted checkpoint holds: (commit, seq)."""
    found = state.get("covered")
    out: dict[str, tuple[str, int]] = {}
    for m, c in found.items() if isinstance(found, dict) else ():
        if isinstance(c, list) and len(c) == 2 and isinstance(c[0], str) and isinstance(c[1], int):
            out[str(m)] = (c[0], c[1])
    return out


def _frontier(sync: RouteSync, checkpoint: str, logs: dict[str, str]) -> tuple[dict[str, Tip], int]:
    """The entries of each machine that ``checkpoint`` holds (a log since let go counts
    as held whole), and its Lamport number."""
    message = sync.git.run("cat-file", "commit", checkpoint).out.decode("utf-8", "replace")
    covers, lamport = checkpoint_facts(message.partition("\n\n")[2])
    frontier = {
        m: Tip(c, seq, lamport)
        for m, (c, seq) in covers.items()
        if m not in logs or sync.is_ancestor(c, logs[m])
    }
    return frontier, lamport


def _held(
    sync: RouteSync,
    commit: str,
    machine: str,
    covered: dict[str, tuple[str, int]],
    frontier: dict[str, Tip],
) -> bool:
    """Whether a checkpoint (the adopted one, or the one being adopted) holds ``commit``
    of ``machine``'s log: then that log's going away loses nothing."""
    for held in (
        covered.get(machine, (None, 0))[0],
        getattr(frontier.get(machine), "commit", None),
    ):
        if held is not None and (held == commit or sync.is_ancestor(commit, held)):
            return True
    return False


def _restore(sync: RouteSync, limit: float, refs: dict[str, str]) -> None:
    """Write refs the remote lost back as this machine last saw them, create-only (a
    refusal means another machine did it first)."""
    sync.push_refs(
        limit,
        [f"{commit}:{ref}" for ref, commit in refs.items()],
        [f"--force-with-lease={ref}:" for ref in refs],
        atomic=False,
    )


def present(sync: RouteSync, commits: list[str]) -> list[str]:
    """Those of ``commits`` this machine still has: the tip of a log let go long ago may
    have been collected by ``git gc`` since (its entries are then read again, and fold to
    what they made)."""
    if not commits:
        return []
    here, asked = loose.present(sync.git, commits)
    if not asked:
        return here
    found = sync.git.run(
        "cat-file", "--batch-check=%(objectname)", input="".join(f"{c}\n" for c in asked).encode()
    ).out.decode()
    return [*here, *(line for line in found.splitlines() if " missing" not in line)]


def _tips(entries: list[LogEntry], new: dict[str, str]) -> dict[str, Tip]:
    by_commit = {e.commit: e for e in entries}
    out = {}
    for machine, commit in new.items():
        entry = by_commit.get(commit)
        if entry is not None:
            out[machine] = Tip(commit, entry.seq, entry.lamport)
    return out


class GitTexts:
    """The fold's view of the route's objects: texts read and written by git."""

    def __init__(self, sync: RouteSync) -> None:
        self.sync = sync

    def texts(self, blobs: Sequence[str]) -> dict[str, str]:
        return self.sync.blobs(list(blobs))

    def write(self, text: str) -> str:
        written = self.sync.git.run("hash-object", "-w", "--stdin", input=text.encode("utf-8"))
        return written.out.decode().strip()


def claims_on_remote(sync: RouteSync, ids: Sequence[str] = ()) -> dict[str, str]:
    """The claim refs the remote has (of ``ids``, or all): handoff id → the entry."""
    prefix = team_prefix(sync.route)
    patterns = [f"{prefix}/_claim/{i}" for i in ids] or [f"{prefix}/_claim/*"]
    result = sync._network("ls-remote", sync.remote, *patterns, timeout=net_timeout())
    if result.status != 0:
        raise sync._failed(result)
    out = {}
    for line in result.out.decode().splitlines():
        oid, _, ref = line.partition("\t")
        out[ref.rsplit("/", 1)[-1]] = oid
    return out
