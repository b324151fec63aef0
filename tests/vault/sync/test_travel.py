"""A vault that travels through a remote of its own: what goes, what comes back, merges."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent_mem_vault.core.errors import InvalidInputError, RemoteError, UnavailableError
from agent_mem_vault.vault import Vault
from agent_mem_vault.vault.format.notes import parse_note
from agent_mem_vault.vault.sync.routes import SYNC_DIR
from tests.git_remote import git, remote_tree

from .conftest import NS, Machine


def _wait_for(check: object, what: str, limit: float = 60.0) -> None:
    """Until ``check()`` is true (the syncer works in the background); no timing asserted."""
    deadline = time.monotonic() + limit
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.05)


def test_a_second_machine_that_joins_gets_the_notes_of_the_first(
    machine: Machine, remote: Path
) -> None:
    a, b = machine("a"), machine("b")
    h = a.create_handoff(to="codex", summary="Batch it", context="1000 rows", namespace=NS)
    m = a.save_memory(namespace=NS, title="Batches of 1000", content="Lock time < 50 ms")
    assert a.join_remote(str(remote)).ok
    report = b.join_remote(str(remote))
    assert report.ok
    assert [x.id for x in b.list_handoffs(namespace=NS)] == [h.id]
    assert b.search_memory(query="lock time")[0].memory.id == m.id


def test_a_write_goes_out_by_itself(machine: Machine, remote: Path) -> None:
    a = machine("a")
    a.join_remote(str(remote))
    h = a.create_handoff(to="codex", summary="S", context="C", namespace=NS)
    _wait_for(lambda: h.path in remote_tree(remote), "the syncer pushed the new handoff")
    a.ack_handoff(h.id)
    _wait_for(lambda: "status: read" in remote_tree(remote)[h.path], "the syncer pushed the ack")


def test_a_read_on_one_machine_is_read_on_the_other_after_a_sync(
    machine: Machine, remote: Path
) -> None:
    a, b = machine("a"), machine("b")
    a.join_remote(str(remote))
    h = a.create_handoff(to="codex", summary="S", context="C", namespace=NS)
    a.sync()
    b.join_remote(str(remote))
    taken = b.read_handoff(agent="codex", namespace=NS)
    assert taken is not None and taken.id == h.id
    # The remote took the claim before the read returned.
    assert "status: read" in remote_tree(remote)[h.path]
    a.sync()
    assert a.get_handoff(h.id).status == "read"
    assert a.read_handoff(agent="codex", namespace=NS) is None


def test_the_loser_of_a_race_gets_the_next_handoff_not_the_same(
    machine: Machine, remote: Path
) -> None:
    a, b = machine("a"), machine("b")
    a.join_remote(str(remote))
    older = a.create_handoff(to="codex", summary="older", context="C", namespace=NS)
    newer = a.create_handoff(to="codex", summary="newer", context="C", namespace=NS)
    a.sync()
    b.join_remote(str(remote))
    # Both machines see both pending; a takes the newest, b does not know yet.
    assert a.read_handoff(agent="codex", namespace=NS).id == newer.id  # type: ignore[union-attr]
    second = b.read_handoff(agent="codex", namespace=NS)
    assert second is not None and second.id == older.id
    assert b.read_handoff(agent="codex", namespace=NS) is None
    assert a.read_handoff(agent="codex", namespace=NS) is None


def test_a_read_with_the_remote_away_is_refused_and_the_handoff_stays(
    machine: Machine, remote: Path, tmp_path: Path
) -> None:
    a = machine("a")
    a.join_remote(str(remote))
    h = a.create_handoff(to="codex", summary="S", context="C", namespace=NS)
    a.sync()
    away = tmp_path / "away.git"
    remote.rename(away)
    before = (a.path / h.path).read_bytes()
    with pytest.raises(UnavailableError) as caught:
        a.read_handoff(agent="codex", namespace=NS)
    assert caught.value.code == "claim_unconfirmed"
    assert "peek_handoff" in caught.value.message and str(remote) in caught.value.message
    assert (a.path / h.path).read_bytes() == before
    assert a.peek_handoff(agent="codex", namespace=NS).id == h.id  # type: ignore[union-attr]
    away.rename(remote)
    assert a.read_handoff(agent="codex", namespace=NS).id == h.id  # type: ignore[union-attr]


def test_what_was_written_offline_goes_out_when_the_remote_is_back(
    machine: Machine, remote: Path, tmp_path: Path
) -> None:
    a = machine("a")
    a.join_remote(str(remote))
    away = tmp_path / "away.git"
    remote.rename(away)
    h = a.create_handoff(to="codex", summary="written offline", context="C", namespace=NS)
    report = a.sync()
    assert not report.ok and report.routes[0].error is not None
    assert report.routes[0].error.code in ("remote_not_found", "remote_unreachable")
    status = a.sync_status()[0]
    assert status.ahead >= 1 and status.error is not None
    away.rename(remote)
    _wait_for(lambda: h.path in remote_tree(remote), "the syncer retried and pushed")


def test_an_ack_on_one_machine_and_a_reopen_on_the_other_merge_by_fields(
    machine: Machine, remote: Path
) -> None:
    a, b = machine("a"), machine("b")
    a.join_remote(str(remote))
    h = a.create_handoff(to="codex", summary="S", context="C", namespace=NS)
    a.ack_handoff(h.id)
    a.sync()
    b.join_remote(str(remote))
    b.reopen_handoff(h.id)  # b: pending again
    note = a.path / h.path
    note.write_text(note.read_text().replace("\nC\n", "\nC, and a line a person added\n"))
    a.rescan()  # the vault sees the edit (a call reading the namespace would too)
    b.sync()
    a.sync()
    b.sync()
    for vault in (a, b):
        got = vault.get_handoff(h.id)
        assert got.status == "pending", vault
        assert "a line a person added" in got.context
    assert (a.path / h.path).read_bytes() == (b.path / h.path).read_bytes()


def test_superseding_on_two_machines_at_once_leaves_one_live_thread(
    machine: Machine, remote: Path
) -> None:
    a, b = machine("a"), machine("b")
    a.join_remote(str(remote))
    old = a.create_handoff(to="codex", summary="old", context="C", namespace=NS)
    a.sync()
    b.join_remote(str(remote))
    one = a.create_handoff(
        to="codex", summary="a's", context="C", namespace=NS, supersedes=[old.id]
    )
    two = b.create_handoff(
        to="codex", summary="b's", context="C", namespace=NS, supersedes=[old.id]
    )
    a.sync()
    b.sync()
    a.sync()
    newest, other = (one, two) if one.id > two.id else (two, one)
    for vault in (a, b):
        pending = vault.list_handoffs(namespace=NS, status="pending")
        assert [h.id for h in pending] == [newest.id], vault
        assert vault.get_handoff(old.id).superseded_by == newest.id
        assert vault.get_handoff(other.id).superseded_by == newest.id
        assert vault.doctor().problems == ()


def test_a_body_changed_on_both_machines_keeps_both_texts(machine: Machine, remote: Path) -> None:
    a, b = machine("a"), machine("b")
    a.join_remote(str(remote))
    m = a.save_memory(namespace=NS, title="T", content="first version")
    a.sync()
    b.join_remote(str(remote))
    for vault, words in ((a, "laptop words"), (b, "desktop words")):
        path = vault.path / m.path
        path.write_text(path.read_text().replace("first version", words))
        vault.rescan()
    a.sync()
    b.sync()
    a.sync()
    for vault in (a, b):
        folder = vault.path / NS / "memories"
        kept = sorted(folder.glob(f"{m.id}.conflict-*.md"))
        assert len(kept) == 1, vault
        texts = (folder / f"{m.id}.md").read_text() + kept[0].read_text()
        assert "laptop words" in texts and "desktop words" in texts
        assert "<<<<<<<" not in texts
        assert any("lost a merge" in p for p in vault.doctor().problems)
    assert sorted(p.name for p in (a.path / NS / "memories").iterdir()) == sorted(
        p.name for p in (b.path / NS / "memories").iterdir()
    )


def test_only_notes_travel(machine: Machine, remote: Path) -> None:
    a = machine("a")
    a.create_handoff(to="codex", summary="S", context="C", namespace=NS)
    (a.path / ".obsidian").mkdir()
    (a.path / ".obsidian" / "workspace.md").write_text("layout")
    (a.path / NS / "handoffs" / ".x.md.0123abcd.tmp").write_text("half")
    (a.path / NS / "picture.png").write_bytes(b"\x89PNG")
    a.join_remote(str(remote))
    paths = set(remote_tree(remote))
    assert paths, "the notes travelled"
    assert all(p.endswith(".md") for p in paths), paths
    assert not any(p.startswith((".", "_dashboards")) or "/." in p for p in paths), paths


def test_a_remote_url_with_a_password_is_refused(machine: Machine) -> None:
    a = machine("a")
    with pytest.raises(InvalidInputError) as caught:
        a.join_remote("https://me:hunter2@git.example/me/vault.git")
    assert caught.value.code == "remote_has_password"
    assert "hunter2" not in caught.value.message and "credential" in caught.value.message
    assert not (a.path / SYNC_DIR).exists()


def test_a_remote_that_is_not_there_at_join_changes_nothing(
    machine: Machine, tmp_path: Path
) -> None:
    a = machine("a")
    a.create_handoff(to="codex", summary="S", context="C", namespace=NS)
    with pytest.raises(RemoteError) as caught:
        a.join_remote(str(tmp_path / "nowhere.git"))
    assert caught.value.code == "remote_not_found"
    assert str(tmp_path / "nowhere.git") in caught.value.message
    assert not (a.path / SYNC_DIR / "config.json").exists()
    assert a.sync_status() == ()


def test_the_same_notes_whichever_machine_syncs_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two machines changed one note differently; a copy of the whole world syncs them in
    the other order: the remote and both vaults end with the same bytes."""
    monkeypatch.setenv("AGENT_MEM_VAULT_SYNC_AUTO", "off")  # the order is the test's
    first = tmp_path / "first"
    remote = first / "remote.git"
    git("init", "--quiet", "--bare", "--initial-branch=main", remote)
    x, y = _vault_of(first / "x"), _vault_of(first / "y")
    x.init()
    y.init()
    x.join_remote(str(remote))
    h = x.create_handoff(to="codex", summary="S", context="base", namespace=NS)
    m = x.save_memory(namespace=NS, title="T", content="base")
    x.sync()
    y.join_remote(str(remote))
    x.ack_handoff(h.id)
    y.reopen_handoff(h.id)
    y.ack_handoff(h.id)
    for vault, words in ((x, "one"), (y, "two")):
        for note in (h.path, m.path):
            path = vault.path / note
            path.write_text(path.read_text().replace("base", words))
        vault.rescan()
    x.close()
    y.close()
    second = tmp_path / "second"
    shutil.copytree(first, second)
    for name in ("x", "y"):
        for config in (f"{name}/{SYNC_DIR}/config.json", f"{name}/{SYNC_DIR}/vault.git/config"):
            path = second / config
            path.write_text(path.read_text().replace(str(first), str(second)))
    worlds = []
    for world, order in ((first, "xyxy"), (second, "yxyx")):
        vaults = {n: _vault_of(world / n) for n in "xy"}
        for name in order:
            assert vaults[name].sync().ok
        worlds.append(
            (
                remote_tree(world / "remote.git"),
                {n: _notes(v.path) for n, v in vaults.items()},
            )
        )
    assert worlds[0][0] == worlds[1][0]
    assert worlds[0][1]["x"] == worlds[0][1]["y"] == worlds[1][1]["x"] == worlds[1][1]["y"]


def _notes(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted((root / NS).rglob("*.md"))}


def test_a_vault_without_a_remote_imports_no_sync_code(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from agent_mem_vault.vault import Vault\n"
        f"v = Vault({str(tmp_path / 'v')!r}); v.init()\n"
        "h = v.create_handoff(to='codex', summary='S', context='C', namespace='p/x')\n"
        "v.read_handoff(agent='codex', namespace='p/x')\n"
        "v.doctor()\n"
        "print(sorted(m for m in sys.modules if m.startswith('agent_mem_vault.vault.sync')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
    assert not (tmp_path / "v" / SYNC_DIR).exists()


def test_an_edit_by_hand_travels_once_the_vault_has_seen_it(machine: Machine, remote: Path) -> None:
    a = machine("a")
    a.join_remote(str(remote))
    h = a.create_handoff(to="codex", summary="S", context="C", namespace=NS)
    a.sync()
    path = a.path / h.path
    path.write_text(path.read_text().replace("\nC\n", "\nC, edited in Obsidian\n"))
    a.list_handoffs(namespace=NS)  # a call that reads the namespace sees the edit
    a.sync()
    assert "edited in Obsidian" in remote_tree(remote)[h.path]
    note = parse_note(remote_tree(remote)[h.path])
    assert note is not None and note.meta["id"] == h.id


def test_a_second_remote_for_the_vault_is_refused(machine: Machine, remote: Path) -> None:
    a = machine("a")
    a.join_remote(str(remote))
    other = remote.parent / "other.git"
    git("init", "--quiet", "--bare", other)
    with pytest.raises(Exception) as caught:
        a.join_remote(str(other))
    assert getattr(caught.value, "code", None) == "sync_already"
    a.leave_remote()
    assert a.sync_status() == ()
    assert a.join_remote(str(other)).ok


def test_a_vault_that_joins_keeps_its_notes_and_the_remotes(machine: Machine, remote: Path) -> None:
    a, b = machine("a"), machine("b")
    ha = a.create_handoff(to="codex", summary="from a", context="C", namespace=NS)
    hb = b.create_handoff(to="codex", summary="from b", context="C", namespace=NS)
    a.join_remote(str(remote))
    b.join_remote(str(remote))
    a.sync()
    for vault in (a, b):
        ids = {h.id for h in vault.list_handoffs(namespace=NS)}
        assert ids == {ha.id, hb.id}, vault


def _vault_of(path: Path) -> Vault:
    return Vault(path, durable=False)


def test_an_edit_in_obsidian_on_one_machine_and_a_read_on_the_other_both_stay(
    machine: Machine, remote: Path
) -> None:
    a, b = machine("a"), machine("b")
    a.join_remote(str(remote))
    h = a.create_handoff(to="codex", summary="S", context="first words", namespace=NS)
    a.sync()
    b.join_remote(str(remote))
    assert b.read_handoff(agent="codex", namespace=NS).id == h.id  # type: ignore[union-attr]
    note = a.path / h.path  # meanwhile, a person edits the note on a
    note.write_text(note.read_text().replace("first words", "first words, and a person's"))
    a.list_handoffs(namespace=NS)
    a.sync()
    b.sync()
    for vault in (a, b):
        got = vault.get_handoff(h.id)
        assert got.status == "read" and "a person's" in got.context, vault
        assert not list((vault.path / NS / "handoffs").glob("*.conflict-*"))


def test_a_memory_updated_forgotten_or_purged_on_one_machine_is_so_on_the_other(
    machine: Machine, remote: Path
) -> None:
    a, b = machine("a"), machine("b")
    a.join_remote(str(remote))
    kept = a.save_memory(namespace=NS, title="Batches", content="of 1000")
    gone = a.save_memory(namespace=NS, title="A secret", content="hunter2")
    a.sync()
    b.join_remote(str(remote))
    newer = a.update_memory(kept.id, content="of 500")
    a.forget_memory(newer.id)
    a.forget_memory(gone.id, purge=True)
    a.sync()
    b.sync()
    assert b.get_memory(newer.id).status == "forgotten"
    assert b.get_memory(kept.id).superseded_by == newer.id
    assert not (b.path / gone.path).exists()
    assert gone.path not in remote_tree(remote)
