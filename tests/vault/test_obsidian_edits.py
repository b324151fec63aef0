"""Edits a person makes in Obsidian are honoured, never punished as "broken".

Each edit is made the way Obsidian saves: in place, with no rename, so the
folder's mtime does not change; the next call that reads the namespace sees it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_mem_vault.vault import Vault
from agent_mem_vault.vault.format.notes import parse_note
from tests.by_hand import save_in_place

from .conftest import NS


def _tick(note: Path, ticked: bool) -> None:
    text = note.read_text(encoding="utf-8")
    before, after = ("read: false", "read: true") if ticked else ("read: true", "read: false")
    assert before in text
    save_in_place(note, text.replace(before, after))


def _meta(note: Path) -> dict[str, object]:
    parsed = parse_note(note.read_text(encoding="utf-8"))
    assert parsed is not None
    return parsed.meta


def test_ticking_read_in_obsidian_counts_as_read(vault: Vault) -> None:
    h = vault.create_handoff(to="codex", summary="s", context="c", namespace=NS, from_="a")
    note = vault.path / h.path
    _tick(note, True)  # status: pending is left as it was
    assert vault.peek_handoff(agent="codex", namespace=NS) is None
    got = vault.get_handoff(h.id)
    assert got.status == "read" and got.read_at is not None
    assert vault.list_handoffs(status="read")[0].id == h.id
    meta = _meta(note)  # made consistent on that touch
    assert (meta["status"], meta["read"], meta["read_at"]) == ("read", True, got.read_at)
    assert vault.doctor().ok


def test_unticking_read_in_obsidian_makes_it_pending_again(vault: Vault) -> None:
    h = vault.create_handoff(to="codex", summary="s", context="c", namespace=NS, from_="a")
    assert vault.read_handoff(agent="codex", namespace=NS) is not None
    note = vault.path / h.path
    _tick(note, False)
    got = vault.read_handoff(agent="codex", namespace=NS)
    assert got is not None and got.id == h.id
    assert vault.get_handoff(h.id).status == "read"


def test_an_unticked_note_is_repaired_on_disk_without_read_at(vault: Vault) -> None:
    h = vault.create_handoff(to="codex", summary="s", context="c", namespace=NS, from_="a")
    vault.ack_handoff(h.id)
    note = vault.path / h.path
    _tick(note, False)
    assert vault.peek_handoff(agent="codex", namespace=NS) is not None
    meta = _meta(note)
    assert (meta["status"], meta["read"], "read_at" in meta) == ("pending", False, False)


def test_a_repair_keeps_the_body_and_properties_a_person_added(vault: Vault) -> None:
    h = vault.create_handoff(to="codex", summary="s", context="c", namespace=NS, from_="a")
    note = vault.path / h.path
    text = note.read_text(encoding="utf-8").replace("read: false", "read: true\npriority: high")
    text += "\nA line a person added.\n"
    save_in_place(note, text)
    vault.list_handoffs(namespace=NS, status="all")
    after = note.read_text(encoding="utf-8")
    assert "priority: high" in after and after.endswith("\nA line a person added.\n")
    assert "status: read" in after


def test_a_repair_is_seen_by_a_vault_opened_after_it(vault: Vault) -> None:
    h = vault.create_handoff(to="codex", summary="s", context="c", namespace=NS, from_="a")
    _tick(vault.path / h.path, True)
    vault.rescan()
    other = Vault(vault.path)
    assert other.get_handoff(h.id).status == "read"
    assert other.rescan().changed == 0  # the repair left nothing for another scan to do


def test_a_reindex_repairs_disagreeing_notes_too(vault: Vault) -> None:
    h = vault.create_handoff(to="codex", summary="s", context="c", namespace=NS, from_="a")
    _tick(vault.path / h.path, True)
    report = vault.reindex()
    assert report.broken == ()
    assert _meta(vault.path / h.path)["status"] == "read"


def test_only_a_note_that_cannot_be_understood_is_broken(vault: Vault) -> None:
    h = vault.create_handoff(to="codex", summary="s", context="c", namespace=NS, from_="a")
    note = vault.path / h.path
    text = note.read_text(encoding="utf-8").replace("status: pending", "status: done")
    save_in_place(note, text.replace("read: false\n", ""))
    report = vault.doctor()
    assert [b.path for b in report.broken] == [h.path]
    assert "status" in report.broken[0].problem


@pytest.mark.parametrize("new_name", ["0 renamed.md", "zz renamed.md"])
def test_a_note_renamed_by_hand_keeps_its_place(vault: Vault, new_name: str) -> None:
    # Read before or after its old path is forgotten (names sorting either side of
    # the TID), the renamed note is the same handoff, never a broken copy of itself.
    h = vault.create_handoff(to="codex", summary="s", context="c", namespace=NS, from_="a")
    old = vault.path / h.path
    old.rename(old.with_name(new_name))
    listed = vault.list_handoffs(namespace=NS, status="all")
    assert [(x.id, x.path) for x in listed] == [(h.id, f"{NS}/handoffs/{new_name}")]
    assert vault.doctor().broken == ()


def test_a_note_moved_to_another_namespace_by_hand_is_not_broken(vault: Vault) -> None:
    h = vault.create_handoff(to="codex", summary="s", context="c", namespace=NS, from_="a")
    vault.create_handoff(to="codex", summary="t", context="c", namespace="aaa/first", from_="a")
    moved = vault.path / "aaa" / "first" / "handoffs" / f"{h.id}.md"
    (vault.path / h.path).rename(moved)
    # The folder it moved to sorts first: it is read while the old path is still known.
    assert vault.peek_handoff(agent="codex", namespace="aaa/first") is not None
    got = vault.get_handoff(h.id)
    assert got.path == f"aaa/first/handoffs/{h.id}.md"
    assert vault.doctor().broken == ()
