"""A note edited by hand names its editor before it travels.

The operations stamp what they create with the person git names for the route
and this machine (``format/writer.py``). A person who changes what a note says
in Obsidian, or with any editor, leaves the pair as it was: the text would go
out under the name of whoever wrote it first. So before a journaled note is
staged for its remote, its text is compared with the version this machine last
committed for it; where the text changed and the pair is not this machine's,
the pair is written again, in place, under the vault lock, and the index told.

Only a namespace's notes are stamped (its handoffs, memories and brief): a
person's other Markdown files in the vault travel as they are. Only the text
counts (``text_of``): a read, an ack, a supersede or new tags
leave the pair alone, and a note that arrived from a teammate keeps theirs.
A note the ops wrote here carries this machine's pair already: one substring
test, and nothing is read from git.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..folder.files import atomic_write
from ..format.notes import parse_text, render_note
from ..format.writer import WRITTEN_BY, WRITTEN_ON, origin_in, text_of, writer_properties
from .arrivals import record_written
from .identity import identity
from .routes import namespace_of

if TYPE_CHECKING:
    from .local import LocalRoute

__all__ = ["stamp_edits"]


def stamp_edits(route: LocalRoute, paths: Sequence[str]) -> list[str]:
    """Write this machine's writer pair into each of ``paths`` (journaled notes of
    ``route``) whose text changed here since its last commit; the paths stamped. The
    caller holds the vault lock."""
    if not paths:
        return []
    from ..format.models import Origin

    who = identity(route.git.git_dir)
    me = Origin(None if who is None else str(who), route.config.machine)
    pair = writer_properties(me)
    lines = render_note(pair, "").splitlines()[1:-1]  # the pair as a note's front matter has it
    candidates: dict[str, tuple[dict[str, object], str]] = {}
    for path in paths:
        # The vault's own notes only: a person's other Markdown files get no properties.
        if namespace_of(path) is None or not route.config.covers(route.route, path):
            continue
        try:
            text = (route.root / path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if all(line in text for line in lines):
            continue  # written here: the pair is this machine's already
        try:
            note = parse_text(text)
        except ValueError:
            continue  # a note a person broke: doctor names it, sync sends it as it is
        if origin_in(note.meta) == me:
            continue
        candidates[path] = (dict(note.meta), note.body)
    if not candidates:
        return []
    tree = route.local_tree()
    before = route.blobs([f"{tree}:{p}" for p in candidates]) if tree else {}
    stamped = []
    for path, (meta, body) in candidates.items():
        old = before.get(f"{tree}:{path}")
        if old is not None and _same_text(old, meta, body):
            continue  # a read, an ack, new tags: the text is still its writer's
        atomic_write(route.root / path, render_note(_with_pair(meta, pair), body))
        stamped.append(path)
    if stamped:
        vault = route.vault
        idx = vault._upkeep.handle()
        dirs = {p.rpartition("/")[0] for p in stamped}
        record_written(route.root, idx, stamped, [], dirs)
        idx.touched.difference_update(stamped)  # staged by the caller, with the rest
    return stamped


def _same_text(old: str, meta: dict[str, object], body: str) -> bool:
    try:
        was = parse_text(old)
    except ValueError:
        return False
    return text_of(was.meta, was.body) == text_of(meta, body)


def _with_pair(meta: dict[str, object], pair: dict[str, str]) -> dict[str, object]:
    """``meta`` with the writer pair set to ``pair``, where the operations put it: last."""
    rest = {k: v for k, v in meta.items() if k not in (WRITTEN_BY, WRITTEN_ON)}
    return {**rest, **pair}
