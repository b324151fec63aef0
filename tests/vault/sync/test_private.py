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


# -- private ID: a note that exists, made private in place --------------------------------


def test_a_note_made_private_after_it_travelled_stops_its_changes_and_says_its_history_stays(
    machine: Machine, remote: Path, tmp_path: Path
) -> None:
    a = machine("a")
    m, sent = sent_memory(a, remote, "the plan as sent")
    cli = cli_env(vault=a.path, **git_env(tmp_path / "home"), AGENT_MEM_VAULT_SYNC_AUTO="off")
    said = succeeded(run_process([BIN, "private", m.id], env=cli)).stdout
    assert f"{m.path} stays on this machine from now on." in said
    assert "Its earlier versions stay on the vault's remote" in said
    assert "--remove-from-remote" in said and "git filter-repo --invert-paths" in said
    text = (a.path / m.path).read_text()
    assert "private: true" in text and "the plan as sent" in text  # nothing else changed
    again = succeeded(run_process([BIN, "private", m.id, "--json"], env=cli)).stdout
    assert '"changed": false' in again and '"travelled": true' in again

    (a.path / m.path).write_text(text.replace("as sent", "as it is now, mine"))
    a.sync()
    assert remote_tree(remote)[m.path] == sent
    assert b"as it is now, mine" not in remote_objects(remote)

    # Undone, it travels again with its next sync.
    succeeded(run_process([BIN, "private", m.id, "--undo"], env=cli))
    assert "private: true" not in (a.path / m.path).read_text()
    a.sync()
    assert "as it is now, mine" in remote_tree(remote)[m.path]


def test_remove_from_remote_deletes_it_there_and_keeps_it_here(
    machine: Machine, remote: Path, tmp_path: Path
) -> None:
    a = machine("a")
    m, _sent = sent_memory(a, remote, "a plan the team should not keep")
    b = machine("b")
    assert b.join_remote(str(remote)).ok
    assert (b.path / m.path).exists()

    cli = cli_env(vault=a.path, **git_env(tmp_path / "home"), AGENT_MEM_VAULT_SYNC_AUTO="off")
    said = succeeded(run_process([BIN, "private", m.id, "--remove-from-remote"], env=cli)).stdout
    assert "Its next sync takes it off the vault's remote" in said
    assert a.sync().ok
    assert m.path not in remote_tree(remote)
    assert "a plan the team should not keep" in (a.path / m.path).read_text()  # kept here
    assert b.sync().ok
    assert not (b.path / m.path).exists()  # the teammate's copy goes with it

    # A later change stays here too, and the remote does not get it back.
    a.update_memory(m.id, content="still mine")
    assert a.sync().ok
    assert not any("still mine" in t for t in remote_tree(remote).values())

    mixed = run_process([BIN, "private", m.id, "--undo", "--remove-from-remote"], env=cli)
    assert mixed.returncode == 2 and "cannot go with --undo" in mixed.stderr


# -- patterns: a namespace, a folder, a kind of note ---------------------------------------


def test_a_private_namespace_keeps_its_notes_and_its_reads_home(
    machine: Machine, remote: Path, tmp_path: Path
) -> None:
    personal = "project/personal"
    b = machine("b")  # a machine of the same person, before the pattern was set
    assert b.join_remote(str(remote)).ok
    earlier = b.create_handoff(to="codex", summary="Earlier", context="C", namespace=personal)
    assert b.sync().ok

    a = machine("a")
    assert a.join_remote(str(remote)).ok
    cli = cli_env(vault=a.path, **git_env(tmp_path / "home"), AGENT_MEM_VAULT_SYNC_AUTO="off")
    said = succeeded(run_process([BIN, "private", "add", f"{personal}/**"], env=cli)).stdout
    assert f"Notes matching {personal}/** are kept on this machine." in said
    assert "A remote has 2 of them already" in said and earlier.path in said  # and its brief
    listed = succeeded(run_process([BIN, "private", "list"], env=cli)).stdout
    assert listed.split() == [f"{personal}/**"]

    mine = a.create_handoff(to="codex", summary="Mine", context="salary talk", namespace=personal)
    team = a.create_handoff(to="codex", summary="Team", context="for all", namespace=NS)
    assert a.sync().ok
    tree = remote_tree(remote)
    assert team.path in tree and mine.path not in tree
    assert b"salary talk" not in remote_objects(remote)

    # Its reads stay here: the one that arrived earlier is read here alone.
    first = a.read_handoff(agent="codex", namespace=personal)
    second = a.read_handoff(agent="codex", namespace=personal)
    assert {first.id, second.id} == {earlier.id, mine.id}  # type: ignore[union-attr]
    assert a.sync().ok
    assert "status: pending" in remote_tree(remote)[earlier.path]

    status = succeeded(run_process([BIN, "sync", "--status"], env=cli)).stdout
    assert "private notes stay on this machine" in status


def test_a_path_pattern_keeps_the_notes_it_matches_and_lets_the_rest_go(
    machine: Machine, remote: Path, tmp_path: Path
) -> None:
    a = machine("a")
    assert a.join_remote(str(remote)).ok
    added, travelled = a.add_private_pattern("*/harbor-api/memories/*.md")
    assert added and travelled == []
    assert a.add_private_pattern("*/harbor-api/memories/*.md") == (False, [])
    memory = a.save_memory(namespace=NS, title="Draft", content="half a thought")
    handoff = a.create_handoff(to="codex", summary="Go", context="C", namespace=NS)
    assert a.sync().ok
    tree = remote_tree(remote)
    assert handoff.path in tree and memory.path not in tree
    assert a.read_handoff(agent="codex", namespace=NS) is not None  # still claimed remotely

    # Removed, what it held goes out at the next sync, with no change of its own.
    a.remove_private_pattern("*/harbor-api/memories/*.md")
    assert a.sync().ok
    assert memory.path in remote_tree(remote)

    cli = cli_env(vault=a.path, **git_env(tmp_path / "home"), AGENT_MEM_VAULT_SYNC_AUTO="off")
    for bad in ("/etc/**", "a/../b/*.md", "a//b", ""):
        refused = run_process([BIN, "private", "add", bad], env=cli)
        assert refused.returncode == 2 and "invalid_pattern" in refused.stderr, bad
    gone = run_process([BIN, "private", "remove", "nothing/**"], env=cli)
    assert gone.returncode == 3 and "private list" in gone.stderr
    assert a.private_patterns() == ()


def test_the_mcp_tools_write_a_private_note_when_asked(
    machine: Machine, remote: Path, tmp_path: Path
) -> None:
    from tests.mcp_wire import serving

    a = machine("a")
    assert a.join_remote(str(remote)).ok
    env = {**git_env(tmp_path / "home"), "AGENT_MEM_VAULT_SYNC_AUTO": "off"}
    with serving(a.path, "--agent", "claude-code", "--namespace", NS, env=env) as server:
        saved = server.call(
            1, "save_memory", {"title": "Diary", "content": "only for me", "private": True}
        )
        made = server.call(
            2,
            "create_handoff",
            {"to": "codex", "summary": "Mine", "context": "salary talk", "private": True},
        )
        shared = server.call(3, "save_memory", {"title": "Shared", "content": "for the team"})
    for answer in (saved, made, shared):
        assert not answer.get("isError"), answer
        assert "held_back" not in answer["structuredContent"]  # as asked: nothing to tell
    private_paths = [
        saved["structuredContent"]["memory"]["path"],
        made["structuredContent"]["handoff"]["path"],
    ]
    for path in private_paths:
        assert "private: true" in (a.path / path).read_text()
    assert a.sync().ok
    tree = remote_tree(remote)
    assert shared["structuredContent"]["memory"]["path"] in tree
    assert not any(p in tree for p in private_paths)
