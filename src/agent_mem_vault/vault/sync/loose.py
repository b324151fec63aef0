"""Git's answers to a sync's small questions, worked out here from loose objects.

A sync of one write asks git the same few things many times: what two commits'
notes differ in (``diff-tree``), the text of a few blobs (``cat-file``), which
blob a path names (``ls-tree``), whether one commit comes before another
(``merge-base --is-ancestor``). Each is a process of its own, 2–6 ms of which
nearly all is git starting, and a sync asked about thirty of them: on a machine
that many agents share, that was most of what a write cost.

The objects those questions are about are nearly always loose (``objects.py``):
made here a moment ago, or fetched a few at a time (git unpacks a small fetch).
So each answer is worked out here when every object it needs is loose and small,
and is None otherwise; the caller then asks git, as before. "Small" is a tree of
at most ``MAX_TREE`` bytes (a folder of about 1,500 notes): Python walks a tree an
entry at a time, and past that git's C is the quicker of the two. An ancestry walk
reads at most ``MAX_WALK`` commits.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

from .trees import empty_tree_id

if TYPE_CHECKING:
    from .gitcmd import Git

__all__ = [
    "MAX_TREE",
    "MAX_WALK",
    "Change",
    "Commit",
    "ancestry",
    "commit",
    "diff",
    "entries",
    "merge_base",
    "objects",
    "present",
    "tree_of",
]

MAX_TREE = 64 * 1024
"""Bytes of a tree read here; a bigger one is left to git."""
MAX_WALK = 16
"""Commits an ancestry walk reads before it leaves the question to git."""

Change = tuple[str, str, str, str, str]
"""One line of ``git diff-tree -r``: (path, old mode, new mode, old id, new id); a
side that has no file there has mode ``000000`` and an id of zeros."""

_TREE = b"40000"
_MODES = frozenset({_TREE, b"100644", b"100755", b"120000", b"160000"})
"""The modes git writes; a tree with any other was written by an old git, and git reads it."""


class _NotHere(Exception):
    """An object the answer needs is not loose here, or too big: git answers."""


def tree_of(git: Git, name: str) -> str | None:
    """The tree ``name`` (a commit or a tree) is or holds; None when git must say."""
    if name == empty_tree_id(len(name)):
        return name
    found = _read(git, name)
    if found is not None and found[0] == b"tree":
        return name
    read = commit(git, name, found)
    return None if read is None else read.tree


class Commit(NamedTuple):
    tree: str
    parents: list[str]
    message: str


def commit(git: Git, oid: str, found: tuple[bytes, bytes] | None = None) -> Commit | None:
    """A loose commit's tree, parents and message (``found``: the object, read already);
    None when git must read it (not loose, not a commit, in another encoding than
    UTF-8, or not well formed)."""
    found = _read(git, oid) if found is None else found
    if found is None or found[0] != b"commit":
        return None
    head, _, body = found[1].partition(b"\n\n")
    lines = [line for line in head.split(b"\n") if line and line[:1] != b" "]  # no gpgsig body
    fields = [line.partition(b" ")[::2] for line in lines]
    trees = [v.decode("ascii", "replace") for k, v in fields if k == b"tree"]
    if len(trees) != 1 or any(k == b"encoding" for k, _v in fields):
        return None
    parents = [v.decode("ascii", "replace") for k, v in fields if k == b"parent"]
    return Commit(trees[0], parents, body.decode("utf-8", "surrogateescape"))


def diff(git: Git, old: str, new: str) -> list[Change] | None:
    """``git diff-tree -r --no-renames old new`` (commits or trees): every file that
    differs; None when git must say."""
    a, b = tree_of(git, old), tree_of(git, new)
    if a is None or b is None:
        return None
    zeros = "0" * len(a)
    out: list[Change] = []
    try:
        _diff(git, a, b, "", zeros, out)
    except _NotHere:
        return None
    return out


def entries(git: Git, tree: str, paths: Sequence[str]) -> dict[str, tuple[str, str]] | None:
    """``git ls-tree tree -- paths`` for paths of files: path → (mode, id) where ``tree``
    has something that is no folder there; None when git must say."""
    root = tree_of(git, tree)
    if root is None:
        return None
    out: dict[str, tuple[str, str]] = {}
    bodies: dict[str, dict[bytes, tuple[bytes, bytes]] | None] = {}
    try:
        for path in paths:
            folder, _, name = path.rpartition("/")
            if folder not in bodies:
                bodies[folder] = _folder(git, root, folder, bodies)
            listing = bodies[folder]
            found = None if listing is None else listing.get(_name(name))
            if found is not None and found[0] != _TREE:
                out[path] = (found[0].decode(), found[1].hex())
    except _NotHere:
        return None
    return out


def objects(git: Git, names: Sequence[str], kind: bytes) -> tuple[dict[str, bytes], list[str]]:
    """The objects of ``kind`` that ``names`` name (an id, or ``<tree>:<path>``) and that
    are loose here, and the names left for git (a name of no such object is in
    neither)."""
    found: dict[str, bytes] = {}
    left: list[str] = []
    for name in names:
        oid: str | None = name
        if ":" in name:
            tree, _, path = name.partition(":")
            listed = entries(git, tree, [path]) if _hex(tree) else None
            if listed is not None and path not in listed:
                continue  # the tree has no file there: nothing to say, as git
            oid = listed[path][1] if listed is not None else None
        item = _read(git, oid) if oid is not None else None
        if item is None:
            left.append(name)
        elif item[0] == kind:
            found[name] = item[1]
    return found, left


def present(git: Git, oids: Sequence[str]) -> tuple[list[str], list[str]]:
    """Those of ``oids`` that are loose here, and the rest, for git to look for."""
    if not git.objects.plain:
        return [], list(oids)
    here: list[str] = []
    asked: list[str] = []
    for oid in oids:
        loose_file = git.objects.folder / oid[:2] / oid[2:]
        (here if _hex(oid) and loose_file.is_file() else asked).append(oid)
    return here, asked


def ancestry(git: Git, older: str, newer: str, made: Mapping[str, Sequence[str]]) -> bool | None:
    """Whether ``older`` is ``newer`` or one of its ancestors; None when git must say.
    ``made``: parents already known (commits this process made). A walk proves "no"
    only by reading the whole history, unless it goes the other way: a commit that
    comes after ``newer`` is not before it. So both walks go a step at a time, and
    the first to find its commit answers."""
    if older == newer:
        return True
    back, ahead = _Walk(newer, older), _Walk(older, newer)
    for _ in range(MAX_WALK):
        found = back.step(git, made)
        if found is not None:
            return found
        if ahead.step(git, made):
            return False
        if back.stuck and (ahead.stuck or not ahead.queue):
            return None
    return None


def merge_base(git: Git, ours: str, theirs: str, made: Mapping[str, Sequence[str]]) -> str | None:
    """``git merge-base ours theirs`` where a short walk settles it; None when git must
    say. The usual case: ``theirs`` (``fetched``) merges commits that ``ours``
    (``local``) descends from, and one of them comes after the others."""
    before, after = ancestry(git, theirs, ours, made), ancestry(git, ours, theirs, made)
    if before is None or after is None:
        return None  # which comes first is git's to say
    if before:
        return theirs
    if after:
        return ours
    parents = made.get(theirs)
    if parents is None:
        parents = _parents(git, theirs)
    if not parents or not all(ancestry(git, p, ours, made) for p in parents):
        return None
    answers = {(a, b): ancestry(git, a, b, made) for a in parents for b in parents if a != b}
    if None in answers.values():
        return None
    best = {a for a in parents if not any(answers.get((a, b)) for b in parents if b != a)}
    return best.pop() if len(best) == 1 else None


class _Walk:
    """A walk from ``start`` to its ancestors, looking for ``wanted``."""

    def __init__(self, start: str, wanted: str) -> None:
        self.wanted = wanted
        self.seen = {start}
        self.queue = [start]
        self.stuck = False

    def step(self, git: Git, made: Mapping[str, Sequence[str]]) -> bool | None:
        """One commit further: True once ``wanted`` is found, False once every ancestor
        was read without it, None while neither (or for good, once a commit is not
        loose)."""
        if self.stuck:
            return None
        if not self.queue:
            return False
        commit = self.queue.pop(0)
        parents = made.get(commit)
        if parents is None:
            parents = _parents(git, commit)
        if parents is None:
            self.stuck = True
            return None
        for parent in parents:
            if parent == self.wanted:
                return True
            if parent not in self.seen:
                self.seen.add(parent)
                self.queue.append(parent)
        return None if self.queue else False


def _parents(git: Git, oid: str) -> list[str] | None:
    read = commit(git, oid)
    return None if read is None else read.parents


def _read(git: Git, oid: str) -> tuple[bytes, bytes] | None:
    """A loose object; None when git must read it (not loose, not plain, too big, or
    damaged: git says how). Compressed, a tree takes nearly as many bytes (its ids do
    not compress), so one past ``MAX_TREE`` on disk is not even read."""
    if not _hex(oid) or not git.objects.plain:
        return None
    try:
        return git.objects.read(oid, most=MAX_TREE)
    except (ValueError, OSError):
        return None  # damaged, unreadable: git says how


def _diff(
    git: Git, a: str | None, b: str | None, prefix: str, zeros: str, out: list[Change]
) -> None:
    left = _listing(git, a) if a is not None else {}
    right = _listing(git, b) if b is not None else {}
    for name in sorted(left.keys() | right.keys(), key=lambda n: _order(n, left, right)):
        was, now = left.get(name), right.get(name)
        if was == now:
            continue
        path = prefix + name.decode("utf-8", "surrogateescape")
        old_tree = was[1].hex() if was is not None and was[0] == _TREE else None
        new_tree = now[1].hex() if now is not None and now[0] == _TREE else None
        if was is not None and old_tree is None:
            new = now if new_tree is None else None
            out.append(_change(path, was, new, zeros))
        elif was is None and now is not None and new_tree is None:
            out.append(_change(path, None, now, zeros))
        if old_tree is not None or new_tree is not None:
            _diff(git, old_tree, new_tree, path + "/", zeros, out)
        if was is not None and old_tree is not None and now is not None and new_tree is None:
            out.append(_change(path, None, now, zeros))


def _order(
    name: bytes,
    left: Mapping[bytes, tuple[bytes, bytes]],
    right: Mapping[bytes, tuple[bytes, bytes]],
) -> bytes:
    entry = left.get(name) or right.get(name)
    return name + b"/" if entry is not None and entry[0] == _TREE else name


def _change(
    path: str, was: tuple[bytes, bytes] | None, now: tuple[bytes, bytes] | None, zeros: str
) -> Change:
    return (
        path,
        "000000" if was is None else was[0].decode().rjust(6, "0"),
        "000000" if now is None else now[0].decode().rjust(6, "0"),
        zeros if was is None else was[1].hex(),
        zeros if now is None else now[1].hex(),
    )


def _folder(
    git: Git,
    tree: str,
    folder: str,
    bodies: dict[str, dict[bytes, tuple[bytes, bytes]] | None],
) -> dict[bytes, tuple[bytes, bytes]] | None:
    """The listing of ``folder`` in ``tree``; None where there is no such folder."""
    if not folder:
        return _listing(git, tree)
    parent, _, name = folder.rpartition("/")
    if parent not in bodies:
        bodies[parent] = _folder(git, tree, parent, bodies)
    above = bodies[parent]
    entry = None if above is None else above.get(_name(name))
    if entry is None or entry[0] != _TREE:
        return None
    return _listing(git, entry[1].hex())


def _listing(git: Git, tree: str) -> dict[bytes, tuple[bytes, bytes]]:
    """A tree's entries: name → (mode, raw id)."""
    if tree == empty_tree_id(len(tree)):
        return {}
    found = _read(git, tree)
    if found is None or found[0] != b"tree" or len(found[1]) > MAX_TREE:
        raise _NotHere(tree)
    try:
        listing = dict(_parse(found[1], len(tree) // 2))
    except ValueError:
        raise _NotHere(tree) from None  # not a well-formed tree: git says how
    if any(mode not in _MODES for mode, _oid in listing.values()):
        raise _NotHere(tree)  # an old mode (040000, 100664) that git reads its own way
    return listing


def _parse(body: bytes, width: int) -> Iterator[tuple[bytes, tuple[bytes, bytes]]]:
    pos = 0
    while pos < len(body):
        space = body.index(b" ", pos)
        nul = body.index(b"\0", space)
        yield body[space + 1 : nul], (body[pos:space], body[nul + 1 : nul + 1 + width])
        pos = nul + 1 + width


def _name(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def _hex(text: str) -> bool:
    return len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text)
