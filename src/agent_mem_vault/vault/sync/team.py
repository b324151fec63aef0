"""Fetch and push in layout 2 (``layout.py``): a log per machine, folded by each reader.

- **fetch**: one ``git fetch`` of every ref under the route's prefix but the claims
  (a wildcard never fails on a log that is not there), then every new entry of
  every log in two git processes (``entries.py``), folded per note into ``fetched``
  (``fold.py``: the same entries give the same notes everywhere). A log that went
  back (a backup restored, a ``push --mirror``) is read again from its start, and
  ``fetched`` is then unlinked: what this machine still has merges with no common
  version, where a read stays read.
- **push**: what ``local`` changed since ``fetched`` as this machine's next entry,
  with a lease on its own log's tip: no other machine's push can refuse it. A claim
  goes with a create-only ``_claim/<id>`` in the same atomic push; of two machines
  taking one handoff exactly one lands, and the other learns it from its own push
  (``CLAIMED``) without fetching anything.

``engine.RouteSync`` calls these for a route whose ``layout`` is 2; the route's turn
is held by the caller, as for layout 1.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .entries import LogEntry, read_entries, team_entry_message
from .fold import FoldStore, Tip
from .gitcmd import net_timeout
from .layout import (
    FENCE_TITLE,
    check_marker,
    checkpoint_facts,
    fence_message,
    marker_message,
    new_route_layout,
    team_prefix,
)
from .local import FETCH_FIRST
from .routes import SYNC_DIR
from .team_branch import BRANCH, check_root, fetch_specs, root
from .trees import edited_tree, empty_tree_id

if TYPE_CHECKING:
    from .engine import RouteSync

__all__ = [
    "CLAIMED",
    "LOG_MOVED",
    "claims_on_remote",
    "fenced",
    "fetch",
    "mirror_refs",
    "push",
    "remote_layout",
    "store_of",
]

CLAIMED = "taken by another machine"
"""Why a claim's push was refused: another machine's claim of that handoff stands."""
ONE_LOG = "the remote keeps one log"
"""Why a new route's first push was refused: a release that knows one log made the route
there first (its log stands where the fence would go); the route follows it."""
LOG_MOVED = "this machine's log moved"
"""Why a push was refused: the remote's copy of this machine's log is not the tip this
machine knows (an answer lost on the way; or a copy of this vault on another machine)."""


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


def _mirror(sync: RouteSync) -> str:
    """Where this machine keeps its copy of the route's refs on the remote."""
    return sync.fetched.rsplit("/", 1)[0] + "/remote"


def _mine(sync: RouteSync) -> str:
    """This machine's own log tip, as the remote last confirmed it (kept when the
    remote loses the log, so the next push writes it back whole)."""
    return sync.fetched.rsplit("/", 1)[0] + "/mine"


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
    prefix, mirror = team_prefix(sync.route), _mirror(sync)
    branch = sync.route.branch
    specs = [f"+{prefix}/*:{mirror}/*", f"^{prefix}/_claim/*"]
    result = sync._network(
        "fetch",
        "--prune",
        "--no-tags",
        "--no-write-fetch-head",
        "--no-recurse-submodules",
        "--quiet",
        sync.remote,
        *(specs if branch is None else fetch_specs(sync.route, mirror)),
        timeout=limit,
    )
    if result.status != 0:
        if branch is None or f"couldn't find remote ref {branch}" not in result.err:
            raise sync._failed(result)
        sync._set_refs({f"{mirror}/{BRANCH}": (None, None)})  # not made yet, or deleted
    sync._remember(fetched=True)
    sync._known = None
    refs = mirror_refs(sync, mirror)
    state = sync.state()
    if branch is not None:  # one branch holds every machine's entries
        refs = {f"_log/{BRANCH}": refs[BRANCH]} if BRANCH in refs else {}
        if refs and state.get("marker") is None:
            state["marker"] = check_root(sync, refs[f"_log/{BRANCH}"])
    marker = refs.get("_layout")
    if marker is not None and state.get("marker") != marker:
        message = sync.git.run("cat-file", "commit", marker).out.decode("utf-8", "replace")
        check_marker(sync.route, message.partition("\n\n")[2])
        state["marker"] = marker
    logs = {n.removeprefix("_log/"): c for n, c in refs.items() if n.startswith("_log/")}
    known = sync._refs()
    # The checkpoint every fold starts from (a route upgraded from layout 1 has one); one
    # the remote lost is written there again from here.
    checkpoint = refs.get("_checkpoint") or state.get("checkpoint")
    if checkpoint is not None and "_checkpoint" not in refs and branch is None:
        _restore(sync, limit, {f"{prefix}/_checkpoint": checkpoint})
    store = store_of(sync)
    try:
        tips = store.tips()
        fresh = not tips or checkpoint != state.get("checkpoint")
        if not fresh and state.get("fold_tree") != known.fetched_tree:
            fresh = True  # the store went on without ``fetched`` (a process stopped between)
        covered = state.get("covered") if isinstance(state.get("covered"), dict) else {}
        assert isinstance(covered, dict)
        gone = [
            m
            for m, tip in tips.items()
            if logs.get(m) != tip.commit
            and (m not in logs or not sync.is_ancestor(tip.commit, logs[m]))
            # a log let go once the checkpoint held all of it (``prune.py``) is no loss
            and not (m not in logs and covered.get(m) == tip.commit)
        ]
        # A log that went back or went away: its notes are what the remote has now, so
        # everything is folded again from the start, unlinked from what was here.
        linked = not gone
        if tips and (fresh or gone):
            store.reset()
            tips = {}
        fresh = fresh or bool(gone)
        state["checkpoint"] = checkpoint
        # Folded from the checkpoint: only the entries after the ones it holds.
        frontier: dict[str, Tip] = {}
        if fresh and checkpoint is not None:
            message = sync.git.run("cat-file", "commit", checkpoint).out.decode("utf-8", "replace")
            covers, lamport = checkpoint_facts(message.partition("\n\n")[2])
            state["lamport"] = max(int(state.get("lamport") or 0), lamport)
            frontier = {
                m: Tip(c, seq, lamport)
                for m, (c, seq) in covers.items()
                if m not in logs or sync.is_ancestor(c, logs[m])
            }
            state["covered"] = {m: t.commit for m, t in frontier.items()}
        since = {m: t.commit for m, t in (tips or frontier).items()}
        new = {m: c for m, c in logs.items() if since.get(m) != c}
        state["last_full_fetch"] = started
        # Every claim that landed before this fetch began came with its entry: what a
        # lost race learned from the claim refs alone is known from the logs now.
        state.pop("taken_elsewhere", None)
        moved = state.get("moved")
        state["moved"] = {
            **(moved if isinstance(moved, dict) else {}),
            **{m: started for m in new if m in tips},
        }
        if not new and not fresh:
            sync.save_state(state)
            return known.fetched
        digits = len(checkpoint or known.fetched or next(iter(logs.values()), "0" * 40))
        entries = read_entries(
            sync.git,
            list(new.values()),
            _present(sync, [since[m] for m in logs if m in since]),
            empty_tree_id(digits),
        )
        new_tips = {**frontier, **_tips(entries, new)}
        covered = [
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

        folded = store.fold(covered, new_tips, current, _Texts(sync), start)
        state["lamport"] = max(int(state.get("lamport") or 0), store.max_lamport())
    finally:
        store.close()
    sent = state.get("sent") if isinstance(state.get("sent"), dict) else {}
    assert isinstance(sent, dict)
    ours = [sent[e.commit] for e in entries if e.commit in sent]
    for e in entries:
        sent.pop(e.commit, None)
    state["sent"] = sent
    sync.save_state(state)
    sync._followups = folded
    if not logs and checkpoint is None and known.fetched is None:
        return None
    origin = base_tree or empty_tree_id(digits)
    tree = edited_tree(sync.git, origin, folded.blobs) if folded.blobs else origin
    parents = [known.fetched] if linked and known.fetched is not None else []
    parents = list(dict.fromkeys([*parents, *ours]))
    links = [a for p in parents for a in ("-p", p)]
    commit = sync.git.text(
        "commit-tree", "--no-gpg-sign", tree, *links, "-m", f"the remote's {len(logs)} logs"
    )
    sync._made[commit] = tuple(parents)
    sync._set_refs({sync.fetched: (commit, known.fetched)})
    _folded_into(sync, tree)
    mine = logs.get(sync.config.machine)
    if mine is not None:
        sync._set_refs({_mine(sync): (mine, None)})
    sync._moved(fetched=commit, fetched_tree=tree)
    return commit


def _restore(sync: RouteSync, limit: float, refs: dict[str, str]) -> None:
    """Write refs the remote lost back as this machine last saw them, create-only (a
    refusal means another machine did it first)."""
    sync._network(
        "push",
        "--no-verify",
        "--porcelain",
        "--quiet",
        *(f"--force-with-lease={ref}:" for ref in refs),
        sync.remote,
        *(f"{commit}:{ref}" for ref, commit in refs.items()),
        timeout=limit,
    )


def _folded_into(sync: RouteSync, tree: str) -> None:
    """``fetched`` holds the store's fold now (its tree, which a push with nothing to
    send leaves as it is)."""
    state = sync.state()
    state["fold_tree"] = tree
    sync.save_state(state)


def _present(sync: RouteSync, commits: list[str]) -> list[str]:
    """Those of ``commits`` this machine still has: the tip of a log let go long ago may
    have been collected by ``git gc`` since (its entries are then read again, and fold to
    what they made)."""
    if not commits:
        return []
    found = sync.git.run(
        "cat-file", "--batch-check=%(objectname)", input="".join(f"{c}\n" for c in commits).encode()
    ).out.decode()
    return [line for line in found.splitlines() if " missing" not in line]


def _tips(entries: list[LogEntry], new: dict[str, str]) -> dict[str, Tip]:
    by_commit = {e.commit: e for e in entries}
    out = {}
    for machine, commit in new.items():
        entry = by_commit.get(commit)
        if entry is not None:
            out[machine] = Tip(commit, entry.seq, entry.lamport)
    return out


class _Texts:
    """The fold's view of the route's objects: texts read and written by git."""

    def __init__(self, sync: RouteSync) -> None:
        self.sync = sync

    def texts(self, blobs: Sequence[str]) -> dict[str, str]:
        return self.sync.blobs(list(blobs))

    def write(self, text: str) -> str:
        written = self.sync.git.run("hash-object", "-w", "--stdin", input=text.encode("utf-8"))
        return written.out.decode().strip()


def push(
    sync: RouteSync,
    commit: str,
    limit: float,
    title: str,
    claims: Sequence[str] = (),
) -> str | None:
    """Send what ``commit`` changed since ``fetched`` as this machine's next entry (with a
    create-only claim ref per id of ``claims``): None if the remote took it, else why
    not (``CLAIMED``, ``LOG_MOVED``, or what the remote said)."""
    known = sync._refs()
    if known.fetched is not None and not sync.is_ancestor(known.fetched, commit):
        return FETCH_FIRST  # an entry must be made on what was fetched, merged
    changes = sync.changes(known.fetched, commit)
    if not changes:
        sync._set_refs({sync.fetched: (commit, known.fetched)})
        sync._moved(fetched=commit, fetched_tree=None)
        return None
    prefix, machine = team_prefix(sync.route), sync.config.machine
    state = sync.state()
    store = store_of(sync)
    try:
        tips = store.tips()
        listing = mirror_refs(sync, _mirror(sync))
        tip = listing.get(f"_log/{machine}")
        own = tip or sync.git.run("rev-parse", "-q", "--verify", _mine(sync), check=False)
        own_tip = own if isinstance(own, str) else (own.out.decode().strip() or None)
        mine = tips.get(machine)
        seq = max(int(state.get("seq") or 0), mine.seq if mine else 0) + 1
        lamport = max(int(state.get("lamport") or 0), store.max_lamport()) + 1
        marker = (
            _marker_specs(sync, len(commit), listing, state)
            if sync.route.branch is None
            else ([], [])
        )
        base = {p: old for p, (old, _new) in changes.items() if old is not None}
        removed = [p for p, (_old, new) in changes.items() if new is None]
        blobs = {p: new for p, (_old, new) in changes.items() if new is not None}
        message = team_entry_message(
            title,
            machine=machine,
            seq=seq,
            lamport=lamport,
            base=base,
            removed=removed,
            claims=claims,
        )
        tree = edited_tree(sync.git, empty_tree_id(len(commit)), blobs)
        if sync.route.branch is not None:  # on the branch's tip: it must fast-forward
            tip = listing.get(BRANCH)
            marker = ([], [])
            entry = sync._sent(tree, ["-p", tip or root(sync, len(commit))], message)
            specs = [f"{entry}:{sync.route.branch}"]
            options = [f"--force-with-lease={sync.route.branch}:{tip or ''}"]
            claims = ()  # the branch's compare-and-swap is the claim
        else:
            entry = sync._sent(tree, ["-p", own_tip] if own_tip else [], message)
            specs = [f"{entry}:{prefix}/_log/{machine}", *marker[0]]
            options = [f"--force-with-lease={prefix}/_log/{machine}:{tip or ''}", *marker[1]]
        for id in claims:
            specs.append(f"{entry}:{prefix}/_claim/{id}")
            options.append(f"--force-with-lease={prefix}/_claim/{id}:")
        for id, oid in _reopened(sync, changes, claims).items():
            specs.append(f":{prefix}/_claim/{id}")
            options.append(f"--force-with-lease={prefix}/_claim/{id}:{oid}")
        state = sync.state()  # as ``_sent`` left it (a key that signs again, said)
        state["seq"] = seq
        state["sent"] = {**(state.get("sent") or {}), entry: commit}
        records = state.get("inflight")
        for id in claims:  # what the claim ref holds if it lands (``inflight.py``)
            record = records.get(id) if isinstance(records, dict) else None
            if isinstance(record, dict):
                record.update(entry=entry, read=blobs.get(str(record.get("path"))))
        sync.save_state(state)
        refused = _send(sync, limit, specs, options, entry)
        if refused == ONE_LOG:
            _forget_sent(sync, entry)
            sync._follow_layout(1)
            return FETCH_FIRST  # fetched in layout 1, then sent there
        if refused is not None:
            _forget_sent(sync, entry)
            return refused
        # Its Lamport is past every entry applied here, so the fold takes each of its
        # notes as it is: ``fetched`` is ``commit`` now.
        store.fold(
            LogEntry(entry, machine, seq, lamport, blobs, removed, base, list(claims)).changes(),
            {BRANCH if sync.route.branch else machine: Tip(entry, seq, lamport)},
            lambda paths: {p: changes[p][0] if p in changes else None for p in paths},
            _Texts(sync),
        )
    finally:
        store.close()
    moves: dict[str, tuple[str | None, str | None]] = {
        sync.fetched: (commit, known.fetched),
        f"{_mirror(sync)}/_log/{machine}": (entry, None),
        _mine(sync): (entry, None),
    }
    if sync.route.branch is not None:
        moves = {sync.fetched: (commit, known.fetched), f"{_mirror(sync)}/{BRANCH}": (entry, None)}
    if marker[0]:
        moves[f"{_mirror(sync)}/_layout"] = (marker[0][0].split(":", 1)[0], None)
    sync._set_refs(moves)
    tree = known.local_tree if known.local == commit and known.local_tree else sync._tree(commit)
    _forget_sent(sync, entry, lamport=lamport, fold_tree=tree)
    sync._moved(fetched=commit, fetched_tree=tree)
    return None


def _marker_specs(
    sync: RouteSync, digits: int, listing: dict[str, str], state: dict[str, object]
) -> tuple[list[str], list[str]]:
    """What a push adds when the remote has no marker: on a new route, the marker and the
    fence on layout 1's log name, create-only, with its first entry (of two machines
    making the route at once, one lands; the other fetches and goes on); on a route that
    lost its marker, the marker as it was."""
    prefix = team_prefix(sync.route)
    if "_layout" in listing:
        return [], []
    lease = f"--force-with-lease={prefix}/_layout:"
    seen = state.get("marker")
    if isinstance(seen, str):
        return [f"{seen}:{prefix}/_layout"], [lease]
    tree = edited_tree(sync.git, empty_tree_id(digits), {})
    marker = sync._sent(tree, [], marker_message(sync.route, None))
    if any(name.startswith("_log/") for name in listing) or "_checkpoint" in listing:
        return [f"{marker}:{prefix}/_layout"], [lease]
    fence = sync._sent(tree, [], fence_message(marker))
    return (
        [f"{marker}:{prefix}/_layout", f"{fence}:{sync.route.log_ref}"],
        [lease, f"--force-with-lease={sync.route.log_ref}:"],
    )


def _reopened(
    sync: RouteSync, changes: dict[str, tuple[str | None, str | None]], claims: Sequence[str]
) -> dict[str, str]:
    """Handoffs this entry makes pending again after a read (a reopen, a claim put back):
    their claim refs go with the same push, so the next reader can take them. (A
    claim's own note goes the other way: it is not looked at.)"""
    taken = {f"{c}.md" for c in claims}
    pairs = {
        p: (old, new)
        for p, (old, new) in changes.items()
        if old is not None
        and new is not None
        and "/handoffs/" in p
        and p.rsplit("/", 1)[-1] not in taken
    }
    if not pairs:
        return {}
    texts = sync.blobs(sorted({b for pair in pairs.values() for b in pair}))
    ids = [
        p.rsplit("/", 1)[-1].removesuffix(".md")
        for p, (old, new) in pairs.items()
        if _status(texts.get(old, "")) == "read" and _status(texts.get(new, "")) == "pending"
    ]
    if not ids:
        return {}
    return {i: c for i, c in claims_on_remote(sync, ids).items()}


def _status(text: str) -> str | None:
    for line in text.split("\n---", 1)[0].splitlines():
        if line.startswith("status:"):
            return line.partition(":")[2].strip().strip("'\"")
    return None


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


def _send(
    sync: RouteSync, limit: float, specs: list[str], options: list[str], entry: str
) -> str | None:
    result = sync._network(
        "push",
        "--no-verify",
        "--porcelain",
        "--quiet",
        *(["--atomic"] if len(specs) > 1 else []),
        *options,
        sync.remote,
        *specs,
        timeout=limit,
    )
    lines = result.out.decode("utf-8", "replace").splitlines()
    refused = [line for line in lines if line[:1] == "!"]
    if result.status == 0 and not refused:
        sync._remember(pushed=True, unsent=entry)
        return None
    if not refused:
        raise sync._failed(result)
    prefix = team_prefix(sync.route)
    if sync.route.branch is not None and any(
        word in r for r in refused for word in ("stale info", "fetch first", "non-fast-forward")
    ):
        return FETCH_FIRST  # another machine's entry went first: fetched, then again
    claim_lines = [r for r in refused if f"{prefix}/_claim/" in r.split("\t")[1]]
    if any("stale info" in r for r in claim_lines) or (
        f"cannot lock ref '{prefix}/_claim/" in result.err and "already exists" in result.err
    ):
        return CLAIMED
    log = f"{prefix}/_log/{sync.config.machine}"
    if any(log in r and "stale info" in r for r in refused):
        return LOG_MOVED
    fence = f":{sync.route.log_ref}"
    if any(r.split("\t")[1].endswith(fence) and "stale info" in r for r in refused if "\t" in r):
        return ONE_LOG  # the fence's lease failed: a one-log release made the route first
    cause = [r for r in refused if "atomic" not in r] or refused
    return cause[0].rsplit("\t", 1)[-1]


def _forget_sent(
    sync: RouteSync, entry: str, lamport: int | None = None, fold_tree: str | None = None
) -> None:
    """``entry`` is answered (taken or refused): no longer written down as sent; taken,
    its Lamport applied here and ``fetched`` holding the store's fold (``fold_tree``)."""
    state = sync.state()
    sent = state.get("sent")
    if isinstance(sent, dict):
        sent.pop(entry, None)
    if lamport is not None:
        state["lamport"] = max(int(state.get("lamport") or 0), lamport)
    if fold_tree is not None:
        state["fold_tree"] = fold_tree
    sync.save_state(state)
