"""A checkpoint carries what its writer knew of who wrote each note.

A machine that joins a team's remote folds from the checkpoint and reads only the
entries past it, so on its own it would know no writer of any note the checkpoint
holds (``before_signers``), and under ``require`` everything the team wrote before
it joined would be held back. So a machine that checks signatures writes, beside
the notes of each checkpoint it makes, ``.agent-mem-vault/verdicts.json``: for each
note whose record is of the very blob the checkpoint holds, the entries that changed
its text, its last change of any kind, the vouches for it and whether a listed key
read it, each entry with its verdict and when it was first seen. A dot path: no
vault holds it, and the fold takes nothing from it.

A machine adopts it only where the checkpoint commit verifies against that
machine's own list, names the frontier the file does (a copy carried into a later
tree is stale) and moves on from the checkpoint it judged before. Each entry keeps
its verdict only while that list still takes its key for its author, not revoked
(``judging.as_listed``): the checkpoint's signer vouches for the signature itself.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .judging import as_listed
from .layout import checkpoint_facts
from .trees import edited_tree
from .verdicts import VerdictStore, store_path
from .verify import AllowedSigners, verify_commit

if TYPE_CHECKING:
    from .engine import RouteSync

__all__ = ["VERDICTS", "adopt_verdicts", "notes_of", "with_verdicts"]

VERDICTS = ".agent-mem-vault/verdicts.json"
"""Where in a checkpoint's tree its writer's verdicts are."""

_log = logging.getLogger(__name__)


def with_verdicts(sync: RouteSync, tree: str, frontier: Mapping[str, tuple[str, int]]) -> str:
    """``tree`` with ``VERDICTS`` holding this machine's record of each of its notes,
    where this machine checks and judged ``tree`` last; otherwise without one (a file
    carried from an earlier checkpoint goes)."""
    from .signers import trust_for

    where = store_path(sync.root, sync.route)
    try:
        if where.exists() and trust_for(sync.root, sync.route).checks:
            with VerdictStore(where, read_only=True) as store:
                judged = store.meta("tree") == tree
                data = _export(store, notes_of(sync, tree)) if judged else None
            if data is not None:
                data["frontier"] = {m: [c, s] for m, (c, s) in sorted(frontier.items())}
                text = json.dumps(data, separators=(",", ":"), sort_keys=True)
                made = sync.git.run("hash-object", "-w", "--stdin", input=text.encode())
                return edited_tree(sync.git, tree, {VERDICTS: made.out.decode().strip()})
    except (sqlite3.Error, ValueError, OSError) as error:  # a checkpoint without, then
        _log.warning("%s: the checkpoint carries no verdicts: %r", sync.route.label, error)
    return edited_tree(sync.git, tree, {VERDICTS: None})


def adopt_verdicts(
    sync: RouteSync,
    signers: AllowedSigners,
    checkpoint: str,
    store: VerdictStore,
    previous: str | None = None,
) -> int:
    """Take the record ``checkpoint`` carries into ``store``, where its commit verifies
    against ``signers``, the record is its own and it moves on from ``previous`` (the
    checkpoint the store last judged from, if any: one an outsider set back is not
    taken); what the store holds already stays. The notes adopted (0: none; the
    caller's fold names the rest ``before_signers``)."""
    try:
        return _adopt(sync, signers, checkpoint, store, previous)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, sqlite3.Error) as error:
        _log.warning(
            "%s: checkpoint %s: verdicts not taken: %r", sync.route.label, checkpoint, error
        )
        return 0


def _adopt(
    sync: RouteSync,
    signers: AllowedSigners,
    checkpoint: str,
    store: VerdictStore,
    previous: str | None,
) -> int:
    raws = sync.objects([checkpoint, *([previous] if previous else [])], "commit")
    raw = raws.get(checkpoint)
    if raw is None or not verify_commit(raw, signers, time.time(), digits=len(checkpoint)).verified:
        return 0
    frontier = _frontier(raw)
    if previous is not None:
        before = raws.get(previous)
        if before is None or any(
            m not in frontier or not sync.is_ancestor(c, frontier[m][0])
            for m, (c, _seq) in _frontier(before).items()
        ):
            return 0  # not past the one judged before: a remote set back
    found = sync.objects([f"{checkpoint}:{VERDICTS}"]).get(f"{checkpoint}:{VERDICTS}")
    if found is None:
        return 0  # written by a machine that checks nothing
    data = json.loads(found)
    if {m: (str(c), int(s)) for m, (c, s) in data["frontier"].items()} != frontier:
        return 0  # carried from an earlier checkpoint: not this one's
    blobs = notes_of(sync, sync._tree(checkpoint))
    kept = {p: n for p, n in dict(data["notes"]).items() if p in blobs}
    rows = _rows(list(data["entries"]), kept, blobs)
    # Each entry's verdict counts only while this machine's list takes its key for its
    # author (a listed signer's word for the signature itself: 15,000 entries checked
    # again would cost seconds, OpenPGP ones minutes).
    rows["entries"] = [as_listed(r, signers) for r in rows["entries"]]
    fresh = store.meta("signers") in (None, signers.digest)
    store.add_rows(rows)
    if fresh:  # judged against this list: not again by ``judge`` (a changed list is)
        store.set_meta("signers", signers.digest)
    return len(kept)


def _frontier(raw: bytes) -> dict[str, tuple[str, int]]:
    return checkpoint_facts(raw.partition(b"\n\n")[2].decode("utf-8", "replace"))[0]


def _export(store: VerdictStore, blobs: Mapping[str, str]) -> dict[str, Any]:
    """What the store records of each note of ``blobs`` (path → the blob the checkpoint
    holds) whose record is of that blob: ``entries``, each ``[commit, machine, seq,
    lamport, author, verified, why, key, principal, first seen]``, and ``notes``, path →
    ``[text digest, [entry # of each text change], entry # of the last change or null,
    [[entry #, text digest, blob] of each vouch], whether a listed key read it]``."""
    notes: dict[str, list[Any]] = {
        p: [t, [], None, [], False]
        for p, t, b in store.table("notes")
        if t is not None and b is not None and blobs.get(p) == b
    }
    judged = {row[0]: row for row in store.table("entries")}
    entries: list[list[Any]] = []
    numbers: dict[str, int] = {}

    def number(commit: str, lamport: int) -> int | None:
        if commit not in numbers:
            row = judged.get(commit)
            if row is None:
                return None
            numbers[commit] = len(entries)
            entries.append([commit, row[1], row[2], lamport, *row[3:]])
        return numbers[commit]

    for path, lamport, _machine, _seq, commit in sorted(store.table("changes")):
        if path in notes and (i := number(commit, lamport)) is not None:
            notes[path][1].append(i)
    for path, lamport, _machine, _seq, commit in store.table("touches"):
        if path in notes:
            notes[path][2] = number(commit, lamport)
    for path, said, blob, commit, lamport, _machine, _seq in store.table("vouches"):
        if path in notes and (i := number(commit, lamport)) is not None:
            notes[path][3].append([i, said, blob])
    for (path,) in store.table("taken"):
        if path in notes:
            notes[path][4] = True
    return {"version": 1, "entries": entries, "notes": notes}


def notes_of(sync: RouteSync, tree: str) -> dict[str, str]:
    """Path → blob of each note of ``tree`` that travels by the route."""
    listing = sync.git.run("ls-tree", "-r", "-z", tree).out.decode("utf-8", "surrogateescape")
    out: dict[str, str] = {}
    for item in listing.split("\0"):
        meta, _, path = item.partition("\t")
        fields = meta.split(" ")
        if path and len(fields) == 3 and sync.config.covers(sync.route, path):
            out[path] = fields[2]
    return out


def _rows(
    entries: list[list[Any]], notes: Mapping[str, list[Any]], blobs: Mapping[str, str]
) -> dict[str, list[tuple[Any, ...]]]:
    """The store's rows for ``notes`` (see ``VerdictStore.export``)."""
    used: set[int] = set()
    out: dict[str, list[tuple[Any, ...]]] = {
        k: [] for k in ("entries", "changes", "touches", "vouches", "taken", "notes")
    }

    def name(i: int) -> tuple[int, str, int, str]:
        commit, machine, seq, lamport = entries[i][:4]
        used.add(i)
        return _int(lamport), str(machine), _int(seq), str(commit)

    for path, (text, changes, touch, vouches, taken) in notes.items():
        out["notes"].append((path, str(text), blobs[path]))
        out["changes"].extend((path, *name(int(i))) for i in changes)
        if touch is not None:
            out["touches"].append((path, *name(int(touch))))
        for i, said, blob in vouches:
            lamport, machine, seq, commit = name(int(i))
            out["vouches"].append((path, str(said), str(blob), commit, lamport, machine, seq))
        if taken:
            out["taken"].append((path,))
    for i in sorted(used):
        commit, machine, seq, _lamport, author, verified, why, key, principal, first = entries[i]
        out["entries"].append(
            (str(commit), str(machine), _int(seq), str(author), int(bool(verified)), _str(why),
             _str(key), _str(principal), float(first))
        )  # fmt: skip
    return out


def _int(value: Any) -> int:
    """An integer SQLite can keep (ValueError otherwise: the record is not taken)."""
    number = int(value)
    if not -(2**63) <= number < 2**63:
        raise ValueError(f"{number} is out of range")
    return number


def _str(value: Any) -> str | None:
    return None if value is None else str(value)
