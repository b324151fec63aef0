"""What a route's refs name, read with one ``for-each-ref``.

A claim reads the route's refs before it commits and again before it pushes; each
read is a git process. So every ref a claim needs is read at once, and the answer
kept while the route's turn is held (``LocalRoute._refs``): what this process moves
it notes itself (``_moved``, ``_set_refs``), and a fetch reads them again with the
refs it moved (``under``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .gitcmd import Git

__all__ = ["Heads", "read_heads"]


@dataclass(frozen=True, slots=True)
class Heads:
    local: str | None
    local_tree: str | None
    fetched: str | None
    fetched_tree: str | None = None
    log: str | None = None
    """The remote's log as last fetched or pushed."""
    applied: str | None = None
    """The log entry ``fetched`` holds the notes of (``log`` once they are applied)."""
    checkpoint: str | None = None
    own: str | None = None
    """Layout 2: this machine's log as the remote last had it (its copy of the remote's)."""
    marker: str | None = None
    """Layout 2: the remote's layout marker, as last fetched or pushed."""
    mine: str | None = None
    """Layout 2: this machine's own log tip, as the remote last confirmed it."""


def read_heads(
    git: Git, refs: Mapping[str, str], under: str | None = None
) -> tuple[Heads, dict[str, str]]:
    """The commits ``refs`` (a field of ``Heads`` → a ref's full name) name, and the
    trees of ``local`` and ``fetched`` (None for a ref that does not exist); and the
    refs under the prefix ``under`` (name under it → commit), in the same git process:
    a fetch moves those."""
    patterns = [*refs.values(), *([under + "/"] if under else [])]
    result = git.run("for-each-ref", "--format=%(refname) %(objectname) %(tree)", *patterns)
    found: dict[str, tuple[str, str]] = {}
    for line in result.out.decode().splitlines():
        name, commit, tree = line.split(" ")
        found[name] = (commit, tree)
    commits = {f: found[name][0] for f, name in refs.items() if name in found}
    trees = {f"{f}_tree": found[refs[f]][1] for f in ("local", "fetched") if refs[f] in found}
    listed: dict[str, str] = {}
    if under:
        cut = len(under) + 1
        listed = {n[cut:]: c for n, (c, _t) in found.items() if n.startswith(under + "/")}
    heads = Heads(**{"local": None, "local_tree": None, "fetched": None, **commits, **trees})
    return heads, listed
