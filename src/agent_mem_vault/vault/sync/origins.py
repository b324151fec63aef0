"""What a view shows of who wrote a note: the route's verdicts (``verdicts.py``) for the
text the view reads.

A note the verdict store has no record of, for the text its file says, is either
changed here and not sent (nobody checked it) or arrived and was not judged (a check
that failed): the route's copy of the remote tells which.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ..format.models import Origin
from .objects import object_id
from .routes import route_git_dir
from .verdicts import VerdictStore, said_by, store_path

if TYPE_CHECKING:
    from .routes import Route, SyncConfig

__all__ = ["origins_of"]


def origins_of(
    root: Path, config: SyncConfig, route: Route, texts: Mapping[str, str]
) -> dict[str, Origin]:
    """Who wrote the text of each note of ``texts`` (path → what its file says), as the
    route's checks found, with one look at the store. A note
    the store has no record of is either changed here and not sent, or arrived and not
    judged (a check that failed): the route's copy of the remote tells which."""
    where = store_path(root, route)
    out: dict[str, Origin] = {}
    if where.exists():
        with VerdictStore(where, read_only=True) as store:
            out = {p: o for p, t in texts.items() if (o := _origin(store, p, t)) is not None}
    rest = {p: t for p, t in texts.items() if p not in out}
    arrived = _arrived(root, config, route, rest) if rest else set()
    for path, text in rest.items():
        claimed = said_by(text)[1]
        if path in arrived:
            out[path] = Origin(claimed.author, claimed.machine, False, why="unknown_writer")
        else:
            out[path] = Origin(claimed.author, claimed.machine, None, sent=False)
    return out


def _arrived(root: Path, config: SyncConfig, route: Route, texts: Mapping[str, str]) -> set[str]:
    """Those of ``texts`` (path → what the file says) that are what the remote has."""
    import subprocess

    from .local import fetched_ref

    where = f"--git-dir={route_git_dir(root, route)}"
    try:
        done = subprocess.run(
            ["git", where, "ls-tree", "-z", fetched_ref(config, route), "--", *texts],
            capture_output=True,
            timeout=10,
            env={**os.environ, "LC_ALL": "C"},
            cwd="/",
        )
    except (OSError, subprocess.TimeoutExpired):
        return set()
    out = set()
    for item in done.stdout.decode("utf-8", "surrogateescape").split("\0"):
        meta, _, path = item.partition("\t")
        fields = meta.split(" ")
        if path in texts and len(fields) == 3:
            data = texts[path].encode("utf-8")
            if object_id(b"blob", data, len(fields[2])) == fields[2]:
                out.add(path)
    return out


def _origin(store: VerdictStore, path: str, text: str) -> Origin | None:
    """What the store says of the note at ``path`` saying ``text``; None: no record of
    that text."""
    here, claimed = said_by(text)
    try:
        return store.origin(path, here, claimed)
    except sqlite3.Error:
        return None
