"""The ``Vault`` service: bad input, memories, the brief, doctor, the public names."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import agent_mem_vault
import agent_mem_vault.vault as vault_pkg
from agent_mem_vault.core.errors import DataError, InvalidInputError, NotFoundError
from agent_mem_vault.vault import Vault
from agent_mem_vault.vault.folder.files import temp_path
from agent_mem_vault.vault.format.namespaces import MAX_CONTENT, MAX_SUMMARY
from agent_mem_vault.vault.format.notes import parse_note

from .conftest import NS, snapshot

GOOD: dict[str, Any] = {
    "to": "codex",
    "summary": "Batch the orders backfill",
    "context": "Start with 1000 rows.",
    "namespace": NS,
    "from_": "claude-code",
}


def test_public_names_are_pinned() -> None:
    assert agent_mem_vault.Vault is Vault
    assert set(vault_pkg.__all__) == {
        "Brief",
        "BrokenNote",
        "DoctorReport",
        "EmbeddingSettings",
        "Handoff",
        "HandoffStatus",
        "Memory",
        "ReindexReport",
        "Repair",
        "SearchHit",
        "SearchPage",
        "HandoffPage",
        "SearchHits",
        "SkippedNote",
        "Vault",
        "FilledNote",
        "MemoryPage",
        "MemoryStatus",
        "Origin",
    }


@pytest.mark.parametrize(
    ("change", "code", "words"),
    [
        ({"namespace": "../escape"}, "invalid_namespace", "'..'"),
        ({"namespace": "/etc/passwd"}, "invalid_namespace", "relative"),
        ({"namespace": "project//api"}, "invalid_namespace", "empty segment"),
        ({"namespace": "project/"}, "invalid_namespace", "empty segment"),
        ({"namespace": ""}, "invalid_namespace", "missing"),
        ({"namespace": "project/handoffs"}, "invalid_namespace", "reserved"),
        ({"namespace": "a/b c"}, "invalid_namespace", "not allowed"),
        ({"to": "co dex"}, "invalid_agent", "'co dex'"),
        ({"to": ""}, "invalid_agent", "missing"),
        ({"from_": "-x"}, "invalid_agent", "'-x'"),
        ({"summary": "   "}, "missing_field", "summary"),
        ({"context": ""}, "missing_field", "context"),
        ({"summary": "x" * (MAX_SUMMARY + 1)}, "too_large", "limit"),
        ({"context": "x" * (MAX_CONTENT + 1)}, "too_large", "200,000"),
        ({"summary": "a\n## Full Context\nb"}, "invalid_summary", "heading"),
        ({"supersedes": ["nope"]}, "invalid_id", "'nope'"),
    ],
)
def test_bad_input_gets_a_clear_error_naming_the_problem_and_writes_nothing(
    vault: Vault, change: dict[str, Any], code: str, words: str
) -> None:
    before = snapshot(vault.path)
    with pytest.raises(InvalidInputError) as info:
        vault.create_handoff(**{**GOOD, **change})
    assert info.value.code == code
    assert words in info.value.message
    assert snapshot(vault.path) == before


@pytest.mark.parametrize(
    ("call", "code"),
    [
        (lambda v: v.read_handoff(agent="codex", namespace=".."), "invalid_namespace"),
        (lambda v: v.peek_handoff(agent="a b", namespace=NS), "invalid_agent"),
        (lambda v: v.list_handoffs(status="done"), "invalid_status"),
        (lambda v: v.list_handoffs(limit=0), "invalid_limit"),
        (lambda v: v.ack_handoff("../../x"), "invalid_id"),
        (lambda v: v.save_memory(namespace=NS, title="", content="c"), "missing_field"),
        (lambda v: v.save_memory(namespace=NS, title="a\nb", content="c"), "invalid_title"),
        (lambda v: v.save_memory(namespace=NS, title="t", content="c", kind="Big"), "invalid_kind"),
        (
            lambda v: v.save_memory(namespace=NS, title="t", content="c", tags=["a b"]),
            "invalid_tag",
        ),
        (lambda v: v.search_memory(query="  !! "), "missing_field"),
    ],
)
def test_other_bad_input_is_refused_and_writes_nothing(vault: Vault, call: Any, code: str) -> None:
    before = snapshot(vault.path)
    with pytest.raises(InvalidInputError) as info:
        call(vault)
    assert info.value.code == code
    assert snapshot(vault.path) == before


def test_a_missing_vault_is_reported_with_what_to_do(tmp_path: Path) -> None:
    v = Vault(tmp_path / "nowhere")
    with pytest.raises(NotFoundError) as info:
        v.create_handoff(**GOOD)
    assert info.value.code == "vault_not_found"
    assert "agent-mem-vault init" in info.value.message
    assert not (tmp_path / "nowhere").exists()


def test_init_is_idempotent(vault: Vault) -> None:
    vault.create_handoff(**GOOD)
    before = snapshot(vault.path)
    report = vault.init()
    assert report.handoffs == 1
    assert snapshot(vault.path) == before


def test_durable_writes_work_the_same(vault_path: Path) -> None:
    v = Vault(vault_path, durable=True)
    v.init()
    h = v.create_handoff(**GOOD)
    got = v.read_handoff(agent="codex", namespace=NS)
    assert got is not None and got.id == h.id


def test_the_namespace_maps_to_folders_with_a_brief_note(vault: Vault) -> None:
    h = vault.create_handoff(**GOOD)
    assert (vault.path / "project" / "harbor-api" / "handoffs" / f"{h.id}.md").is_file()
    assert (vault.path / "project" / "harbor-api" / "_brief.md").is_file()


def test_save_memory_writes_a_note_and_search_finds_it_ranked(vault: Vault) -> None:
    best = vault.save_memory(
        namespace=NS,
        title="Backfill batches",
        content="Backfill the orders in batches of 1000; backfill lock time stayed low.",
        kind="decision",
        tags=["db"],
        agent="codex",
    )
    vault.save_memory(namespace=NS, title="Release", content="Backfill done by Friday.")
    vault.save_memory(namespace=NS, title="Unrelated", content="Nothing to see.")
    assert (vault.path / best.path).is_file()
    hits = vault.search_memory(query="backfill batches")
    assert [h.memory.id for h in hits] == [best.id]
    hits = vault.search_memory(query="backfill")
    assert len(hits) == 2 and hits[0].memory.id == best.id
    assert hits[0].score >= hits[1].score
    assert "[" in hits[0].snippet
    assert hits[0].memory.tags == ("db",) and hits[0].memory.kind == "decision"


def test_search_memory_falls_back_to_any_word_and_filters_by_namespace(vault: Vault) -> None:
    a = vault.save_memory(namespace=NS, title="Shard plan", content="split by tenant")
    b = vault.save_memory(namespace="project/other", title="Shard too", content="by region")
    # No memory has all three words: any word counts, and more matches rank higher.
    assert [h.memory.id for h in vault.search_memory(query="shard tenant nonsense")] == [a.id, b.id]
    assert [h.memory.id for h in vault.search_memory(query="shard", namespace="project/other")] == [
        b.id
    ]
    assert {h.memory.id for h in vault.search_memory(query="shard", namespace="project")} == {
        a.id,
        b.id,
    }
    # FTS syntax in a query is taken as words, not as a query language.
    assert vault.search_memory(query='shard" OR NEAR(') != []


def test_get_project_brief_joins_the_note_decisions_and_pending_handoffs(vault: Vault) -> None:
    vault.save_memory(namespace=NS, title="Use batches of 1000", content="c", kind="decision")
    vault.save_memory(namespace=NS, title="Just a note", content="c", kind="note")
    h = vault.create_handoff(**GOOD)
    brief_file = vault.path / NS / "_brief.md"
    text = brief_file.read_text(encoding="utf-8")
    brief_file.write_text(text.replace("Edit this note freely", "We deploy on Tuesdays"))
    brief = vault.get_project_brief(namespace=NS)
    assert "We deploy on Tuesdays" in brief.notes
    assert [m.title for m in brief.decisions] == ["Use batches of 1000"]
    assert [p.id for p in brief.pending] == [h.id]
    assert "Use batches of 1000" in brief.text and h.id in brief.text
    assert "Just a note" not in brief.text
    assert len(brief.text) < 4000


def test_a_brief_for_a_new_namespace_is_empty_but_valid(vault: Vault) -> None:
    brief = vault.get_project_brief(namespace="project/new")
    assert brief.decisions == () and brief.pending == ()
    assert "(none" in brief.text


def test_a_note_with_broken_frontmatter_is_reported_skipped_and_never_overwritten(
    vault: Vault,
) -> None:
    h = vault.create_handoff(**GOOD)
    note = vault.path / h.path
    broken = note.read_text(encoding="utf-8").replace("status: pending", "status: [oops")
    note.write_text(broken, encoding="utf-8")
    vault.rescan()
    assert vault.list_handoffs(namespace=NS, status="all") == []
    assert vault.read_handoff(agent="codex", namespace=NS) is None
    report = vault.doctor()
    assert not report.ok
    assert [b.path for b in report.broken] == [h.path]
    assert "YAML" in report.broken[0].problem
    with pytest.raises(NotFoundError):
        vault.ack_handoff(h.id)
    with pytest.raises(NotFoundError):
        vault.create_handoff(**GOOD, supersedes=[h.id])
    assert note.read_text(encoding="utf-8") == broken


def test_a_note_broken_after_indexing_is_refused_for_a_change_and_left_alone(
    vault: Vault,
) -> None:
    vault.rescan_interval = None
    h = vault.create_handoff(**GOOD)
    note = vault.path / h.path
    # Same size and mtime trick is not needed: the change is read from disk before writing.
    broken = note.read_text(encoding="utf-8").replace("read: false", "read: [")
    note.write_text(broken, encoding="utf-8")
    with pytest.raises(DataError) as info:
        vault.ack_handoff(h.id)
    assert info.value.code == "note_damaged"
    assert note.read_text(encoding="utf-8") == broken


def test_doctor_reports_a_copied_note_as_a_duplicate_id(vault: Vault) -> None:
    h = vault.create_handoff(**GOOD)
    copy = vault.path / NS / "handoffs" / "copy of it.md"
    copy.write_bytes((vault.path / h.path).read_bytes())
    report = vault.doctor()
    assert [b.path for b in report.broken] == [f"{NS}/handoffs/copy of it.md"]
    assert "duplicate id" in report.broken[0].problem
    assert vault.get_handoff(h.id).path == h.path


def test_doctor_on_a_healthy_vault_is_ok(vault: Vault) -> None:
    vault.create_handoff(**GOOD)
    vault.save_memory(namespace=NS, title="t", content="c")
    report = vault.doctor()
    assert report.ok, report
    assert (report.handoffs, report.memories, report.pending) == (1, 1, 1)


def test_search_ranks_every_match_by_bm25_not_only_the_newest(vault: Vault) -> None:
    old_best = vault.save_memory(namespace=NS, title="deploy deploy deploy", content="deploy")
    for i in range(30):
        vault.save_memory(namespace=NS, title=f"note {i}", content=f"deploy step {i}")
    hits = vault.search_memory(query="deploy", limit=3)
    assert hits[0].memory.id == old_best.id


def test_reindex_removes_only_the_temp_files_a_killed_write_left(vault: Vault) -> None:
    h = vault.create_handoff(**GOOD)
    folder = vault.path / NS / "handoffs"
    ours = Path(temp_path(str(vault.path / h.path), "0123abcd"))
    ours.write_text("half a note")
    someone_elses = [folder / ".draft.tmp", vault.path / ".obsidian" / ".ws.0123abcd.tmp"]
    someone_elses[1].parent.mkdir()
    for path in someone_elses:
        path.write_text("not ours")
    vault.reindex()
    assert not ours.exists()
    assert all(path.read_text() == "not ours" for path in someone_elses)


def test_doctor_removes_a_temp_file_a_killed_write_left_and_says_so(vault: Vault) -> None:
    h = vault.create_handoff(**GOOD)
    ours = Path(temp_path(str(vault.path / h.path), "0123abcd"))
    ours.write_text("half a note")
    report = vault.doctor()
    assert report.ok and not ours.exists()
    (repair,) = report.repairs
    assert (repair.what, repair.path) == ("cleaned", f"{NS}/handoffs/{ours.name}")
    assert "killed" in repair.why


def test_a_vault_whose_index_folder_is_a_file_gets_a_clear_error(tmp_path: Path) -> None:
    root = tmp_path / "v"
    root.mkdir()
    (root / ".agent-mem-vault").write_text("oops")
    for call in (Vault(root).init, lambda: Vault(root).create_handoff(**GOOD)):
        with pytest.raises(DataError) as info:
            call()
        assert info.value.code == "vault_damaged"
        assert "move the file away" in info.value.message
    assert sorted(p.name for p in root.iterdir()) == [".agent-mem-vault"]


def test_a_refused_create_in_a_new_namespace_leaves_no_folder_and_no_brief(vault: Vault) -> None:
    before = snapshot(vault.path)
    with pytest.raises(NotFoundError):
        vault.create_handoff(**{**GOOD, "namespace": "team/new/x", "supersedes": ["3kzzzzzzzzzz2"]})
    assert snapshot(vault.path) == before
    assert not (vault.path / "team").exists()


def test_every_note_the_vault_writes_ends_with_a_newline(vault: Vault) -> None:
    h = vault.create_handoff(**GOOD)
    vault.read_handoff(agent="codex", namespace=NS)
    m = vault.save_memory(namespace=NS, title="t", content="c", kind="decision")
    for path in (h.path, m.path, f"{NS}/_brief.md"):
        text = (vault.path / path).read_text(encoding="utf-8")
        assert text.endswith("\n") and not text.endswith("\n\n"), path


def test_the_vault_lock_is_released_after_every_refused_write(vault: Vault) -> None:
    import fcntl
    import os

    from agent_mem_vault.core.errors import ConflictError

    first = vault.create_handoff(**GOOD)
    vault.create_handoff(**GOOD, supersedes=[first.id])
    refusals: list[tuple[Callable[[], object], type[Exception]]] = [
        (lambda: vault.create_handoff(**GOOD, supersedes=["3kzzzzzzzzzz2"]), NotFoundError),
        (lambda: vault.reopen_handoff(first.id), ConflictError),
        (lambda: vault.ack_handoff("3kzzzzzzzzzz2"), NotFoundError),
    ]
    for call, error in refusals:
        with pytest.raises(error):
            call()
        # Another open file description: conflicts with any flock the vault still holds.
        fd = os.open(vault.path / ".agent-mem-vault" / "lock", os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)


def test_a_folder_is_a_vault_by_its_index_folder_or_its_dashboard_and_nothing_else(
    tmp_path: Path,
) -> None:
    from agent_mem_vault.vault.folder.layout import is_vault

    plain, by_dot, by_dashboard = tmp_path / "plain", tmp_path / "dot", tmp_path / "dash"
    (plain / "project").mkdir(parents=True)
    (plain / "project" / "_brief.md").write_text("notes of my own\n")
    (by_dot / ".agent-mem-vault").mkdir(parents=True)
    (by_dashboard / "_dashboards").mkdir(parents=True)
    (by_dashboard / "_dashboards" / "memory.base").write_text("views: []\n")
    assert (is_vault(plain), is_vault(by_dot), is_vault(by_dashboard)) == (False, True, True)
    assert not is_vault(tmp_path / "missing")
    before = snapshot(plain)
    for call in (
        lambda v: v.create_handoff(**GOOD),
        lambda v: v.list_handoffs(),
        lambda v: v.search_memory(query="notes"),
        lambda v: v.get_project_brief(namespace=NS),
        Vault.doctor,
        Vault.reindex,
    ):
        with pytest.raises(NotFoundError) as info:
            call(Vault(plain, durable=False))
        assert info.value.code == "vault_not_found"
    assert snapshot(plain) == before and not (plain / ".agent-mem-vault").exists()
    assert Vault(by_dashboard, durable=False).list_handoffs() == []


def test_extra_properties_are_written_never_replace_the_handoffs_own_and_survive_changes(
    vault: Vault,
) -> None:
    h = vault.create_handoff(
        to="codex",
        summary="s",
        context="c",
        namespace=NS,
        properties={"origin": "auto", "to": "mallory", "status": "read"},
    )
    vault.ack_handoff(h.id)
    note = parse_note((vault.path / h.path).read_text(encoding="utf-8"))
    assert note is not None
    assert note.meta["origin"] == "auto"
    assert (note.meta["to"], note.meta["status"]) == ("codex", "read")
