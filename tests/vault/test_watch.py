"""A watched vault (as the MCP server runs it) learns of notes changed by hand from
the operating system, and falls back to checking by ``stat`` when it cannot watch."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from agent_mem_vault.vault import Vault

from .conftest import NS


def _eventually(check: Callable[[], bool], seconds: float = 10.0) -> bool:
    """The watcher reports within tens of milliseconds; a busy machine may take longer."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


def _same_stamp_edit(note: Path, old: str, new: str) -> None:
    """An in-place edit that keeps the size and mtime: invisible to a check by stat."""
    assert len(old) == len(new)
    st = note.stat()
    with open(note, "r+", encoding="utf-8") as fh:
        text = fh.read().replace(old, new)
        fh.seek(0)
        fh.write(text)
    os.utime(note, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (note.stat().st_size, note.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)


def test_a_watched_vault_sees_an_edit_that_a_stat_cannot(vault: Vault) -> None:
    h = vault.create_handoff(to="codex", summary="abc", context="c", namespace=NS, from_="a")
    assert vault.watch(wait=10)
    try:
        assert vault.peek_handoff(agent="codex", namespace=NS) is not None
        _same_stamp_edit(vault.path / h.path, "## Summary\nabc", "## Summary\nxyz")

        def seen() -> bool:
            got = vault.get_handoff(h.id)
            return got.summary == "xyz"

        assert _eventually(seen)
    finally:
        vault.stop_watching()


def test_an_unwatched_vault_does_not_see_that_edit(vault: Vault) -> None:
    h = vault.create_handoff(to="codex", summary="abc", context="c", namespace=NS, from_="a")
    _same_stamp_edit(vault.path / h.path, "## Summary\nabc", "## Summary\nxyz")
    time.sleep(0.3)
    assert vault.get_handoff(h.id).summary == "abc"  # what the watch adds, shown by its absence


def test_a_watched_vault_sees_notes_added_edited_and_deleted_by_hand(vault: Vault) -> None:
    first = vault.create_handoff(to="codex", summary="s", context="c", namespace=NS, from_="a")
    assert vault.watch(wait=10)
    try:
        vault.peek_handoff(agent="codex", namespace=NS)
        other = Vault(vault.path)  # another process's writes arrive as events too
        second = other.create_handoff(to="codex", summary="t", context="c", namespace=NS)
        assert _eventually(lambda: vault.peek_handoff(agent="codex", namespace=NS) == second)
        (vault.path / second.path).unlink()
        assert _eventually(lambda: [x.id for x in vault.list_handoffs(namespace=NS)] == [first.id])
        note = vault.path / first.path
        note.write_text(note.read_text().replace("read: false", "read: true"))
        assert _eventually(lambda: vault.peek_handoff(agent="codex", namespace=NS) is None)
        folder = vault.path / "team" / "new" / "handoffs"
        folder.mkdir(parents=True)
        (folder / "x.md").write_text(note.read_text().replace(first.id, "3zzzzzzzzzzz2"))
        assert _eventually(
            lambda: vault.list_handoffs(status="read", limit=10)[0].path == "team/new/handoffs/x.md"
        )
    finally:
        vault.stop_watching()


def test_a_vault_that_stops_watching_checks_by_stat_again(vault: Vault) -> None:
    h = vault.create_handoff(to="codex", summary="s", context="c", namespace=NS, from_="a")
    assert vault.watch(wait=10)
    vault.peek_handoff(agent="codex", namespace=NS)
    vault.stop_watching()
    note = vault.path / h.path
    st = note.stat()
    with open(note, "r+", encoding="utf-8") as fh:
        text = fh.read().replace("## Summary\ns\n", "## Summary\nedited\n")
        fh.seek(0)
        fh.write(text)
    os.utime(note, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    got = vault.peek_handoff(agent="codex", namespace=NS)
    assert got is not None and got.summary == "edited"


def test_a_folder_made_after_the_watch_began_is_watched_too(vault: Vault) -> None:
    vault.create_handoff(to="codex", summary="first", context="c", namespace=NS, from_="a")
    assert vault.watch(wait=10)
    watcher = vault._upkeep.watcher
    assert watcher is not None
    try:
        started = watcher.generation
        vault.peek_handoff(agent="codex", namespace=NS)
        # A new namespace: its folders are made after the watch began.
        h = vault.create_handoff(
            to="codex", summary="abc", context="c", namespace="team/new", from_="a"
        )

        def watching_again() -> bool:
            vault.peek_handoff(agent="codex", namespace="team/new")
            return watcher.active and watcher.generation > started

        assert _eventually(watching_again)
        vault.peek_handoff(agent="codex", namespace="team/new")
        _same_stamp_edit(vault.path / h.path, "## Summary\nabc", "## Summary\nxyz")
        assert _eventually(lambda: vault.get_handoff(h.id).summary == "xyz")
    finally:
        vault.stop_watching()
