"""A machine's log in layout 2 (``layout.py``): one commit per push, naming what it was
made on.

An entry's tree holds the notes its push set, whole, at their paths (as a
layout-1 entry does); its message ends with one JSON line:

- ``machine`` and ``seq`` (1, 2, … per machine): the entry's name, which no rewrite
  of the commit changes;
- ``lamport``: one more than the greatest ``lamport`` its writer had applied, so an
  entry made after another one was read sorts after it on every machine;
- ``base``: for every note it changed or removed, the blob its writer had (no key:
  the writer had none). With it a reader merges an old change with what happened
  since, as a rebase would, instead of taking it whole;
- ``removed``: the notes it removed; ``claims``: the handoffs whose claim ref the
  same push created;
- ``vouch``: notes its writer vouches for as they are (path → blob), changing
  nothing: a person let those words steer the team (``team_vouch.py``). Its tree is
  empty, so a release that does not know the key folds nothing from it.

Every reader folds the entries of all logs per note in (lamport, machine, seq)
order (``fold.py``): the same entries give the same notes everywhere.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import loose
from .fold import Change
from .layout import LAYOUT, message_facts

if TYPE_CHECKING:
    from .gitcmd import Git

__all__ = ["MAX_CHAIN", "OID", "LogEntry", "read_chains", "read_entries", "team_entry_message"]

_REGULAR = ("100644", "100755")
MAX_CHAIN = 64
"""Entries of one log ``read_chains`` reads in this process; more, and git reads them."""
OID = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?\Z")
"""What an object id looks like (SHA-1 or SHA-256): a name an entry gives that is not one
is never asked of git."""


@dataclass(slots=True)
class LogEntry:
    """One push of one machine, as its log holds it."""

    commit: str
    machine: str
    seq: int
    lamport: int
    changed: dict[str, str] = field(default_factory=dict)
    """Notes set: path → blob."""
    removed: list[str] = field(default_factory=list)
    base: dict[str, str] = field(default_factory=dict)
    """path → the blob the writer had, for each note changed or removed."""
    claims: list[str] = field(default_factory=list)
    parent: str | None = None
    vouch: dict[str, str] = field(default_factory=dict)
    """Notes its writer vouches for: path → the blob they read."""

    @property
    def key(self) -> tuple[int, str, int]:
        return (self.lamport, self.machine, self.seq)

    def changes(self) -> list[Change]:
        """What the entry did to each note, for the fold."""
        out = [
            Change(self.lamport, self.machine, self.seq, self.commit, p, self.base.get(p), b)
            for p, b in self.changed.items()
        ]
        out.extend(
            Change(self.lamport, self.machine, self.seq, self.commit, p, self.base.get(p), None)
            for p in self.removed
            if p not in self.changed
        )
        return out


def team_entry_message(
    title: str,
    *,
    machine: str,
    seq: int,
    lamport: int,
    base: Mapping[str, str],
    removed: Sequence[str],
    claims: Sequence[str] = (),
    vouch: Mapping[str, str] | None = None,
) -> str:
    """An entry's message: its title, then its facts as one sorted JSON line."""
    facts: dict[str, Any] = {
        "base": dict(sorted(base.items())),
        "lamport": lamport,
        "layout": LAYOUT,
        "machine": machine,
        "removed": sorted(removed),
        "seq": seq,
    }
    if claims:
        facts["claims"] = sorted(claims)
    if vouch:
        facts["vouch"] = dict(sorted(vouch.items()))
    return f"{title}\n\n{json.dumps(facts, sort_keys=True)}\n"


def read_entries(
    git: Git, tips: Sequence[str], known: Sequence[str], empty_tree: str
) -> list[LogEntry]:
    """The entries reachable from ``tips`` and from none of ``known`` (the tips already
    applied), of every log at once; each log's oldest first. Two git processes for any
    number: the messages, then every entry's tree against the empty tree (its notes,
    whole: a diff against the entry before would miss a note set again to what that
    entry set, after another machine changed it between)."""
    if not tips:
        return []
    raw = git.run(
        "log",
        "--reverse",
        "--topo-order",
        "--format=%x01%H %T %P%x00%B",
        *tips,
        "--not",
        *known,
        "--",
    ).out.decode("utf-8", "surrogateescape")
    out: list[LogEntry] = []
    trees: dict[str, list[LogEntry]] = {}
    for chunk in raw.split("\x01")[1:]:
        head, _, message = chunk.partition("\0")
        commit, tree, *parents = head.split(" ")
        entry = _entry(commit, parents, message)
        if entry is None:
            continue  # not an entry (a fence, a marker): nothing to fold
        out.append(entry)
        if tree != empty_tree:
            trees.setdefault(tree, []).append(entry)
    if trees:
        pairs = "".join(f"{empty_tree} {t}\n" for t in trees)
        listing = git.run(
            "diff-tree", "--stdin", "-r", "-z", "--no-renames", "--raw", input=pairs.encode()
        ).out.decode("utf-8", "surrogateescape")
        for tree, notes in _tree_notes(listing).items():
            for entry in trees.get(tree, ()):
                entry.changed = dict(notes)
    return out


def read_chains(
    git: Git, chains: Mapping[str, tuple[str, str, int]], empty_tree: str
) -> list[LogEntry] | None:
    """``read_entries`` in this process, for logs that only grew: ``chains`` is machine →
    (its log's tip now, its entry last folded here, that entry's seq). Each log is read
    back from its tip to that entry, from loose objects (``loose.py``); None, and git
    reads them all, unless every commit on the way is loose, has one parent, and is
    that machine's next entry in turn (seq after seq): entries this machine has not
    folded yet, which is what git would list. At most ``MAX_CHAIN`` entries a log."""
    out: list[LogEntry] = []
    for machine, (tip, since, seq) in chains.items():
        chain: list[LogEntry] = []
        commit = tip
        while commit != since:
            if len(chain) >= MAX_CHAIN:
                return None
            read = loose.commit(git, commit)
            if read is None or len(read.parents) != 1:
                return None  # not loose, a merge, a root: git reads it
            tree = read.tree
            entry = _entry(commit, read.parents, read.message)
            if entry is None or entry.machine != machine:
                return None
            if tree != empty_tree:
                listed = loose.diff(git, empty_tree, tree)
                if listed is None:
                    return None
                entry.changed = {p: new for p, _om, mode, _o, new in listed if mode in _REGULAR}
            chain.append(entry)
            commit = read.parents[0]
        chain.reverse()
        if [e.seq for e in chain] != list(range(seq + 1, seq + 1 + len(chain))):
            return None
        out.extend(chain)
    return out


def _entry(commit: str, parents: Sequence[str], message: str) -> LogEntry | None:
    """The entry a commit's message names; None for a commit that is none."""
    facts = message_facts(message)
    machine, seq, lamport = facts.get("machine"), facts.get("seq"), facts.get("lamport")
    if not isinstance(machine, str) or not isinstance(seq, int):
        return None
    entry = LogEntry(
        commit,
        machine,
        seq,
        lamport if isinstance(lamport, int) else 0,
        parent=parents[0] if parents and parents[0] else None,
    )
    removed = facts.get("removed")
    if isinstance(removed, list):
        entry.removed = [str(p) for p in removed]
    base = facts.get("base")
    if isinstance(base, dict):  # what is not an object id is no base (never asked of git)
        entry.base = {str(p): b for p, b in base.items() if isinstance(b, str) and OID.match(b)}
    claims = facts.get("claims")
    if isinstance(claims, list):
        entry.claims = [str(c) for c in claims]
    vouch = facts.get("vouch")
    if isinstance(vouch, dict):
        entry.vouch = {str(p): b for p, b in vouch.items() if isinstance(b, str) and OID.match(b)}
    return entry


def _tree_notes(listing: str) -> dict[str, dict[str, str]]:
    """``diff-tree --stdin -z`` of (empty tree, tree) pairs: tree → path → blob. Each
    pair's header ends with a newline, not a NUL, so it leads the next token."""
    out: dict[str, dict[str, str]] = {}
    current: dict[str, str] = {}
    parts = listing.split("\0")
    i = 0
    while i < len(parts):
        token = parts[i]
        if "\n" in token:
            *headers, token = token.split("\n")
            for header in headers:
                current = out.setdefault(header.split(" ")[-1], {})
        if token.startswith(":") and i + 1 < len(parts):
            fields = token[1:].split(" ")
            if len(fields) >= 5 and fields[1] in _REGULAR:
                current[parts[i + 1]] = fields[3]
            i += 2
            continue
        i += 1
    return out
