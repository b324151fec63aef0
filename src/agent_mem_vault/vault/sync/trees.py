"""A commit's tree with a few notes changed, made without the route's index.

The route's index holds one entry per note, and every git command that uses it
reads all of it first: 11 ms at 100,000 notes, twice per commit (``update-index``
then ``write-tree``). A claim changes one note, so its tree is made the way git
itself would make it, along that note's path only: the trees from the root down
to the note's folder are read, the changed entries put in, and the new trees
written, deepest first. What that costs grows with the size of the note's folder,
not of the vault.

The tree ids are worked out here (a parent names its child by id before the child
is written). Where the repository is plain (``objects.py``) the trees are read and
written here, loose; elsewhere git reads them (one ``cat-file``) and writes them
(one ``hash-object``, which checks each is well formed), and each id it answers is
checked against the one worked out here: a tree git would have written differently
is never committed.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from typing import TYPE_CHECKING

from .gitcmd import GitFailed, GitResult
from .objects import object_id

if TYPE_CHECKING:
    from .gitcmd import Git

__all__ = ["edited_tree", "empty_tree_id"]

_Entry = tuple[bytes, bytes]
"""A tree entry: its mode as git writes it, and the raw id it names."""
_TREE = b"40000"
_REGULAR = b"100644"
_FILES = (_REGULAR, b"100755")


def edited_tree(
    git: Git,
    root: str,
    blobs: Mapping[str, str | None],
    before: dict[str, str | None] | None = None,
    *,
    write: bool = True,
) -> str:
    """The id of the tree ``root`` with each path of ``blobs`` (``/``-separated,
    relative) set to that blob as a regular file, or removed where it maps to None;
    its new trees written to the repository. Folders a path needs that ``root``
    lacks are made, and folders left empty go (as git never keeps an empty one).
    ``before``, when given, gets the blob each path had in ``root`` (None: no file
    there); a path that was a folder or a link is left out of it. ``write=False``: the
    id only, for a comparison; no tree is written."""
    width = len(root) // 2  # bytes of an object id: 20 (SHA-1) or 32 (SHA-256)
    changes: dict[str, dict[bytes, _Entry | None]] = {"": {}}
    for path, blob in blobs.items():
        parts = path.split("/")
        for depth in range(len(parts)):
            changes.setdefault("/".join(parts[:depth]), {})
        entry = None if blob is None else (_REGULAR, bytes.fromhex(blob))
        changes["/".join(parts[:-1])][_name(parts[-1])] = entry
    ordered = sorted(changes, key=lambda f: (f.count("/") + (f != ""), f))
    if root == empty_tree_id(len(root)):
        bodies = dict.fromkeys(ordered, b"")  # nothing to read
    else:
        bodies = _read_trees(git, root, ordered)
    if before is not None:
        for path in blobs:
            folder, _, name = path.rpartition("/")
            found = _entry_of(bodies.get(folder, b""), _name(name), width)
            if found is None:
                before[path] = None
            elif found[0] in _FILES:
                before[path] = found[1].hex()
    written: list[tuple[bytes, str]] = []
    tree_id = root
    for folder in reversed(ordered):  # the deepest first: a parent needs its child's id
        body = _edited(bodies[folder], changes[folder], width)
        tree_id = _id(body, width)
        if folder:
            parent, _, name = folder.rpartition("/")
            changes[parent][_name(name)] = (_TREE, bytes.fromhex(tree_id)) if body else None
        if body or not folder:
            written.append((body, tree_id))
    if write:
        _write(git, written)
    return tree_id


def empty_tree_id(digits: int) -> str:
    """The id of the empty tree in a repository whose ids have ``digits`` hex digits."""
    return _id(b"", digits // 2)


def _name(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def _read_trees(git: Git, root: str, folders: list[str]) -> dict[str, bytes]:
    """Each folder's tree in ``root``, as git keeps it; empty where there is none."""
    if git.objects.plain:
        loose = _read_loose(git, root, folders)
        if loose is not None:
            return loose
    asked = b"".join(_name(f"{root}:{f}\n" if f else f"{root}\n") for f in folders)
    raw = git.run("cat-file", "--batch", input=asked).out
    out: dict[str, bytes] = {}
    pos = 0
    for folder in folders:
        end = raw.index(b"\n", pos)
        header = raw[pos:end].split(b" ")
        pos = end + 1
        if len(header) != 3:  # "<name> missing": a folder the root does not have yet
            out[folder] = b""
            continue
        size = int(header[2])
        out[folder] = raw[pos : pos + size] if header[1] == b"tree" else b""
        pos += size + 1
    return out


def _read_loose(git: Git, root: str, folders: list[str]) -> dict[str, bytes] | None:
    """``_read_trees`` from loose objects; None when one of them is not loose."""
    width = len(root) // 2
    out: dict[str, bytes] = {}
    for folder in sorted(folders, key=lambda f: (f.count("/") + (f != ""), f)):
        if folder:
            parent, _, name = folder.rpartition("/")
            entry = _entry_of(out.get(parent, b""), _name(name), width)
            if entry is None or entry[0] != _TREE:
                out[folder] = b""
                continue
            oid = entry[1].hex()
        else:
            oid = root
        found = git.objects.read(oid)
        if found is None:
            return None
        out[folder] = found[1] if found[0] == b"tree" else b""
    return out


def _entry_of(body: bytes, name: bytes, width: int) -> _Entry | None:
    """The entry ``name`` of a tree, or None."""
    needle = b" " + name + b"\0"
    at = body.find(needle)
    while at >= 0:
        start = _entry_start(body, at, width)
        if start < at and body.find(b" ", start) == at:  # a mode, then this name
            end = at + len(needle)
            return body[start:at], body[end : end + width]
        at = body.find(needle, at + 1)
    return None


def _edited(body: bytes, changes: dict[bytes, _Entry | None], width: int) -> bytes:
    """``body`` (a tree) with ``changes`` (name → (mode, raw id), or None: removed) put
    in. An entry that is there with the same mode has its id replaced where it stands;
    anything else (a new name, a removal) sorts the whole tree again."""
    edited = bytearray(body)
    rest: dict[bytes, _Entry | None] = {}
    for name, entry in changes.items():
        at = -1 if entry is None else body.find(entry[0] + b" " + name + b"\0")
        if entry is None or at < 0 or (at > 0 and _entry_start(body, at, width) != at):
            rest[name] = entry
            continue
        start = at + len(entry[0]) + 1 + len(name) + 1
        edited[start : start + width] = entry[1]
    if not rest:
        return bytes(edited)
    entries = _entries(bytes(edited), width)
    for name, entry in rest.items():
        if entry is None:
            entries.pop(name, None)
        else:
            entries[name] = entry
    order = sorted(entries, key=lambda n: n + b"/" if entries[n][0] == _TREE else n)
    return b"".join(entries[n][0] + b" " + n + b"\0" + entries[n][1] for n in order)


def _entry_start(body: bytes, at: int, width: int) -> int:
    """Where the entry that holds byte ``at`` starts (a walk: only for a found name
    that is not the first entry, to make sure it is a name and not bytes of an id)."""
    pos = 0
    while pos < at:
        nul = body.index(b"\0", pos)
        following = nul + 1 + width
        if following > at:
            return pos
        pos = following
    return pos


def _entries(body: bytes, width: int) -> dict[bytes, _Entry]:
    out: dict[bytes, _Entry] = {}
    pos = 0
    while pos < len(body):
        space = body.index(b" ", pos)
        nul = body.index(b"\0", space)
        out[body[space + 1 : nul]] = (body[pos:space], body[nul + 1 : nul + 1 + width])
        pos = nul + 1 + width
    return out


def _id(body: bytes, width: int) -> str:
    return object_id(b"tree", body, width * 2)


def _write(git: Git, trees: list[tuple[bytes, str]]) -> None:
    """Write the trees: here, loose, in a plain repository; else with one
    ``hash-object`` (which checks each is a well-formed tree), making sure git gave each
    the id worked out here."""
    if git.objects.plain:
        for body, tree_id in trees:
            git.objects.write(b"tree", body, len(tree_id))
        return
    with tempfile.TemporaryDirectory(prefix="trees-", dir=git.git_dir) as folder:
        paths = []
        for i, (body, _tree_id) in enumerate(trees):
            path = os.path.join(folder, str(i))
            with open(path, "wb") as f:
                f.write(body)
            paths.append(path)
        result = git.run(
            "hash-object",
            "-w",
            "-t",
            "tree",
            "--stdin-paths",
            "--no-filters",
            input="".join(f"{p}\n" for p in paths).encode(),
        )
    made = result.out.decode().split()
    expected = [tree_id for _body, tree_id in trees]
    if made != expected:
        raise GitFailed(
            ("hash-object", "-t", "tree"),
            GitResult(1, result.out, f"wrote {made}, expected {expected}"),
        )
