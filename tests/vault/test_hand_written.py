"""Notes a person writes by hand, with any or none of the vault's properties, count.

Each note is written straight to disk, as Obsidian or an editor would write it,
and is then listed, searched and briefed; the file stays as the person wrote it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent_mem_vault.vault import Vault
from agent_mem_vault.vault.format.hand_notes import path_id
from tests.other_user import needs_root, open_folder, run_as_nobody

from .conftest import NS, snapshot

__all__ = ["open_folder"]  # a fixture, used by name


def _write(vault: Vault, rel: str, text: str | bytes) -> Path:
    path = vault.path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_a_hand_written_memory_is_listed_searched_and_briefed(vault: Vault) -> None:
    note = _write(
        vault,
        f"{NS}/memories/batch-size.md",
        "---\ntype: memory\nkind: decision\n---\n"
        "# Batches of 1000\n\nLock time stays under 50 ms.\n",
    )
    before = note.read_bytes()
    hits = vault.search_memory(query="lock time", namespace=NS)
    assert [h.memory.title for h in hits] == ["Batches of 1000"]
    memory = hits[0].memory
    assert memory.id == path_id(f"{NS}/memories/batch-size.md")
    assert (memory.namespace, memory.kind, memory.content) == (
        NS,
        "decision",
        "Lock time stays under 50 ms.",
    )
    assert [m.id for m in vault.list_memories(namespace=NS)] == [memory.id]
    assert vault.get_memory(memory.id).path == f"{NS}/memories/batch-size.md"
    assert "Batches of 1000" in vault.get_project_brief(namespace=NS).text
    assert note.read_bytes() == before  # byte for byte as the person wrote it


def test_a_note_without_any_properties_counts_with_its_file_name_as_title(vault: Vault) -> None:
    note = _write(vault, f"{NS}/memories/tabs-not-spaces.md", "We indent with tabs.\n")
    os.utime(note, (1_700_000_000, 1_700_000_000))
    [memory] = vault.list_memories(namespace=NS)
    assert memory.title == "tabs-not-spaces"
    assert memory.content == "We indent with tabs."
    assert memory.created_at == "2023-11-14T22:13:20.000Z"  # the file's modification time
    assert note.read_text() == "We indent with tabs.\n"


def test_what_was_filled_in_is_information_in_doctor_not_a_problem(vault: Vault) -> None:
    _write(vault, f"{NS}/memories/my-note.md", "# Mine\n\ntext\n")
    report = vault.doctor()
    assert report.ok and not report.broken and not report.problems
    [filled] = report.filled
    assert filled.path == f"{NS}/memories/my-note.md"
    assert set(filled.filled) == {"type", "id", "namespace", "title", "created_at"}


def test_an_id_that_is_not_a_tid_is_replaced_and_said(vault: Vault) -> None:
    _write(vault, f"{NS}/memories/x.md", "---\nid: my-note\ntitle: T\n---\nbody\n")
    [memory] = vault.list_memories(namespace=NS)
    assert memory.id == path_id(f"{NS}/memories/x.md")
    assert "id" in vault.doctor().filled[0].filled


def test_a_hand_written_handoff_is_read_by_any_agent_and_then_carries_its_properties(
    vault: Vault,
) -> None:
    note = _write(vault, f"{NS}/handoffs/fix-login.md", "# Fix the login\n\nThe token expires.\n")
    listed = vault.list_handoffs(namespace=NS, agent="codex")
    assert [(h.summary, h.recipient, h.sender) for h in listed] == [
        ("Fix the login", "", "unknown")
    ]
    assert "Fix the login" in vault.get_project_brief(namespace=NS).text
    peeked = vault.peek_handoff(agent="gemini", namespace=NS)
    assert peeked is not None and peeked.context == "The token expires."
    got = vault.read_handoff(agent="codex", namespace=NS)
    assert got is not None and got.id == peeked.id and got.status == "read"
    text = note.read_text()
    # Changed on purpose (read): the note now holds what the index had given it.
    assert f'id: "{got.id}"' in text or f"id: {got.id}" in text
    assert "# Fix the login\n\nThe token expires.\n" in text
    again = vault.get_handoff(got.id)
    assert (again.status, again.created_at) == ("read", peeked.created_at)
    assert vault.peek_handoff(agent="codex", namespace=NS) is None


@pytest.mark.parametrize(
    ("name", "content", "problem"),
    [
        ("broken-yaml.md", "---\ntitle: [unclosed\n---\nbody\n", "not valid YAML"),
        ("picture.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary"),
        ("latin1.md", "caf\xe9\n".encode("latin-1"), "not UTF-8"),
    ],
)
def test_a_note_that_cannot_be_read_is_reported_by_name_and_the_rest_work(
    vault: Vault, name: str, content: str | bytes, problem: str
) -> None:
    vault.save_memory(namespace=NS, title="Works", content="still searched")
    _write(vault, f"{NS}/memories/{name}", content)
    assert [h.memory.title for h in vault.search_memory(query="searched")] == ["Works"]
    assert [m.title for m in vault.list_memories(namespace=NS)] == ["Works"]
    [broken] = vault.doctor().broken
    assert broken.path == f"{NS}/memories/{name}" and problem in broken.problem


@needs_root
def test_a_note_this_user_may_not_read_is_reported_by_name_and_the_rest_work(
    open_folder: Path,
) -> None:
    root = open_folder / "vault"
    vault = Vault(root, durable=False)
    vault.init()
    vault.save_memory(namespace="p/x", title="Works", content="readable")
    secret = _write(vault, "p/x/memories/secret.md", "# Secret\n")
    secret.chmod(0o600)  # root's alone: nobody may not read it
    for path in [root, *root.rglob("*")]:
        if path != secret:
            path.chmod(0o777 if path.is_dir() else 0o666)  # nobody may write the rest
    script = (
        "import sys\nfrom agent_mem_vault.vault import Vault\nv = Vault(sys.argv[1])\n"
        "print([m.title for m in v.list_memories(namespace='p/x')])\n"
        "print([b.path + ': ' + b.problem for b in v.doctor().broken])\n"
    )
    done = run_as_nobody(["-c", script, str(root)], home=open_folder)
    assert done.returncode == 0, done.stderr
    listed, broken = done.stdout.splitlines()
    assert listed == "['Works']"
    assert "p/x/memories/secret.md: cannot be read (Permission denied)" in broken


def test_a_note_outside_the_vaults_folders_without_a_type_is_left_alone(vault: Vault) -> None:
    _write(vault, "journal/2026-01-01.md", "# Monday\n")
    _write(vault, f"{NS}/memories/archive/old.md", "# Old\n")  # not right inside memories/
    assert vault.list_memories(status="all") == []
    report = vault.doctor()
    assert report.ok and report.filled == ()


def test_a_hand_written_note_in_a_folder_that_is_not_a_namespace_is_reported(
    vault: Vault,
) -> None:
    _write(vault, "My Notes/memories/idea.md", "# Idea\n")
    [broken] = vault.doctor().broken
    assert "'My Notes' is not a namespace" in broken.problem


def test_reading_hand_written_notes_writes_nothing_to_them(vault: Vault) -> None:
    _write(vault, f"{NS}/handoffs/todo.md", "---\nread: true\n---\n# Done already\n")
    _write(vault, f"{NS}/memories/m.md", "plain\n")
    before = snapshot(vault.path)
    vault.list_handoffs(namespace=NS, status="all")
    vault.search_memory(query="plain")
    vault.get_project_brief(namespace=NS)
    vault.doctor()
    assert snapshot(vault.path) == before
    [h] = vault.list_handoffs(namespace=NS, status="all")
    assert h.status == "read"  # the ticked box counts; no status is written into the note
