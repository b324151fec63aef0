"""What a route's git folder holds, asked as a sync asks it: the notes two commits
differ in, a few blobs, the blob at a path, ancestry and merge bases.

Each question is put to ``loose.py`` first, which answers from loose objects in
this process where it can, and to git otherwise. ``LocalRoute`` (``local.py``)
reads through these; ``_made`` is what this process already knows of the commits
it made, so that the usual questions about them need neither.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from . import loose
from .trees import empty_tree_id

if TYPE_CHECKING:
    from .gitcmd import Git
    from .routes import Route, SyncConfig

__all__ = ["RouteReads"]

_REGULAR = ("100644", "100755")


class RouteReads:
    """The reads of one route's git folder (a base of ``local.LocalRoute``)."""

    git: Git
    config: SyncConfig
    route: Route
    _made: dict[str, tuple[str, ...]]

    def is_ancestor(self, older: str, newer: str) -> bool:
        if older == newer or older in self._made.get(newer, ()):
            return True
        answer = loose.ancestry(self.git, older, newer, self._made)
        if answer is not None:
            return answer
        return self.git.run("merge-base", "--is-ancestor", older, newer, check=False).status == 0

    def merge_base(self, ours: str, theirs: str) -> str | None:
        if self._made.get(theirs) == (ours,):
            return ours  # the remote's new notes, made here on top of ours
        found = loose.merge_base(self.git, ours, theirs, self._made)
        if found is not None:
            return found
        result = self.git.run("merge-base", ours, theirs, check=False)
        return result.out.decode().strip() or None if result.status == 0 else None

    def changes(self, base: str | None, commit: str) -> dict[str, tuple[str | None, str | None]]:
        """The route's notes ``commit`` changed since ``base``: path → (blob before, after);
        None where there was none (added, removed) or it is not a regular file."""
        older = base or empty_tree_id(len(commit))
        lines = loose.diff(self.git, older, commit)
        if lines is None:
            result = self.git.run(
                "diff-tree", "-r", "-z", "--no-renames", "--no-commit-id", older, commit
            )
            parts = result.out.decode("utf-8", "surrogateescape").split("\0")
            lines = []
            for i in range(0, len(parts) - 1, 2):
                fields = parts[i].lstrip(":").split(" ")
                if len(fields) >= 5:
                    lines.append((parts[i + 1], fields[0], fields[1], fields[2], fields[3]))
        out: dict[str, tuple[str | None, str | None]] = {}
        for path, old_mode, new_mode, old, new in lines:
            if not self.config.covers(self.route, path):
                continue  # a remote's path that is no note of this route is never written
            out[path] = (
                old if old_mode in _REGULAR else None,
                new if new_mode in _REGULAR else None,
            )
        return out

    def blobs(self, ids: list[str]) -> dict[str, str]:
        """The text of each object ``ids`` names (a blob id, or ``<tree>:<path>``), with one
        ``cat-file`` for all; left out where there is no such blob."""
        return {i: raw.decode("utf-8", "replace") for i, raw in self.objects(ids).items()}

    def objects(self, ids: list[str], kind: str = "blob") -> dict[str, bytes]:
        """The bytes of each object of ``kind`` that ``ids`` names, with one ``cat-file``
        for all; left out where there is none."""
        if not ids:
            return {}
        if any("\n" in i for i in ids):  # each is one line of the request
            raise ValueError("an object name holds a line break")
        out, ids = loose.objects(self.git, ids, kind.encode())
        if not ids:
            return out
        raw = self.git.run("cat-file", "--batch", input="".join(f"{i}\n" for i in ids).encode()).out
        pos = 0
        for name in ids:
            end = raw.index(b"\n", pos)
            header = raw[pos:end].decode("utf-8", "replace").rsplit(" ", 2)
            pos = end + 1
            if (
                len(header) != 3
                or header[1] not in ("blob", "commit", "tree", "tag")
                or not header[2].isdigit()
            ):
                continue  # "<name> missing", "<name> ambiguous": no content follows
            size = int(header[2])
            if header[1] == kind:
                out[name] = raw[pos : pos + size]
            pos += size + 1
        return out

    def entries(self, tree: str | None, paths: Sequence[str]) -> dict[str, str]:
        """The blob of each of ``paths`` in ``tree``, where it has one as a regular file."""
        if tree is None or not paths:
            return {}
        found = loose.entries(self.git, tree, paths)
        if found is not None:
            return {p: oid for p, (mode, oid) in found.items() if mode in _REGULAR}
        raw = self.git.run("ls-tree", "-z", tree, "--", *paths).out
        out = {}
        for item in raw.decode("utf-8", "surrogateescape").split("\0"):
            meta, _, path = item.partition("\t")
            fields = meta.split(" ")
            if path and len(fields) == 3 and fields[0] in _REGULAR:
                out[path] = fields[2]
        return out
