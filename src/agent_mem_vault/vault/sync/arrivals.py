"""What arrives from a route's remote, merged into the vault's notes.

``integrate`` takes the commit a fetch brought and the vault's own last commit,
and their last common one, and goes path by path (``diff-tree`` of each side):
a note only the remote changed is written as the remote has it; a note both
changed is merged by fields (``merge.py``), a side that lost a conflict kept as
a conflict note, two supersedes made one thread; a note this vault removed and
the remote changed comes back; the reverse stays removed only if this vault left
it alone. Then the route's ``local`` ref moves past the fetched commit (to it,
when that is a fast-forward). A note edited by hand and not committed yet is
committed first, as this vault's side, so that it is merged, not overwritten.

Everything here runs under the vault lock, with the route's turn held.
"""

from __future__ import annotations

import os
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING

from ..folder.files import atomic_write
from ..format.merge import conflict_note, merge_notes
from .objects import object_id
from .routes import namespace_of

if TYPE_CHECKING:
    from ..index.db import Index
    from .fold import Folded
    from .local import LocalRoute, RouteReport

__all__ = ["BULK", "integrate", "keep_followups", "record_written"]

BULK = 500
"""Notes arriving at once from which they are written as a batch (see ``_write``)."""


def integrate(sync: LocalRoute, theirs: str | None, report: RouteReport) -> None:
    """Merge the fetched commit ``theirs`` into the vault's notes and ``local`` (the
    caller holds the vault lock and the route's turn)."""
    if theirs is None:
        return
    ours, _ = sync.heads()
    if ours == theirs:
        return
    base = sync.merge_base(ours, theirs) if ours is not None else None
    if base == theirs:
        return  # the remote has nothing this vault lacks
    incoming = sync.changes(base, theirs)
    if not incoming:
        sync.advance(ours, theirs, base)
        return
    mine = sync.changes(base, ours) if ours is not None and ours != base else {}
    # Edits by hand to the notes about to be written, not committed yet, go in first,
    # as ours: a note whose file is not the blob ours holds was edited here.
    edited = []
    for path, (old, _new) in incoming.items():
        ours_blob = mine[path][1] if path in mine else old
        if _blob_id(sync.root / path, len(ours_blob or theirs)) != ours_blob:
            edited.append(path)
    held: dict[str, str] = {}
    if edited:
        sync.stage(edited)
        committed = sync.commit("notes changed here")
        if committed is not None and committed != ours:
            ours = committed
            mine = sync.changes(base, ours)
        held = _held_edits(sync.root, edited, mine, incoming, len(theirs))
    wanted: set[str] = set()
    for path, (old, new) in incoming.items():
        wanted.update(b for b in (old, new) if b)
        if path in mine:
            wanted.update(b for b in mine[path] if b)
    blobs = sync.blobs(sorted(wanted))
    for path, text in held.items():  # merged from the file, under a name of its own
        blobs[f"held:{path}"] = text
        mine[path] = (incoming[path][0], f"held:{path}")
    writes: dict[str, str] = {}
    removes: list[str] = []
    supersedes: list[tuple[str, str, str]] = []
    for path, (old, new) in sorted(incoming.items()):
        if path not in mine:
            if new is None:
                removes.append(path)
            else:
                writes[path] = blobs[new]
            continue
        my_new = mine[path][1]
        if my_new == new or new is None:
            continue  # the same on both sides, or removed there but changed here: kept
        if my_new is None:
            writes[path] = blobs[new]  # removed here but changed there: nothing lost
            continue
        merged = merge_notes(blobs[old] if old else _generated(path), blobs[my_new], blobs[new])
        writes[path] = merged.text
        report.merged.append(path)
        if merged.kept is not None:
            folder, _, name = path.rpartition("/")
            kept_name, kept_text = conflict_note(merged.kept, name)
            kept = f"{folder}/{kept_name}" if folder else kept_name
            writes[kept] = kept_text
            report.kept.append(kept)
        if merged.twice:
            report.twice.append(path)
        if merged.superseded is not None:
            supersedes.append((path, *merged.superseded))
    for path, newer, other in supersedes:
        _supersede_other(sync.root, writes, path, newer, other)
    changed = _write(sync, writes, removes)
    done = {*report.merged, *report.kept}
    report.arrived.extend(p for p in (*writes, *removes) if p not in done)
    if not mine and ours == base and len(changed) <= BULK and _as_they_are(writes, incoming):
        sync.fast_forward(ours, theirs, changed)  # the notes are theirs, byte for byte
        return
    sync.later(changed)  # staged by the write-tree that makes the merge, with the rest
    sync.advance(ours, theirs, base)


def keep_followups(sync: LocalRoute, folded: Folded, report: RouteReport) -> None:
    """What a fold of the machines' logs set aside (layout 2, ``fold.py``), written here:
    a side that lost a conflict as a conflict note, a second supersede made one thread.
    Staged, they go out with this machine's next entry; every machine that folds the
    same entries writes the same names and bytes, which fold to one note."""
    writes: dict[str, str] = {}
    for path, texts in folded.kept.items():
        folder, _, name = path.rpartition("/")
        for text in texts:  # three edits at once: two sides lost, each kept
            kept_name, kept_text = conflict_note(text, name)
            kept = f"{folder}/{kept_name}" if folder else kept_name
            if not (sync.root / kept).exists():
                writes[kept] = kept_text
                report.kept.append(kept)
    for path, newer, other in folded.superseded:
        _supersede_other(sync.root, writes, path, newer, other)
    report.twice.extend(p for p in folded.twice if p not in report.twice)
    if writes:
        sync.stage(_write(sync, writes, []))


def _as_they_are(
    writes: dict[str, str], incoming: dict[str, tuple[str | None, str | None]]
) -> bool:
    """Whether each note written is byte for byte the blob the remote has (a blob that
    is not UTF-8 was written with replacement characters)."""
    for path, text in writes.items():
        blob = incoming.get(path, (None, None))[1]
        data = text.encode("utf-8", "surrogateescape")
        if blob is None or object_id(b"blob", data, len(blob)) != blob:
            return False
    return True


def _write(sync: LocalRoute, writes: dict[str, str], removes: list[str]) -> list[str]:
    """Write what arrived into the vault's folder and index; the paths changed.

    Many notes at once (a vault joining a remote that has a whole vault) are
    written without an fsync each and made durable by one ``sync`` at the end,
    then indexed as a reindex does (in parallel), not one by one."""
    vault = sync.vault
    bulk = len(writes) + len(removes) > BULK
    made: set[str] = set()
    touched_dirs: set[str] = set()
    for path, text in writes.items():
        folder = path.rpartition("/")[0]
        if folder not in touched_dirs:
            made.update(_make_folders(sync.root, folder))
            touched_dirs.add(folder)
        atomic_write(sync.root / path, text, durable=vault.durable and not bulk)
    for path in removes:
        with suppress(FileNotFoundError):
            os.unlink(sync.root / path)
        touched_dirs.add(path.rpartition("/")[0])
    changed = [*writes, *removes]
    if bulk:
        if vault.durable:
            os.sync()  # every note on disk before the ref says it arrived
        idx = vault._upkeep.rebuild()
        idx.touched.clear()
    else:
        idx = vault._upkeep.handle()
        record_written(sync.root, idx, list(writes), removes, touched_dirs | made)
        # Staged by the caller as they arrived: not changes of this vault to send back.
        idx.touched.difference_update(changed)
    return changed


def _held_edits(
    root: Path,
    edited: list[str],
    mine: dict[str, tuple[str | None, str | None]],
    incoming: dict[str, tuple[str | None, str | None]],
    digits: int,
) -> dict[str, str]:
    """The edits made here that the gate kept out of the commit (a secret gained here,
    ``gate.py``), path → the text on disk: ours all the same, so they are merged from
    the file and the remote's change never overwrites them."""
    out = {}
    for path in edited:
        committed = mine[path][1] if path in mine else incoming[path][0]
        try:
            data = (root / path).read_bytes()
        except OSError:
            continue
        if object_id(b"blob", data, digits) != committed:
            out[path] = data.decode("utf-8", "replace")
    return out


def _blob_id(path: Path, digits: int) -> str | None:
    """The id git gives the file at ``path`` as a blob (None if there is none), in a
    repository whose ids have ``digits`` hex digits."""
    try:
        data = path.read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
    return object_id(b"blob", data, digits)


def _generated(path: str) -> str | None:
    """The text the vault itself writes at ``path`` on each machine (a namespace's new
    brief), as the common version of two that have none."""
    if path.endswith("/_brief.md"):
        from ..format.brief import brief_template
        from ..format.notes import render_note

        namespace = namespace_of(path)
        if namespace is not None:
            return render_note({"type": "brief", "namespace": namespace}, brief_template(namespace))
    return None


def _make_folders(root: Path, folder: str) -> list[str]:
    """Make ``folder`` and its parents; the ones made, and the parent of the first."""
    made: list[str] = []
    parts = folder.split("/") if folder else []
    for depth in range(1, len(parts) + 1):
        rel = "/".join(parts[:depth])
        if not os.path.isdir(root / rel):
            (root / rel).mkdir()
            if not made:
                made.append("/".join(parts[: depth - 1]))
            made.append(rel)
    return made


def record_written(
    root: Path, idx: Index, written: list[str], removed: list[str], dirs: set[str]
) -> None:
    """Tell the vault's index what sync wrote into the folder: what arrived, a stamp (the
    caller holds the vault lock)."""
    from ..index.scan import reread

    with idx.transaction():
        for path in written:
            reread(root, idx, path)
        for path in removed:
            idx.remove_file(path)
        for rel in sorted(dirs):
            try:
                st = os.stat(root / rel if rel else root)
            except FileNotFoundError:
                continue
            idx.set_dir(rel, st.st_mtime_ns)


def _supersede_other(root: Path, writes: dict[str, str], path: str, newer: str, other: str) -> None:
    """Both sides superseded the handoff at ``path``, by ``newer`` and by ``other``: the
    newer one is the live thread, so ``other`` is superseded by it too (one live thread
    per chain, whichever machine merges first)."""
    from ..format import lifecycle
    from ..format.notes import NoteError, apply_handoff, handoff_from_note, parse_note, render_note

    folder = path.rpartition("/")[0]
    target, source = f"{folder}/{other}.md", f"{folder}/{newer}.md"
    try:
        text = writes.get(target) or (root / target).read_text(encoding="utf-8")
        newer_text = writes.get(source) or (root / source).read_text(encoding="utf-8")
        note, newer_note = parse_note(text), parse_note(newer_text)
        if note is None or newer_note is None:
            return
        handoff = handoff_from_note(note, target)
        when = str(newer_note.meta.get("created_at") or "")
    except (OSError, UnicodeDecodeError, NoteError):
        return  # not here (yet): the machine that has both notes makes the change
    if handoff.superseded_by is not None or not when:
        return
    updated = lifecycle.supersede(handoff, newer, handoff.read_at or when)
    writes[target] = render_note(apply_handoff(note.meta, updated), note.body)
