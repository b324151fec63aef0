"""Conflict copies that file-sync tools leave beside a note: merged, reported, never a handoff."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from agent_mem_vault.vault import Vault
from agent_mem_vault.vault.folder.copies import copy_of
from agent_mem_vault.vault.format.notes import apply_handoff, parse_note, render_note

from .conftest import NS


def _copy(vault: Vault, path: str, name: str, **changes: object) -> Path:
    """A copy of the note at ``path`` named ``name``, with lifecycle ``changes``."""
    text = (vault.path / path).read_text()
    note = parse_note(text)
    assert note is not None
    h = vault.get_handoff(note.meta["id"])
    meta = apply_handoff(note.meta, replace(h, **changes))  # type: ignore[arg-type]
    target = vault.path / path.rpartition("/")[0] / name
    target.write_text(render_note(meta, note.body))
    return target


@pytest.mark.parametrize(
    "name",
    [
        "{id}.sync-conflict-20260101-120000-ABCDEFG.md",
        "{id} (laptop's conflicted copy 2026-01-01).md",
        "{id} (Conflicted copy laptop 202601011200).md",
        "{id} 2.md",
    ],
)
def test_a_conflict_copy_is_merged_into_its_note_and_never_listed(vault: Vault, name: str) -> None:
    h = vault.create_handoff(to="codex", summary="S", context="C", namespace=NS, from_="a")
    copy = _copy(
        vault, h.path, name.format(id=h.id), status="read", read_at="2026-01-05T00:00:00.000Z"
    )
    listed = vault.list_handoffs(namespace=NS, status="all")
    assert [(x.id, x.status) for x in listed] == [(h.id, "read")]
    assert not copy.exists()
    assert vault.doctor().broken == ()


def test_a_copy_read_on_both_machines_is_reported_as_a_double_delivery(vault: Vault) -> None:
    h = vault.create_handoff(to="codex", summary="S", context="C", namespace=NS, from_="a")
    vault.ack_handoff(h.id)
    _copy(
        vault,
        h.path,
        f"{h.id}.sync-conflict-20260101-120000-ABCDEFG.md",
        status="read",
        read_at="2099-01-01T00:00:00.000Z",
    )
    vault.rescan()
    twice = vault.delivered_twice(NS, "codex")
    assert [t[0].id for t in twice] == [h.id]
    assert "2099-01-01T00:00:00.000Z" in twice[0][1]
    problems = vault.doctor().problems
    assert any(h.id in p and "also_read" in p for p in problems), problems


def test_a_copy_whose_body_lost_is_kept_as_a_conflict_note_doctor_lists(vault: Vault) -> None:
    h = vault.create_handoff(to="codex", summary="S", context="C", namespace=NS, from_="a")
    folder = vault.path / NS / "handoffs"
    text = (vault.path / h.path).read_text()
    (folder / f"{h.id} 2.md").write_text(text.replace("\nC\n", "\nC, as the laptop saw it\n"))
    (vault.path / h.path).write_text(text.replace("\nC\n", "\nC, as the desktop saw it\n"))
    vault.rescan()
    kept = sorted(folder.glob(f"{h.id}.conflict-*.md"))
    assert len(kept) == 1
    texts = {kept[0].read_text(), (vault.path / h.path).read_text()}
    assert any("laptop" in t for t in texts) and any("desktop" in t for t in texts)
    assert len(vault.list_handoffs(namespace=NS, status="all")) == 1
    assert any("lost a merge" in p for p in vault.doctor().problems)


def test_a_note_that_only_looks_like_a_copy_is_left_alone(vault: Vault) -> None:
    folder = vault.path / NS
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "Meeting.md").write_text("one\n")
    (folder / "Meeting 2.md").write_text("two\n")
    vault.rescan()
    assert (folder / "Meeting 2.md").read_text() == "two\n"
    assert copy_of("Meeting 2.md") is None
