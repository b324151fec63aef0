"""A note that says ``private: true`` never leaves its machine (``vault/sync/gate.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_mem_vault.vault.format.notes import parse_note, render_note
from tests.cli_process import BIN, cli_env, run_process, succeeded
from tests.git_remote import git_env, remote_tree

from .conftest import NS, Machine
from .test_hold_back import remote_objects, sent_memory

PRIVATE = {"private": True}


@pytest.fixture(autouse=True)
def _no_syncer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_MEM_VAULT_SYNC_AUTO", "off")  # each push is the test's


def test_a_private_note_never_travels_and_is_no_problem(
    machine: Machine, remote: Path, tmp_path: Path
) -> None:
    a = machine("a")
    a.join_remote(str(remote))
    cli = cli_env(vault=a.path, **git_env(tmp_path / "home"), AGENT_MEM_VAULT_SYNC_AUTO="off")
    made = run_process(
        [BIN, "create", "--to", "codex", "-n", NS, "-s", "Mine", "-c", "salary talk", "--private"],
        env=cli,
    )
    assert made.returncode == 0 and made.stderr == ""  # kept home as asked: nothing to tell
    handoff = a.get_handoff(made.stdout.strip())
    memory = a.save_memory(namespace=NS, title="Diary", content="only for me", properties=PRIVATE)
    shared = a.save_memory(namespace=NS, title="Shared", content="for the team")
    assert a.held_back(memory.path) is None and a.held_back(handoff.path) is None
    assert a.sync().ok
    tree = remote_tree(remote)
    assert shared.path in tree
    assert handoff.path not in tree and memory.path not in tree
    objects = remote_objects(remote)
    assert b"salary talk" not in objects and b"only for me" not in objects
    status = succeeded(run_process([BIN, "sync", "--status"], env=cli)).stdout
    assert "2 private notes stay on this machine" in status and "held back" not in status
    doctor = run_process([BIN, "doctor"], env=cli)
    assert doctor.returncode == 0, doctor.stdout


def test_a_new_version_of_a_private_memory_is_private_too(machine: Machine, remote: Path) -> None:
    a = machine("a")
    a.join_remote(str(remote))
    m = a.save_memory(namespace=NS, title="Diary", content="day one", properties=PRIVATE)
    newer = a.update_memory(m.id, content="day two")
    assert "private: true" in (a.path / newer.path).read_text()
    a.sync()
    assert b"day two" not in remote_objects(remote) and newer.path not in remote_tree(remote)


def test_a_private_handoff_is_read_here_alone(machine: Machine, remote: Path) -> None:
    a = machine("a")
    a.join_remote(str(remote))
    h = a.create_handoff(to="codex", summary="Mine", context="C", namespace=NS, properties=PRIVATE)
    taken = a.read_handoff(agent="codex", namespace=NS)
    assert taken is not None and taken.id == h.id
    assert h.path not in remote_tree(remote)


def test_a_note_made_private_after_it_travelled_keeps_its_sent_version_there(
    machine: Machine, remote: Path
) -> None:
    a = machine("a")
    m, sent = sent_memory(a, remote, "the plan as sent")
    note = parse_note((a.path / m.path).read_text())
    assert note is not None
    (a.path / m.path).write_text(
        render_note({**note.meta, "private": True}, note.body + "\nand what stays here\n")
    )
    a.sync()
    assert remote_tree(remote)[m.path] == sent
    assert b"what stays here" not in remote_objects(remote)
