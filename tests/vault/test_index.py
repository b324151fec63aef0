"""The derived index: rebuilt when missing or damaged, and following edits made by hand."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from agent_mem_vault.vault import Vault
from agent_mem_vault.vault.index.schema import MIGRATIONS
from tests.by_hand import save_in_place, write_handoff

from .conftest import NS, TickingClock

INDEX = Path(".agent-mem-vault") / "index.sqlite3"


def _hand_written(vault: Vault, id: str, summary: str, folder: str = f"{NS}/handoffs") -> Path:
    """A handoff note written the way a person (or another tool) would: straight to disk."""
    return write_handoff(vault.path / folder, id, summary, namespace=NS, context="written by hand")


def _state(vault: Vault) -> list[tuple[str, str, str | None, str]]:
    return [
        (h.id, h.status, h.read_at, h.summary)
        for h in vault.list_handoffs(status="all", limit=1000)
    ]


def test_the_index_is_rebuilt_when_missing(vault: Vault, vault_path: Path) -> None:
    h = vault.create_handoff(to="codex", summary="s", context="c", namespace=NS, from_="a")
    vault.close()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{vault_path / INDEX}{suffix}").unlink(missing_ok=True)
    again = Vault(vault_path)
    assert again.get_handoff(h.id).summary == "s"


def test_the_index_is_rebuilt_when_corrupt(vault: Vault, vault_path: Path) -> None:
    h = vault.create_handoff(to="codex", summary="s", context="c", namespace=NS, from_="a")
    vault.close()
    for suffix in ("-wal", "-shm"):
        Path(f"{vault_path / INDEX}{suffix}").unlink(missing_ok=True)
    (vault_path / INDEX).write_bytes(b"this is not a database" * 100)
    again = Vault(vault_path)
    got = again.read_handoff(agent="codex", namespace=NS)
    assert got is not None and got.id == h.id


def test_reindex_round_trip_gives_the_same_answers(vault: Vault) -> None:
    a = vault.create_handoff(to="codex", summary="a", context="c", namespace=NS, from_="x")
    vault.create_handoff(to="codex", summary="b", context="c", namespace=NS, from_="x")
    vault.read_handoff(agent="codex", namespace=NS)
    vault.create_handoff(to="codex", summary="c", context="c", namespace=NS, supersedes=[a.id])
    vault.save_memory(namespace=NS, title="m", content="searchable words")
    before = (_state(vault), [h.memory for h in vault.search_memory(query="searchable")])
    report = vault.reindex()
    assert (report.handoffs, report.memories) == (3, 1)
    after = (_state(vault), [h.memory for h in vault.search_memory(query="searchable")])
    assert after == before


def test_migrations_are_named_and_recorded(vault: Vault, vault_path: Path) -> None:
    vault.list_handoffs()
    conn = sqlite3.connect(vault_path / INDEX)
    names = [r[0] for r in conn.execute("SELECT name FROM migrations ORDER BY name")]
    conn.close()
    assert names == [name for name, _ in MIGRATIONS]


def test_an_index_from_a_newer_version_is_rebuilt(vault: Vault, vault_path: Path) -> None:
    h = vault.create_handoff(to="codex", summary="s", context="c", namespace=NS, from_="a")
    vault.close()
    conn = sqlite3.connect(vault_path / INDEX)
    conn.execute("INSERT INTO migrations VALUES ('9999_future', 'x')")
    conn.commit()
    conn.close()
    assert Vault(vault_path).get_handoff(h.id).id == h.id
    conn = sqlite3.connect(vault_path / INDEX)
    assert conn.execute("SELECT count(*) FROM migrations WHERE name='9999_future'").fetchone() == (
        0,
    )
    conn.close()


def test_a_note_added_by_hand_is_picked_up(vault: Vault) -> None:
    vault.create_handoff(to="codex", summary="s", context="c", namespace=NS, from_="a")
    _hand_written(vault, "3zzzzzzzzzzz2", "added in Obsidian")
    got = vault.peek_handoff(agent="codex", namespace=NS)
    assert got is not None and got.summary == "added in Obsidian"


def test_a_new_namespace_folder_made_by_hand_is_picked_up(vault: Vault) -> None:
    vault.create_handoff(to="codex", summary="s", context="c", namespace=NS, from_="a")
    _hand_written(vault, "3zzzzzzzzzzz2", "new folder", folder="team/x/handoffs")
    assert vault.list_handoffs(agent="codex")[0].summary == "new folder"


def test_a_note_deleted_by_hand_is_dropped(vault: Vault) -> None:
    h = vault.create_handoff(to="codex", summary="s", context="c", namespace=NS, from_="a")
    (vault.path / h.path).unlink()
    assert vault.list_handoffs(status="all") == []
    assert vault.read_handoff(agent="codex", namespace=NS) is None


def test_a_note_edited_in_place_is_picked_up(vault: Vault) -> None:
    vault.rescan_interval = None
    h = vault.create_handoff(to="codex", summary="s", context="c", namespace=NS, from_="a")
    note = vault.path / h.path
    # Edit in place (no rename, so the folder's mtime does not change), as Obsidian does.
    with open(note, "r+", encoding="utf-8") as fh:
        text = fh.read().replace("## Summary\ns\n", "## Summary\nedited by a person\n")
        fh.seek(0)
        fh.write(text)
        fh.truncate()
    got = vault.peek_handoff(agent="codex", namespace=NS)
    assert got is not None and got.summary == "edited by a person"
    assert vault.get_handoff(h.id).summary == "edited by a person"


def test_an_in_place_edit_marking_it_read_is_honoured_by_read_handoff(vault: Vault) -> None:
    vault.rescan_interval = None
    h = vault.create_handoff(to="codex", summary="s", context="c", namespace=NS, from_="a")
    note = vault.path / h.path
    text = (
        note.read_text()
        .replace("status: pending", "status: read")
        .replace("read: false", "read: true")
    )
    with open(note, "w", encoding="utf-8") as fh:
        fh.write(text)
    assert vault.read_handoff(agent="codex", namespace=NS) is None


def _edit_in_place(note: Path, old: str, new: str) -> None:
    """Rewrite a note without a rename (as Obsidian saves), so its folder's mtime stays."""
    save_in_place(note, note.read_text(encoding="utf-8").replace(old, new))


def _indexed_stamp(vault_path: Path, note: str) -> tuple[int, int]:
    """What the index file (read by a second connection) holds for one note."""
    conn = sqlite3.connect(vault_path / INDEX)
    try:
        folder, _, name = note.rpartition("/")
        row = conn.execute(
            "SELECT mtime_ns, size FROM files WHERE dir=? AND name=?", (folder, name)
        ).fetchone()
    finally:
        conn.close()
    return row[0], row[1]


def test_no_periodic_full_rescan_by_default(vault: Vault) -> None:
    assert vault.rescan_interval is None
    assert Vault(vault.path).rescan_interval is None


def test_a_call_checks_only_the_notes_of_its_own_namespace(
    vault: Vault, vault_path: Path, clock: TickingClock
) -> None:
    other = "team/other"
    h = vault.create_handoff(to="codex", summary="s", context="c", namespace=other, from_="a")
    vault.create_handoff(to="codex", summary="s", context="c", namespace=NS, from_="a")
    before = _indexed_stamp(vault_path, h.path)
    _edit_in_place(vault_path / h.path, "## Summary\ns\n", "## Summary\nS\n")
    clock.advance(3600)
    assert vault.peek_handoff(agent="codex", namespace=NS) is not None
    # The edit in the other namespace was not looked at: no stat of its notes.
    assert _indexed_stamp(vault_path, h.path) == before
    got = vault.peek_handoff(agent="codex", namespace=other)
    assert got is not None and got.summary == "S"
    assert _indexed_stamp(vault_path, h.path) != before


def test_a_listing_of_every_namespace_shows_each_note_as_it_is_now(vault: Vault) -> None:
    h = vault.create_handoff(to="codex", summary="s", context="c", namespace=NS, from_="a")
    _edit_in_place(vault.path / h.path, "## Summary\ns\n", "## Summary\nS\n")
    assert vault.list_handoffs()[0].summary == "S"


def test_an_older_note_made_pending_in_place_is_seen_by_the_next_peek(vault: Vault) -> None:
    old = vault.create_handoff(to="codex", summary="old", context="c", namespace=NS, from_="a")
    vault.ack_handoff(old.id)
    assert vault.peek_handoff(agent="codex", namespace=NS) is None
    note = vault.path / old.path
    text = note.read_text().replace("status: read", "status: pending")
    text = text.replace("read: true", "read: false")
    _edit_in_place(note, note.read_text(), text)
    got = vault.peek_handoff(agent="codex", namespace=NS)
    assert got is not None and got.id == old.id


def test_a_memory_edited_in_place_is_found_by_a_search_in_its_namespace(vault: Vault) -> None:
    m = vault.save_memory(namespace=NS, title="deploy notes", content="nothing yet")
    _edit_in_place(vault.path / m.path, "nothing yet", "zeppelin rollout")
    hits = vault.search_memory(query="zeppelin", namespace=NS)
    assert [x.memory.id for x in hits] == [m.id]


def test_the_periodic_full_rescan_still_runs_when_asked_for(
    vault_path: Path, clock: TickingClock
) -> None:
    v = Vault(vault_path, clock=clock, durable=False, rescan_interval=60)
    v.init()
    h = v.create_handoff(to="codex", summary="s", context="c", namespace="team/other", from_="a")
    before = _indexed_stamp(vault_path, h.path)
    _edit_in_place(vault_path / h.path, "## Summary\ns\n", "## Summary\nS\n")
    v.peek_handoff(agent="codex", namespace=NS)
    assert _indexed_stamp(vault_path, h.path) == before
    clock.advance(61)
    v.peek_handoff(agent="codex", namespace=NS)
    assert _indexed_stamp(vault_path, h.path) != before


def test_rescan_reports_what_changed(vault: Vault) -> None:
    h = vault.create_handoff(to="codex", summary="s", context="c", namespace=NS, from_="a")
    _hand_written(vault, "3zzzzzzzzzzz2", "new")
    (vault.path / h.path).unlink()
    report = vault.rescan()
    assert (report.added, report.removed, report.handoffs) == (1, 1, 1)
    again = vault.rescan()
    assert (again.added, again.changed, again.removed) == (0, 0, 0)


def test_other_markdown_and_dot_folders_are_ignored(vault: Vault) -> None:
    (vault.path / "notes.md").write_text("# my own note\n")
    (vault.path / ".obsidian").mkdir()
    (vault.path / ".obsidian" / "x.md").write_text("---\ntype: handoff\n---\n")
    report = vault.rescan()
    assert report.broken == () and report.handoffs == 0


def test_an_index_damaged_under_an_open_vault_is_rebuilt_on_the_next_call(
    vault: Vault, vault_path: Path
) -> None:
    vault.rescan_interval = None
    h = vault.create_handoff(to="codex", summary="s", context="c", namespace=NS, from_="a")
    assert vault.list_handoffs()[0].id == h.id
    with open(vault_path / INDEX, "r+b") as fh:
        fh.seek(0)
        fh.write(b"\0" * 4096 * 4)
    for suffix in ("-wal", "-shm"):
        Path(f"{vault_path / INDEX}{suffix}").unlink(missing_ok=True)
    other = Vault(vault_path, rescan_interval=None)
    assert [x.id for x in other.list_handoffs()] == [h.id]


def test_a_read_whose_index_update_fails_still_hands_over_the_handoff(vault: Vault) -> None:
    vault.rescan_interval = None
    h = vault.create_handoff(to="codex", summary="s", context="c", namespace=NS, from_="a")
    conn = vault._upkeep.handle().conn  # fault injection through SQLite itself, no patching
    conn.execute("PRAGMA query_only=ON")
    got = vault.read_handoff(agent="codex", namespace=NS)
    assert got is not None and got.id == h.id and got.read_at is not None
    conn.execute("PRAGMA query_only=OFF")
    # The note is the truth; the index catches up at the next call.
    assert [x.id for x in vault.list_handoffs(namespace=NS, status="read")] == [h.id]
    assert vault.read_handoff(agent="codex", namespace=NS) is None


def test_reads_in_one_look_check_each_namespace_once(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The session hook reads the brief, then the pending handoffs: one check of
    # the namespace's notes, not two. An edit made during the look is seen after it.
    from agent_mem_vault.vault.index import scan, upkeep
    from agent_mem_vault.vault.index.db import Index
    from agent_mem_vault.vault.index.scan import Stamps

    h = vault.create_handoff(to="codex", summary="s", context="c", namespace=NS, from_="a")
    assert vault.read_handoff(agent="codex", namespace=NS) is not None
    checked: list[tuple[str, str]] = []
    stale_dirs = scan.stale_dirs

    def counting(
        root: Path,
        idx: Index,
        scope: tuple[str, str],
        looked: dict[str, Stamps] | None = None,
        counted: list[int] | None = None,
    ) -> list[str]:
        checked.append(scope)
        return stale_dirs(root, idx, scope, looked, counted)

    monkeypatch.setattr(upkeep, "stale_dirs", counting)
    with vault.one_look():
        vault.get_project_brief(namespace=NS)
        _edit_in_place(vault.path / h.path, "status: read", "status: pending")
        _edit_in_place(vault.path / h.path, "read: true", "read: false")
        assert vault.list_handoffs(namespace=NS, agent="codex") == []
    assert sorted(checked) == [(NS, "handoffs"), (NS, "memories")]
    pending = vault.list_handoffs(namespace=NS, agent="codex")
    assert [p.id for p in pending] == [h.id]
    assert checked.count((NS, "handoffs")) == 2
