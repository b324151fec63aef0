"""A log per machine where it is hardest (docs/sync.md): a fetch stopped half-way, a
claim ref made again after a reopen, a log let go while a machine was away, three
edits of one note at once, claims a checkpoint holds, and a branch route settling a
stopped read. Each would deliver a handoff twice or lose an edit if mishandled."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from agent_mem_vault.core.errors import UnavailableError
from agent_mem_vault.vault import Handoff, Vault
from agent_mem_vault.vault.format.notes import render_note
from agent_mem_vault.vault.sync import inflight, team, team_checkpoint
from agent_mem_vault.vault.sync.engine import RouteSync
from agent_mem_vault.vault.sync.fold import Change, FoldStore
from agent_mem_vault.vault.sync.journal import note_changes
from agent_mem_vault.vault.sync.prune import IDLE, prune_claims, prune_logs
from agent_mem_vault.vault.sync.routes import load_config
from agent_mem_vault.vault.sync.team_claim import GRACE
from agent_mem_vault.vault.sync.trees import object_id
from tests.git_remote import git

from .conftest import NS, Machine


@pytest.fixture(autouse=True)
def _layout_two(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_MEM_VAULT_SYNC_AUTO", "off")  # each push is the test's
    monkeypatch.setenv("AGENT_MEM_VAULT_SYNC_LAYOUT", "2")


def _sync(vault: Vault) -> RouteSync:
    config = load_config(vault.path)
    assert config is not None and config.vault_route is not None
    return RouteSync(vault, config, config.vault_route)


def _refs(remote: Path, kind: str) -> list[str]:
    out = git("for-each-ref", "--format=%(refname)", "refs/agent-mem-vault-sync/", cwd=remote)
    return [r.rsplit("/", 1)[-1] for r in out.split() if f"/{kind}/" in r]


def test_a_fetch_stopped_between_the_fold_and_its_commit_is_folded_again(
    machine: Machine, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = machine("a"), machine("b")
    a.join_remote(str(remote))
    b.join_remote(str(remote))
    h = a.create_handoff(to="codex", summary="S", context="C", namespace=NS)
    a.sync()
    b.sync()
    taken = a.read_handoff(agent="codex", namespace=NS)
    assert taken is not None and taken.id == h.id

    def stopped(*_args: object, **_kw: object) -> str:
        raise KeyboardInterrupt("the process stops here")

    real = team.edited_tree
    monkeypatch.setattr(team, "edited_tree", stopped)
    with pytest.raises(KeyboardInterrupt):
        b.sync()  # the store took a's read; ``fetched`` did not
    monkeypatch.setattr(team, "edited_tree", real)
    b.sync()
    assert b.get_handoff(h.id).status == "read"
    sa, now = _sync(a), time.time() + 61
    with sa.network_turn():
        prune_claims(sa, 20.0, now=now)
        assert prune_claims(sa, 20.0, now=now + GRACE + 61) == 1
    b.sync()
    assert b.read_handoff(agent="codex", namespace=NS) is None  # never twice


def test_a_claim_ref_made_again_after_a_reopen_waits_out_its_own_grace(
    machine: Machine, remote: Path
) -> None:
    a, b, c = machine("a"), machine("b"), machine("c")
    for vault in (a, b, c):
        vault.join_remote(str(remote))
    h = a.create_handoff(to="codex", summary="S", context="C", namespace=NS)
    for vault in (a, b, c):
        vault.sync()
    first = a.read_handoff(agent="codex", namespace=NS)
    assert first is not None and first.id == h.id
    c.sync()
    sc, start = _sync(c), time.time() + 61
    with sc.network_turn():
        prune_claims(sc, 20.0, now=start)  # c first sees a's claim ref
    a.reopen_handoff(h.id)
    a.sync()  # the reopen takes a's claim ref away
    b.sync()
    again = b.read_handoff(agent="codex", namespace=NS)
    assert again is not None and again.id == h.id  # b's agent has it now
    with sc.network_turn():
        sc.fetch()  # c folds b's entry (a fetch alone: its sync would prune at its own time)
        assert prune_claims(sc, 20.0, now=start + GRACE + 1) == 0  # b's ref is new
    assert _refs(remote, "_claim") == [h.id]
    assert a.read_handoff(agent="codex", namespace=NS) is None  # never twice


@pytest.mark.parametrize("word", ["alpha", "beta"])
def test_a_log_let_go_while_a_machine_was_away_loses_no_edit(
    machine: Machine, remote: Path, monkeypatch: pytest.MonkeyPatch, word: str
) -> None:
    a, b, c = machine("a"), machine("b"), machine("c")
    for vault in (a, b, c):
        vault.join_remote(str(remote))
    memory = a.save_memory(namespace=NS, title="T", content="first version\n")
    a.sync()
    c.save_memory(namespace=NS, title="from c", content="c\n")  # c: a CI job, writes once
    c.sync()
    b.sync()  # b has every log, then goes away
    note = a.path / memory.path
    note.write_text(note.read_text().replace("first version", f"second version {word}"))
    note_changes(a.path, [memory.path])
    monkeypatch.setattr(team_checkpoint, "EVERY", 1)
    a.sync()  # a checkpoint
    a.sync()  # adopted
    sa, now = _sync(a), time.time()
    with sa.network_turn():
        prune_logs(sa, 20.0, now=now)
        assert prune_logs(sa, 20.0, now=now + IDLE + 1) == 1  # c's log goes
    b.sync()  # b is back: c's log went, but the checkpoint holds it
    a.sync()
    assert f"second version {word}" in note.read_text()
    assert not [p for p in (a.path / NS / "memories").iterdir() if "conflict" in p.name]
    assert (b.path / memory.path).read_bytes() == note.read_bytes()


def test_three_edits_of_one_note_at_once_keep_both_losing_sides(tmp_path: Path) -> None:
    path = f"{NS}/memories/3l6qyvzp7ns2c.md"

    def text(body: str) -> str:
        meta = {"type": "memory", "id": "3l6qyvzp7ns2c", "namespace": NS, "title": "T"}
        return render_note(meta, f"## Summary\nT\n\n## Full Context\n{body}\n")

    def blob(t: str) -> str:
        return object_id(b"blob", t.encode(), 40)

    base, edits = text("v0"), [text(f"edited on {m}") for m in "abc"]
    known = {blob(t): t for t in [base, *edits]}

    class Texts:
        def texts(self, blobs: object) -> dict[str, str]:
            return {b: known[b] for b in blobs}  # type: ignore[attr-defined]

        def write(self, t: str) -> str:
            known[blob(t)] = t
            return blob(t)

    changes = [
        Change(5, m, 1, "c" * 40, path, blob(base), blob(e))
        for m, e in zip("abc", edits, strict=True)
    ]
    store = FoldStore(tmp_path / "fold.sqlite")
    try:
        out = store.fold(changes, {}, lambda ps: {p: blob(base) for p in ps}, Texts())
    finally:
        store.close()
    live = known[out.blobs[path] or ""]
    kept = out.kept[path]
    assert len(kept) == 2
    for m in "abc":  # each edit is in the note or in a conflict note
        assert f"edited on {m}" in live or any(f"edited on {m}" in k for k in kept), m


def test_claim_refs_a_checkpoint_holds_are_pruned_too(
    machine: Machine, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = machine("a"), machine("b")
    a.join_remote(str(remote))
    b.join_remote(str(remote))
    h = a.create_handoff(to="codex", summary="S", context="C", namespace=NS)
    a.sync()
    b.sync()
    taken = b.read_handoff(agent="codex", namespace=NS)
    assert taken is not None and taken.id == h.id
    monkeypatch.setattr(team_checkpoint, "EVERY", 1)
    a.save_memory(namespace=NS, title="x", content="x\n")
    a.sync()  # a checkpoint that holds b's claim entry
    a.sync()  # adopted: a's store starts after it
    sa, now = _sync(a), time.time() + 61
    with sa.network_turn():
        prune_claims(sa, 20.0, now=now)
        assert prune_claims(sa, 20.0, now=now + GRACE + 61) == 1
    assert _refs(remote, "_claim") == []


def test_a_branch_route_settling_a_stopped_read_takes_nothing_twice(
    machine: Machine, remote: Path
) -> None:
    a, b = machine("a"), machine("b")
    for vault in (a, b):
        vault.join_remote(str(remote), branch="agent-mem-vault/notes")
    h = a.create_handoff(to="codex", summary="S", context="C", namespace=NS)
    a.sync()
    b.sync()
    first = a.read_handoff(agent="codex", namespace=NS)
    assert first is not None and first.id == h.id
    sb = _sync(b)
    state = sb.state()  # a read of b's that stopped, long ago, left its record
    state["inflight"] = {
        "zzz": {
            "path": f"{NS}/handoffs/zzz.md",
            "before": None,
            "pid": 2**22 + 7,
            "entry": "1" * 40,
        }
    }
    sb.save_state(state)
    assert b.read_handoff(agent="codex", namespace=NS) is None  # b's view was seconds old
    a.save_memory(namespace=NS, title="later", content="x\n")
    a.sync()
    b.sync()
    assert any(m.title == "later" for m in b.list_memories(namespace=NS))  # nothing skipped


def _read_whose_answer_is_lost(
    machine: Machine, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Vault, Vault, Handoff]:
    """Machines a and b; a's handoff, read on b by a claim that landed on the remote while
    its answer did not come in time, so b's agent was told no (``claim_unconfirmed``)."""
    a, b = machine("a"), machine("b")
    a.join_remote(str(remote))
    b.join_remote(str(remote))
    h = a.create_handoff(to="codex", summary="S", context="C", namespace=NS)
    a.sync()
    b.sync()
    hook = remote / "hooks" / "post-receive"  # runs once the refs have moved
    hook.write_text("#!/bin/sh\nsleep 4\n")
    hook.chmod(0o755)
    monkeypatch.setenv("AGENT_MEM_VAULT_SYNC_TIMEOUT", "1")
    with pytest.raises(UnavailableError) as caught:
        b.read_handoff(agent="codex", namespace=NS)
    assert caught.value.code == "claim_unconfirmed"
    assert _refs(remote, "_claim") == [h.id]  # it landed all the same; its agent was told no
    hook.unlink()
    monkeypatch.delenv("AGENT_MEM_VAULT_SYNC_TIMEOUT")
    return a, b, h


def test_a_read_never_says_nothing_is_pending_while_its_lost_claim_may_still_stand(
    machine: Machine, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b, h = _read_whose_answer_is_lost(machine, remote, monkeypatch)

    # The remote answers a fetch, then not the question of whose claim stands (it went
    # away in between): the read cannot undo that claim, and must not say "none".
    def no_answer(*_args: object, **_kwargs: object) -> dict[str, str]:
        raise UnavailableError("the remote did not answer", code="remote_unreachable")

    with monkeypatch.context() as patch:
        patch.setattr(inflight, "claims_on_remote", no_answer)
        with pytest.raises(UnavailableError) as caught:
            b.read_handoff(agent="codex", namespace=NS)
    assert caught.value.code == "claim_unconfirmed" and h.id in caught.value.message
    # Once it answers, the claim is undone there and the handoff taken, once.
    again = b.read_handoff(agent="codex", namespace=NS)
    assert again is not None and again.id == h.id
    a.sync()
    assert a.read_handoff(agent="codex", namespace=NS) is None


def test_a_read_whose_answer_was_lost_is_undone_on_the_remote_at_the_next_turn(
    machine: Machine, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b, h = _read_whose_answer_is_lost(machine, remote, monkeypatch)
    # The next read first undoes that claim on the remote, then takes the handoff anew:
    # no sync in between, as an agent would just ask again.
    again = b.read_handoff(agent="codex", namespace=NS)
    assert again is not None and again.id == h.id
    a.sync()
    assert a.read_handoff(agent="codex", namespace=NS) is None
    assert "also_read" not in (b.path / h.path).read_text()


def test_a_handoff_a_lost_race_left_out_is_taken_once_the_fetch_shows_it_pending(
    machine: Machine, remote: Path
) -> None:
    a, b = machine("a"), machine("b")
    a.join_remote(str(remote))
    b.join_remote(str(remote))
    h = a.create_handoff(to="codex", summary="S", context="C", namespace=NS)
    assert a.sync().ok and b.sync().ok
    # B lost a race while another machine's claim ref named this handoff; that claim was
    # undone since (its answer lost), so the remote has it pending with no claim ref.
    sb = _sync(b)
    with sb.network_turn():
        state = sb.state()
        state["taken_elsewhere"] = {h.id: time.time()}
        sb.save_state(state)
    taken = b.read_handoff(agent="codex", namespace=NS)
    assert taken is not None and taken.id == h.id, "nothing pending said, one pending"
