"""The index's compact layout: text stored once, compressed, and still right.

The memory text lives only in ``memories.body`` (compressed); the full-text
index reads it through the ``memories_text`` view (external content), so every
edit and delete must tell FTS5 exactly what it indexed: FTS5's own
``integrity-check`` is the judge here, after edits made through the API and by
hand. An index of the old layout is rebuilt, and a reindex parsed by worker
processes gives the same index as one parsed in this process.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from agent_mem_vault.vault import Vault
from agent_mem_vault.vault.index import scan
from agent_mem_vault.vault.index.rows import pack
from agent_mem_vault.vault.index.schema import MIGRATIONS, RETIRED

from .conftest import NS, TickingClock

INDEX = Path(".agent-mem-vault") / "index.sqlite3"
LONG = ("Ünïcode context, long enough to be compressed: " + "the backfill of orders " * 20).strip()


def _integrity(vault_path: Path) -> None:
    """FTS5's own check that its index matches the text it reads (raises if not)."""
    conn = sqlite3.connect(vault_path / INDEX)
    conn.create_function("amv_text", 1, _unpack)
    try:
        conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('integrity-check')")
    finally:
        conn.close()


def _unpack(value: str | bytes | None) -> str:
    import zlib

    if isinstance(value, bytes):
        return zlib.decompress(value).decode("utf-8")
    return value or ""


def _edit_in_place(note: Path, old: str, new: str) -> None:
    st = note.stat()
    text = note.read_text(encoding="utf-8")
    assert old in text
    with open(note, "r+", encoding="utf-8") as fh:
        fh.write(text.replace(old, new))
        fh.truncate()
    os.utime(note, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))


def _titles(vault: Vault, query: str, namespace: str | None = None) -> list[str]:
    page = vault.search_memory(query=query, namespace=namespace, limit=50)
    return sorted(h.memory.title for h in page)


def test_texts_come_back_exactly_as_written(vault: Vault) -> None:
    short = vault.create_handoff(to="codex", summary="s", context="tiny", namespace=NS, from_="a")
    long = vault.create_handoff(to="codex", summary="s", context=LONG, namespace=NS, from_="a")
    m = vault.save_memory(namespace=NS, title="Backfill plan", content=LONG, tags=["ops"])
    assert vault.get_handoff(short.id).context == "tiny"
    assert vault.get_handoff(long.id).context == LONG
    hit = vault.search_memory(query="backfill", limit=1)[0]
    assert hit.memory.id == m.id and hit.memory.content == LONG
    assert isinstance(pack(LONG), bytes) and pack("tiny") == "tiny"


def test_the_text_of_a_memory_is_stored_once(vault: Vault, vault_path: Path) -> None:
    vault.save_memory(namespace=NS, title="t", content=LONG)
    conn = sqlite3.connect(vault_path / INDEX)
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    finally:
        conn.close()
    assert "memories_fts" in tables and "memories_fts_content" not in tables


def test_edits_and_deletes_keep_the_full_text_index_whole(vault: Vault, vault_path: Path) -> None:
    a = vault.save_memory(namespace=NS, title="alpha", content="the lock was held", tags=["db"])
    b = vault.save_memory(namespace=NS, title="beta", content=LONG)
    vault.save_memory(namespace=NS, title="gamma", content="flaky test in ci")
    _integrity(vault_path)
    _edit_in_place(vault.path / a.path, "the lock was held", "the queue was stuck")
    assert _titles(vault, "lock") == []
    assert _titles(vault, "queue") == ["alpha"]
    _integrity(vault_path)
    (vault.path / b.path).unlink()
    assert _titles(vault, "backfill") == []
    _integrity(vault_path)
    vault.reindex()
    _integrity(vault_path)
    assert _titles(vault, "queue") == ["alpha"] and _titles(vault, "db") == ["alpha"]


def test_namespace_filter_takes_children_not_lookalikes(vault: Vault) -> None:
    for ns in ("team/a", "team/a/sub", "team/ab", "team/a-b", "Team/a"):
        vault.save_memory(namespace=ns, title=ns, content="shared word")
    assert _titles(vault, "shared", "team/a") == ["team/a", "team/a/sub"]
    assert _titles(vault, "shared", "team/a/sub") == ["team/a/sub"]
    page = vault.search_memory(query="shared", namespace="team/a", limit=1)
    assert page.total == 2 and len(page) == 1


@pytest.mark.parametrize("old", sorted(RETIRED))
def test_an_index_of_an_old_layout_is_rebuilt(vault: Vault, vault_path: Path, old: str) -> None:
    h = vault.create_handoff(to="codex", summary="s", context=LONG, namespace=NS, from_="a")
    vault.save_memory(namespace=NS, title="kept", content="found again after the rebuild")
    vault.close()
    conn = sqlite3.connect(vault_path / INDEX)
    conn.execute("INSERT INTO migrations VALUES (?, 'x')", (old,))
    conn.commit()
    conn.close()
    again = Vault(vault_path)
    assert again.get_handoff(h.id).context == LONG
    assert _titles(again, "rebuild") == ["kept"]
    conn = sqlite3.connect(vault_path / INDEX)
    names = [r[0] for r in conn.execute("SELECT name FROM migrations ORDER BY name")]
    conn.close()
    assert names == [name for name, _ in MIGRATIONS]
    again.close()


def test_a_note_away_from_its_usual_path_keeps_its_path_and_id(
    vault: Vault, vault_path: Path, tmp_path: Path
) -> None:
    """Path and id are stored only for a note that is not ``<namespace>/<kind>/<id>.md``
    (named by hand); the index gives the right ones back either way."""
    usual = vault.create_handoff(to="codex", summary="u", context="c", namespace=NS, from_="a")
    other = Vault(tmp_path / "other", durable=False)
    other.init()
    h = other.create_handoff(to="codex", summary="s", context="c", namespace=NS, from_="a")
    m = other.save_memory(namespace=NS, title="renamed", content="a memory named by hand")
    other.close()
    h_path, m_path = f"{NS}/handoffs/named by hand.md", f"{NS}/memories/{m.id}-old.md"
    (vault.path / NS / "memories").mkdir()
    (other.path / h.path).rename(vault.path / h_path)
    (other.path / m.path).rename(vault.path / m_path)
    _later(vault.path / NS / "handoffs", vault.path / NS / "memories")
    assert vault.get_handoff(h.id).path == h_path
    assert vault.get_handoff(usual.id).path == usual.path
    assert [x.memory.path for x in vault.search_memory(query="renamed", limit=5)] == [m_path]
    conn = sqlite3.connect(vault_path / INDEX)
    try:
        stored = conn.execute(
            "SELECT id, own_path FROM handoffs UNION ALL SELECT id, own_path FROM memories"
        ).fetchall()
        files = conn.execute(
            "SELECT dir || '/' || name, own_id, note_id FROM files WHERE kind != 'brief'"
        ).fetchall()
    finally:
        conn.close()
    assert sorted(stored) == sorted([(usual.id, None), (h.id, h_path), (m.id, m_path)])
    assert sorted(files) == sorted(
        [(usual.path, None, usual.id), (h_path, h.id, h.id), (m_path, m.id, m.id)]
    )
    (vault.path / h_path).unlink()
    (vault.path / m_path).unlink()
    _later(vault.path / NS / "handoffs", vault.path / NS / "memories")
    assert [x.id for x in vault.list_handoffs(status="all", limit=10)] == [usual.id]
    assert vault.search_memory(query="renamed", limit=5).total == 0
    _integrity(vault_path)


def _later(*folders: Path) -> None:
    """Move the folders' mtimes on (a change within one tick of the mtime clock hides)."""
    for folder in folders:
        st = folder.stat()
        os.utime(folder, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


def _dump(vault_path: Path) -> list[object]:
    conn = sqlite3.connect(vault_path / INDEX)
    conn.create_function("amv_text", 1, _unpack)
    try:
        return [
            conn.execute(
                "SELECT id, status, read_at, summary, amv_text(context), path FROM handoffs "
                "ORDER BY id"
            ).fetchall(),
            conn.execute(
                "SELECT id, namespace, title, amv_text(body), tags FROM memories ORDER BY id"
            ).fetchall(),
            conn.execute(
                "SELECT dir, name, mtime_ns, size, kind, note_id, problem FROM files "
                "ORDER BY dir, name"
            ).fetchall(),
            conn.execute("SELECT path, mtime_ns FROM dirs ORDER BY path").fetchall(),
        ]
    finally:
        conn.close()


def test_reindex_by_worker_processes_matches_one_process(
    vault: Vault, vault_path: Path, clock: TickingClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(40):
        h = vault.create_handoff(
            to="codex", summary=f"h{i}", context=LONG, namespace=f"p/n{i % 3}", from_="a"
        )
        vault.save_memory(namespace=f"p/n{i % 3}", title=f"m{i}", content=f"word{i} {LONG}")
    (vault.path / "p/n0/handoffs/broken.md").write_text("---\ntype: handoff\nid: [unclosed\n---\n")
    # Ticked "read" in Obsidian: repaired (status and read_at) while indexing.
    note = vault.path / h.path
    note.write_text(note.read_text().replace("read: false", "read: true"))
    monkeypatch.setattr(scan, "PARALLEL_FROM", 10**9)
    report = vault.reindex()
    serial = _dump(vault_path)
    monkeypatch.setattr(scan, "PARALLEL_FROM", 10)
    again = vault.reindex()
    assert (
        (again.handoffs, again.memories, len(again.broken))
        == (
            report.handoffs,
            report.memories,
            len(report.broken),
        )
        == (40, 40, 1)
    )
    assert _dump(vault_path) == serial
    assert vault.get_handoff(h.id).status == "read"
    _integrity(vault_path)


def test_what_the_check_saw_is_not_trusted_once_the_folder_changed(vault: Vault) -> None:
    """The stamps ``stale_dirs`` collected are reused under the lock only while the
    folder's mtime holds: a note added in between must not be dropped."""
    h = vault.create_handoff(to="codex", summary="s", context="c", namespace=NS, from_="a")
    _edit_in_place(vault.path / h.path, "## Summary\ns", "## Summary\nedited")
    root = vault.path
    idx = vault._upkeep.handle()
    looked: dict[str, scan.Stamps] = {}
    folder = f"{NS}/handoffs"
    assert scan.stale_dirs(root, idx, (NS, "handoffs"), looked) == [folder]
    assert folder in looked
    later = vault.create_handoff(to="codex", summary="later", context="c", namespace=NS, from_="b")
    with idx.transaction():
        scan.sync_changed(root, idx, [folder], scan.ScanStats(), looked)
    assert idx.handoff(later.id) is not None
    edited = idx.handoff(h.id)
    assert edited is not None and edited.summary == "edited"


def test_a_note_edited_in_place_is_read_once_the_stamps_are_reused(vault: Vault) -> None:
    notes = [
        vault.create_handoff(to="codex", summary=f"s{i}", context="c", namespace=NS, from_="a")
        for i in range(5)
    ]
    for i, h in enumerate(notes):
        _edit_in_place(vault.path / h.path, f"## Summary\ns{i}", f"## Summary\nhand {i}")
        got = vault.peek_handoff(agent="codex", namespace=NS)
        assert got is not None
        assert got.summary == ("hand 4" if i == 4 else "s4")
        assert vault.get_handoff(h.id).summary == f"hand {i}"


def test_a_script_without_a_main_guard_reindexes_without_running_twice(
    vault: Vault, vault_path: Path, tmp_path: Path
) -> None:
    # A spawned worker runs the main script's top level again: in a script
    # without `if __name__ == "__main__":` that would repeat its writes.
    for i in range(40):
        vault.save_memory(namespace=f"p/n{i % 3}", title=f"m{i}", content=f"word{i} {LONG}")
    ran = tmp_path / "ran.txt"
    script = tmp_path / "script.py"
    script.write_text(
        "from agent_mem_vault.vault import Vault\n"
        "from agent_mem_vault.vault.index import scan\n"
        f"with open({str(ran)!r}, 'a') as f:\n"
        "    f.write('ran\\n')\n"
        "scan.PARALLEL_FROM = 10\n"
        f"report = Vault({str(vault_path)!r}).reindex()\n"
        "print(report.memories)\n"
    )
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["40"]
    assert ran.read_text() == "ran\n"


def test_a_reused_folder_listing_keeps_a_note_another_process_added_meanwhile(
    vault: Vault, vault_path: Path
) -> None:
    # What `stale_dirs` saw before the lock is reused under it while the folder's
    # mtime holds; a note another process added and indexed in the same tick of
    # the mtime clock is missing from that listing and must not be dropped.
    first = vault.create_handoff(to="codex", summary="a", context="c", namespace=NS, from_="x")
    folder = f"{NS}/handoffs"
    looked = scan.stamp_dir(vault_path, folder)
    assert looked is not None
    before = os.stat(vault_path / folder)
    other = Vault(vault_path, durable=False)
    added = other.create_handoff(to="codex", summary="b", context="c", namespace=NS, from_="y")
    other.close()
    os.utime(vault_path / folder, ns=(before.st_atime_ns, before.st_mtime_ns))  # same tick
    idx = vault._upkeep.handle()
    with idx.transaction():
        scan.scan_dir(vault_path, idx, folder, scan.ScanStats(), looked=looked)
    assert set(idx.files_in(folder)) == {first.path, added.path}


def test_a_handoff_changed_in_place_is_indexed_as_a_reindex_would(
    vault: Vault, vault_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read, ack, reopen and supersede update the handoff's rows where they are; the
    index then holds exactly what a rebuild from the notes gives."""
    from agent_mem_vault.vault.folder.records import FileRecord
    from agent_mem_vault.vault.index.db import Index

    restated: list[bool] = []
    restate = Index._restate

    def counted(self: Index, record: FileRecord) -> bool:
        restated.append(restate(self, record))
        return restated[-1]

    monkeypatch.setattr(Index, "_restate", counted)
    a = vault.create_handoff(to="codex", summary="a", context="ctx a", namespace=NS, from_="x")
    b = vault.create_handoff(to="codex", summary="b", context="ctx b", namespace=NS, from_="x")
    assert restated == []  # a new note is inserted: not asked
    read = vault.read_handoff(agent="codex", namespace=NS)
    assert read is not None and read.id == b.id
    vault.reopen_handoff(b.id)
    vault.ack_handoff(a.id)
    c = vault.create_handoff(
        to="codex", summary="c", context="ctx c", namespace=NS, from_="x", supersedes=[b.id]
    )
    assert restated == [True, True, True, True]
    before = _dump(vault_path)
    handoffs = before[0]
    assert isinstance(handoffs, list)
    assert [row[:3] for row in handoffs] == [
        (a.id, "read", vault.get_handoff(a.id).read_at),
        (b.id, "read", vault.get_handoff(b.id).read_at),
        (c.id, "pending", None),
    ]
    vault.reindex()
    assert _dump(vault_path) == before
