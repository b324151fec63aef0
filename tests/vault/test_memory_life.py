"""Memories have a life: listed, read, updated (a new version), forgotten, restored, purged."""

from __future__ import annotations

import pytest

from agent_mem_vault.core.errors import ConflictError, InvalidInputError, NotFoundError
from agent_mem_vault.vault import Vault
from agent_mem_vault.vault.format.notes import parse_note

from .conftest import NS, snapshot


def _save(vault: Vault, title: str, content: str = "c", **kw: object) -> str:
    return vault.save_memory(namespace=NS, title=title, content=content, **kw).id  # type: ignore[arg-type]


def _meta(vault: Vault, path: str) -> dict[str, object]:
    note = parse_note((vault.path / path).read_text(encoding="utf-8"))
    assert note is not None
    return note.meta


def test_list_memories_is_newest_first_by_namespace_kind_and_tag_and_paged(vault: Vault) -> None:
    ids = [
        _save(vault, f"m{i}", kind="decision" if i % 2 else "note", tags=[f"t{i % 3}"])
        for i in range(7)
    ]
    vault.save_memory(namespace="project/other", title="elsewhere", content="c")
    assert [m.id for m in vault.list_memories(namespace=NS)] == ids[::-1]
    assert [m.id for m in vault.list_memories(namespace=NS, kind="decision")] == ids[5::-2]
    assert [m.id for m in vault.list_memories(namespace=NS, tags=["t0"])] == [
        ids[6],
        ids[3],
        ids[0],
    ]
    assert len(vault.list_memories()) == 8
    page = vault.page_memories(namespace=NS, limit=3)
    assert (page.total, page.next_offset, [m.id for m in page.memories]) == (7, 3, ids[:3:-1])
    last = vault.page_memories(namespace=NS, limit=3, offset=6)
    assert (last.more, [m.id for m in last.memories]) == (False, [ids[0]])


def test_get_memory_returns_one_and_an_unknown_id_is_memory_not_found(vault: Vault) -> None:
    mid = _save(vault, "one", "the text")
    assert vault.get_memory(mid).content == "the text"
    with pytest.raises(NotFoundError) as err:
        vault.get_memory("3zzzzzzzzzzz2")
    assert err.value.code == "memory_not_found"


def test_update_makes_a_new_version_that_supersedes_the_old_which_stays_as_history(
    vault: Vault,
) -> None:
    old = _save(vault, "Batches of 1000", "Lock time under 50 ms", kind="decision", tags=["db"])
    new = vault.update_memory(old, content="Batches of 500: lock time rose", agent="codex")
    assert (new.title, new.kind, new.tags, new.agent) == (
        "Batches of 1000",
        "decision",
        ("db",),
        "codex",
    )
    assert new.supersedes == (old,) and new.status == "live"
    history = vault.get_memory(old)
    assert history.superseded_by == new.id and history.status == "superseded"
    assert history.content == "Lock time under 50 ms"  # still readable
    # One live version: search, the brief and the listing show the new one only.
    assert [h.memory.id for h in vault.search_memory(query="batches")] == [new.id]
    assert [m.id for m in vault.get_project_brief(namespace=NS).decisions] == [new.id]
    assert [m.id for m in vault.list_memories(namespace=NS)] == [new.id]
    assert [m.id for m in vault.list_memories(namespace=NS, status="superseded")] == [old]
    assert {m.id for m in vault.list_memories(namespace=NS, status="all")} == {old, new.id}
    # The whole vault's count of live memories leaves the history out too.
    assert (vault.page_memories().total, vault.page_memories(status="all").total) == (1, 2)


def test_a_memory_thread_is_wikilinked_both_ways(vault: Vault) -> None:
    old = _save(vault, "t")
    new = vault.update_memory(old, title="t2")
    assert _meta(vault, new.path)["supersedes"] == [f"[[{old}]]"]
    assert _meta(vault, vault.get_memory(old).path)["superseded_by"] == f"[[{new.id}]]"


def test_updating_a_superseded_version_is_refused_and_writes_nothing(vault: Vault) -> None:
    old = _save(vault, "t")
    new = vault.update_memory(old, content="v2")
    before = snapshot(vault.path)
    with pytest.raises(ConflictError) as err:
        vault.update_memory(old, content="v3")
    assert err.value.code == "memory_superseded" and new.id in err.value.message
    assert snapshot(vault.path) == before


def test_an_update_with_nothing_to_change_is_refused(vault: Vault) -> None:
    mid = _save(vault, "t")
    with pytest.raises(InvalidInputError, match="nothing to update"):
        vault.update_memory(mid)


def test_forget_takes_a_memory_out_of_search_and_the_brief_and_keeps_the_file(
    vault: Vault,
) -> None:
    mid = _save(vault, "Use the staging key", "rotate monthly", kind="decision")
    forgotten = vault.forget_memory(mid)
    assert forgotten.status == "forgotten" and forgotten.forgotten_at is not None
    assert vault.search_memory(query="staging") == []
    assert vault.get_project_brief(namespace=NS).decisions == ()
    assert vault.list_memories(namespace=NS) == []
    assert [m.id for m in vault.list_memories(namespace=NS, status="forgotten")] == [mid]
    assert vault.page_memories().total == 0
    assert (vault.path / forgotten.path).is_file()
    assert _meta(vault, forgotten.path)["forgotten_at"] == forgotten.forgotten_at
    assert vault.forget_memory(mid) == forgotten  # again: nothing changes
    with pytest.raises(ConflictError) as err:
        vault.update_memory(mid, content="x")
    assert err.value.code == "memory_forgotten"


def test_restore_brings_a_forgotten_memory_back(vault: Vault) -> None:
    mid = _save(vault, "Use the staging key", kind="decision")
    vault.forget_memory(mid)
    restored = vault.restore_memory(mid)
    assert restored.status == "live" and "forgotten_at" not in _meta(vault, restored.path)
    assert [h.memory.id for h in vault.search_memory(query="staging")] == [mid]
    assert [m.id for m in vault.get_project_brief(namespace=NS).decisions] == [mid]


def test_purge_deletes_the_note_for_a_secret_written_by_mistake(vault: Vault) -> None:
    mid = _save(vault, "AWS key", "AKIAIOSFODNN7EXAMPLE")
    memory = vault.get_memory(mid)
    purged = vault.forget_memory(mid, purge=True)
    assert purged.id == mid
    assert not (vault.path / memory.path).exists()
    assert vault.search_memory(query="AKIAIOSFODNN7EXAMPLE") == []
    assert vault.list_memories(status="all") == []
    with pytest.raises(NotFoundError):
        vault.get_memory(mid)
    assert vault.doctor().ok


def test_a_forgotten_or_superseded_memory_stays_so_through_a_reindex(vault: Vault) -> None:
    old = _save(vault, "findme one")
    new = vault.update_memory(old, content="findme two")
    gone = _save(vault, "findme three")
    vault.forget_memory(gone)
    vault.reindex()
    assert [h.memory.id for h in vault.search_memory(query="findme")] == [new.id]
    assert {m.status for m in vault.list_memories(status="all")} == {
        "live",
        "superseded",
        "forgotten",
    }


def test_forgotten_set_by_hand_in_obsidian_counts(vault: Vault) -> None:
    mid = _save(vault, "ticket")
    note = vault.path / vault.get_memory(mid).path
    text = note.read_text(encoding="utf-8")
    note.write_text(text.replace("tags: []", "forgotten_at: 2026-01-01\ntags: []"))
    assert vault.search_memory(query="ticket") == []
    assert vault.get_memory(mid).status == "forgotten"


def test_updating_a_hand_written_memory_keeps_its_id_and_its_body(vault: Vault) -> None:
    note = vault.path / NS / "memories" / "style.md"
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text("# Style\n\nTabs.\n", encoding="utf-8")
    [hand] = vault.list_memories(namespace=NS)
    new = vault.update_memory(hand.id, content="Spaces, four.")
    assert new.supersedes == (hand.id,)
    meta = _meta(vault, new.path)
    assert meta["supersedes"] == [f"[[{NS}/memories/style|{hand.id}]]"]  # resolves in Obsidian
    old = vault.get_memory(hand.id)  # the same id, time and text after its file changed
    assert (old.superseded_by, old.created_at) == (new.id, hand.created_at)
    assert (old.title, old.content) == ("Style", "Tabs.")
    assert note.read_text(encoding="utf-8").endswith("# Style\n\nTabs.\n")


def test_show_any_id_finds_the_handoff_or_the_memory(vault: Vault) -> None:
    mid = _save(vault, "a memory")
    hid = vault.create_handoff(to="codex", summary="s", context="c", namespace=NS).id
    assert vault.get_note(mid).id == mid
    assert vault.get_note(hid).id == hid
    with pytest.raises(NotFoundError) as err:
        vault.get_note("3zzzzzzzzzzz2")
    assert err.value.code == "note_not_found"
