"""A team on one remote, layout 2: a log per machine, a ref per claim (docs/sync.md)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from agent_mem_vault.core.errors import RemoteError
from agent_mem_vault.vault import Vault
from agent_mem_vault.vault.sync.engine import RouteSync, sync_route
from agent_mem_vault.vault.sync.prune import EVERY, prune_claims
from agent_mem_vault.vault.sync.routes import Route, load_config
from agent_mem_vault.vault.sync.team_claim import GRACE
from tests.git_remote import git, remote_tree, team_tree

from .conftest import NS, Machine

PREFIX = "refs/agent-mem-vault-sync/_vault"


@pytest.fixture(autouse=True)
def _layout_two(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_MEM_VAULT_SYNC_AUTO", "off")  # each push is the test's
    monkeypatch.setenv("AGENT_MEM_VAULT_SYNC_LAYOUT", "2")


def _machine_name(vault: Vault) -> str:
    config = load_config(vault.path)
    assert config is not None
    return config.machine


def _route(vault: Vault) -> tuple[Route, RouteSync]:
    config = load_config(vault.path)
    assert config is not None and config.vault_route is not None
    return config.vault_route, RouteSync(vault, config, config.vault_route)


def _push_only(vault: Vault) -> bool:
    """Commit and push what changed without fetching first; whether it had to fetch (a
    refused push does)."""
    config = load_config(vault.path)
    assert config is not None and config.vault_route is not None
    return sync_route(vault, config, config.vault_route, fetch=False).fetched


def _facts(repo: Path, commit: str) -> dict[str, object]:
    lines = git("log", "-1", "--format=%B", commit, cwd=repo).strip().splitlines()
    return json.loads(lines[-1])


def _refs(repo: Path, prefix: str = PREFIX) -> dict[str, str]:
    out = git("for-each-ref", "--format=%(refname) %(objectname)", prefix, cwd=repo)
    return {n.removeprefix(prefix + "/"): c for n, c in (line.split() for line in out.splitlines())}


def test_a_route_made_in_layout_two_has_a_marker_and_a_fence_for_older_releases(
    machine: Machine, remote: Path
) -> None:
    a = machine("a")
    a.create_handoff(to="codex", summary="S", context="C", namespace=NS)
    assert a.join_remote(str(remote)).ok
    route, _sync = _route(a)
    assert route.layout == 2
    refs = _refs(remote)
    assert set(refs) == {"_layout", f"_log/{_machine_name(a)}"}
    marker = _facts(remote, refs["_layout"])
    assert marker["layout"] == marker["readers"] == marker["writers"] == 2
    fence = _facts(remote, "refs/agent-mem-vault-log/vault")
    assert fence == {"checkpoint": refs["_layout"]}
    assert not _refs(remote, "refs/heads")  # no branch, no checkpoint of layout 1


def test_each_machine_writes_its_own_log_and_no_push_refuses_another(
    machine: Machine, remote: Path
) -> None:
    a, b, c = machine("a"), machine("b"), machine("c")
    a.save_memory(namespace=NS, title="Team", content="One remote for all.")
    for vault in (a, b, c):  # a makes the route (its marker); b and c join it
        vault.join_remote(str(remote))
    made = [
        v.create_handoff(to="codex", summary=f"from {n}", context="C", namespace=NS)
        for n, v in (("a", a), ("b", b), ("c", c))
    ]
    # None of them has fetched what the others pushed: no push is refused all the same.
    assert [_push_only(v) for v in (a, b, c)] == [False, False, False]
    logs = {n for n in _refs(remote) if n.startswith("_log/")}
    assert logs == {f"_log/{_machine_name(v)}" for v in (a, b, c)}
    for vault in (a, b, c):
        vault.sync()
        assert {h.id for h in vault.list_handoffs(namespace=NS)} == {h.id for h in made}
    notes = team_tree(remote)
    assert {h.path for h in made} <= set(notes)
    assert notes[made[0].path] == (a.path / made[0].path).read_text()


def test_an_entry_names_the_blob_each_change_was_made_on(machine: Machine, remote: Path) -> None:
    a, b = machine("a"), machine("b")
    a.join_remote(str(remote))
    b.join_remote(str(remote))
    h = a.create_handoff(to="codex", summary="S", context="C", namespace=NS)
    a.sync()
    first = git("rev-parse", f"{PREFIX}/_log/{_machine_name(a)}:{h.path}", cwd=remote).strip()
    b.sync()
    b.ack_handoff(h.id)
    b.sync()
    entry = f"{PREFIX}/_log/{_machine_name(b)}"
    facts = _facts(remote, entry)
    assert facts["base"] == {h.path: first}
    assert facts["machine"] == _machine_name(b) and facts["layout"] == 2
    a.sync()
    assert a.get_handoff(h.id).status == "read"


def test_three_machines_changing_one_note_at_once_end_with_the_same_bytes(
    machine: Machine, remote: Path
) -> None:
    a, b, c = machine("a"), machine("b"), machine("c")
    for vault in (a, b, c):
        vault.join_remote(str(remote))
    m = a.save_memory(namespace=NS, title="Deploys", content="Staging first.\n", tags=["ops"])
    a.sync()
    b.sync()
    c.sync()
    # A memory is updated by a new one that supersedes it: three at once here.
    made = [
        a.update_memory(m.id, tags=["ops", "a"]),
        b.update_memory(m.id, tags=["ops", "b"]),
        c.update_memory(m.id, content="Staging first, then canary.\n"),
    ]
    for vault in (a, b, c):
        _push_only(vault)
    for _ in range(2):
        for vault in (a, b, c):
            vault.sync()
    for path in (m.path, *(n.path for n in made)):
        assert len({(v.path / path).read_bytes() for v in (a, b, c)}) == 1, path
    notes = team_tree(remote)
    assert notes[m.path] == (a.path / m.path).read_text()
    assert all(n.path in notes for n in made)


def test_two_machines_racing_for_one_handoff_deliver_it_once_and_the_loser_takes_another(
    machine: Machine, remote: Path
) -> None:
    a, b, c = machine("a"), machine("b"), machine("c")
    for vault in (a, b, c):
        vault.join_remote(str(remote))
    older = a.create_handoff(to="codex", summary="older", context="C", namespace=NS)
    newer = a.create_handoff(to="codex", summary="newer", context="C", namespace=NS)
    a.sync()
    b.sync()
    c.sync()
    got_b = b.read_handoff(agent="codex", namespace=NS)
    assert got_b is not None and got_b.id == newer.id
    seen = c.path / ".agent-mem-vault-sync" / "vault.git"
    mirror = "refs/agent-mem-vault/remote/_log/"
    before = _refs(seen, mirror.rstrip("/"))
    got_c = c.read_handoff(agent="codex", namespace=NS)
    assert got_c is not None and got_c.id == older.id
    after = _refs(seen, mirror.rstrip("/"))
    assert after.pop(_machine_name(c)) != before.pop(_machine_name(c), None)
    assert after == before  # the loser fetched nothing: b's read is not seen here yet
    claims = _refs(remote, f"{PREFIX}/_claim")
    assert set(claims) == {newer.id, older.id}
    assert claims[newer.id] == _refs(remote)[f"_log/{_machine_name(b)}"]
    assert a.read_handoff(agent="codex", namespace=NS) is None
    for vault in (a, b, c):
        vault.sync()
    for vault in (a, b, c):
        assert [vault.get_handoff(h.id).status for h in (older, newer)] == ["read", "read"]
        assert "also_read" not in (vault.path / newer.path).read_text()  # once


def test_a_reopened_handoff_frees_its_claim_and_is_taken_once_more(
    machine: Machine, remote: Path
) -> None:
    a, b = machine("a"), machine("b")
    a.join_remote(str(remote))
    b.join_remote(str(remote))
    h = a.create_handoff(to="codex", summary="S", context="C", namespace=NS)
    a.sync()
    assert a.read_handoff(agent="codex", namespace=NS) is not None
    assert h.id in _refs(remote, f"{PREFIX}/_claim")
    a.reopen_handoff(h.id)
    a.sync()
    assert h.id not in _refs(remote, f"{PREFIX}/_claim")
    b.sync()
    again = b.read_handoff(agent="codex", namespace=NS)
    assert again is not None and again.id == h.id
    assert _refs(remote, f"{PREFIX}/_claim")[h.id] == _refs(remote)[f"_log/{_machine_name(b)}"]


def test_a_remote_of_layout_one_stays_in_layout_one(
    machine: Machine, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_MEM_VAULT_SYNC_LAYOUT", "1")
    a = machine("a")
    h = a.create_handoff(to="codex", summary="S", context="C", namespace=NS)
    a.join_remote(str(remote))
    monkeypatch.setenv("AGENT_MEM_VAULT_SYNC_LAYOUT", "2")
    b = machine("b")
    b.join_remote(str(remote))
    assert _route(b)[0].layout == 1
    assert not _refs(remote)
    assert h.path in remote_tree(remote)
    assert (b.path / h.path).exists()


def test_a_route_of_one_log_here_that_meets_the_fence_follows_it(
    machine: Machine, remote: Path
) -> None:
    a, b = machine("a"), machine("b")
    h = a.create_handoff(to="codex", summary="S", context="C", namespace=NS)
    a.join_remote(str(remote))
    b.join_remote(str(remote))
    route, _sync = _route(b)
    config = load_config(b.path)
    assert config is not None
    from dataclasses import replace

    old = RouteSync(b, config, replace(route, layout=1))  # as a route made before layout 2
    with old.network_turn():
        fetched = old.fetch()
    assert old.route.layout == 2 and _route(b)[0].layout == 2  # saved: it stays there
    assert fetched is not None and h.path in old.entries(old._tree(fetched), [h.path])


def test_a_layout_newer_than_this_release_is_refused_with_the_upgrade_line(
    machine: Machine, remote: Path, tmp_path: Path
) -> None:
    work = tmp_path / "newer"
    git("init", "--quiet", work)
    tree = git("hash-object", "-t", "tree", "-w", "/dev/null", cwd=work).strip()
    facts = {"layout": 3, "readers": 3, "writers": 3}
    marker = git(
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit-tree",
        tree,
        "-m",
        f"agent-mem-vault layout 3\n\n{json.dumps(facts)}",
        cwd=work,
    ).strip()
    git("push", "--quiet", str(remote), f"{marker}:{PREFIX}/_layout", cwd=work)
    a = machine("a")
    with pytest.raises(RemoteError) as raised:
        a.join_remote(str(remote))
    assert raised.value.code == "layout_newer"
    assert "pip install -U agent-mem-vault" in raised.value.message
    assert load_config(a.path) is None  # nothing kept


def test_claim_refs_older_than_the_grace_are_pruned_and_the_remote_stays_bounded(
    machine: Machine, remote: Path
) -> None:
    a, b = machine("a"), machine("b")
    a.join_remote(str(remote))
    b.join_remote(str(remote))
    made = [
        a.create_handoff(to="codex", summary=f"task {i}", context="C", namespace=NS)
        for i in range(3)
    ]
    a.sync()
    b.sync()
    taken = [b.read_handoff(agent="codex", namespace=NS) for _ in range(2)]
    assert set(_refs(remote, f"{PREFIX}/_claim")) == {h.id for h in taken if h}
    _route_b, sync = _route(b)
    start = time.time() + EVERY  # b's last sync looked at the claims a moment ago
    with sync.network_turn():
        sync.fetch()
        assert prune_claims(sync, 20, now=start) == 0  # first seen now: within the grace
        assert prune_claims(sync, 20, now=start + 1) == 0  # looked a moment ago
        assert prune_claims(sync, 20, now=start + GRACE - 1) == 0
        assert prune_claims(sync, 20, now=start + GRACE + EVERY) == 2
    assert _refs(remote, f"{PREFIX}/_claim") == {}
    # Every machine's view holds them read: neither is taken again, the third is.
    a.sync()
    last = a.read_handoff(agent="codex", namespace=NS)
    assert last is not None and last.id not in {h.id for h in taken if h}
    assert {h.id for h in made} == {last.id, *(h.id for h in taken if h)}
    assert a.read_handoff(agent="codex", namespace=NS) is None


def test_sync_status_says_the_route_keeps_a_log_per_machine(machine: Machine, remote: Path) -> None:
    import subprocess
    import sys

    a = machine("a")
    a.create_handoff(to="codex", summary="S", context="C", namespace=NS)
    a.join_remote(str(remote))
    [status] = a.sync_status()
    assert status.to_dict()["layout"] == 2
    shown = subprocess.run(
        [Path(sys.executable).parent / "agent-mem-vault", "sync", "--status", "--vault", a.path],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert "a log per machine (layout 2)" in shown


def test_a_checkpoint_is_written_every_few_entries_and_a_joining_machine_reads_only_what_follows(
    machine: Machine, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_mem_vault.vault.sync import team_checkpoint
    from agent_mem_vault.vault.sync.team import store_of

    monkeypatch.setattr(team_checkpoint, "EVERY", 3)
    a, b = machine("a"), machine("b")
    a.join_remote(str(remote))
    b.join_remote(str(remote))
    made = []
    for i in range(4):
        made.append(a.create_handoff(to="codex", summary=f"task {i}", context="C", namespace=NS))
        a.sync()
    checkpoint = _refs(remote)["_checkpoint"]
    facts = _facts(remote, checkpoint)
    assert facts["layout"] == 2 and _machine_name(a) in facts["frontier"]  # type: ignore[operator]
    assert git("rev-parse", "refs/heads/main", cwd=remote).strip() == checkpoint  # plain clone
    b.sync()
    taken = b.read_handoff(agent="codex", namespace=NS)
    assert taken is not None
    c = machine("c")
    c.join_remote(str(remote))  # from the checkpoint, and the entries after it
    _route_c, sync_c = _route(c)
    store = store_of(sync_c)
    try:
        assert 0 < store.count() < 4
    finally:
        store.close()
    for vault in (a, b, c):
        vault.sync()
    for h in made:
        assert len({(v.path / h.path).read_bytes() for v in (a, b, c)}) == 1, h.path
    assert c.get_handoff(taken.id).status == "read"
    notes = team_tree(remote)  # read with plain git: the checkpoint, then what follows
    for h in made:
        assert notes[h.path] == (c.path / h.path).read_text()


def test_a_new_route_whose_remote_a_one_log_release_made_first_follows_it(
    machine: Machine, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = machine("a"), machine("b")
    b.join_remote(str(remote))  # a log per machine; nothing sent yet
    monkeypatch.setenv("AGENT_MEM_VAULT_SYNC_LAYOUT", "1")
    first = a.create_handoff(to="codex", summary="one log", context="C", namespace=NS)
    a.join_remote(str(remote))  # one log, made on the remote first
    monkeypatch.setenv("AGENT_MEM_VAULT_SYNC_LAYOUT", "2")
    mine = b.create_handoff(to="codex", summary="from b", context="C", namespace=NS)
    assert b.sync().ok
    assert _route(b)[0].layout == 1 and not _refs(remote)
    assert {first.path, mine.path} <= set(remote_tree(remote))
    a.sync()
    assert a.get_handoff(mine.id).summary == "from b"


def test_a_log_the_checkpoint_holds_and_idle_for_a_day_is_let_go_and_comes_back_when_written(
    machine: Machine, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_mem_vault.vault.sync import team_checkpoint
    from agent_mem_vault.vault.sync.prune import IDLE, prune_logs

    monkeypatch.setattr(team_checkpoint, "EVERY", 4)  # the 4th entry makes one
    a, b = machine("a"), machine("b")  # a: a CI job, say, that wrote and went quiet
    a.join_remote(str(remote))
    b.join_remote(str(remote))
    made = []
    for i in range(4):
        made.append(a.create_handoff(to="codex", summary=f"task {i}", context="C", namespace=NS))
        a.sync()
    b.sync()  # adopts the checkpoint, which holds all of a's log
    a_log = f"_log/{_machine_name(a)}"
    assert a_log in _refs(remote)
    _route_b, sync = _route(b)
    now = time.time()
    with sync.network_turn():
        sync.fetch()
        assert prune_logs(sync, 20, now=now) == 0  # first seen idle now
        assert prune_logs(sync, 20, now=now + IDLE + 1) == 1
    assert a_log not in _refs(remote)
    fetched = sync.heads()[1]
    b.sync()  # no log went back: nothing folded again, nothing unlinked
    assert _route(b)[1].heads()[1] == fetched
    c = machine("c")
    c.join_remote(str(remote))  # from the checkpoint
    assert {h.id for h in c.list_handoffs(namespace=NS)} == {h.id for h in made}
    later = a.create_handoff(to="codex", summary="later", context="C", namespace=NS)
    a.sync()  # a's log back, as it was, with the new entry on top
    assert a_log in _refs(remote)
    for vault in (b, c):
        vault.sync()
        assert vault.get_handoff(later.id).summary == "later"
        for h in made:
            assert (vault.path / h.path).read_bytes() == (a.path / h.path).read_bytes()


def test_a_reader_that_keeps_losing_races_chooses_among_more_and_narrows_as_it_wins(
    machine: Machine, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_mem_vault.vault.sync import team_claim

    a = machine("a")
    a.join_remote(str(remote))
    ids = [
        a.create_handoff(to="codex", summary=f"p{n}", context="C", namespace=NS).id
        for n in range(120)
    ]
    a.sync()
    _route_config, sync = _route(a)
    monkeypatch.setattr(team_claim, "claims_on_remote", lambda _sync: [])  # none listed

    def deepest(team: team_claim.Team) -> int:
        """How far down the newest a read of this team's view went, over many tries."""
        with a._writing(scope=[(NS, "handoffs")]) as idx:
            return max(len(team.skip(idx, "codex", NS)) for _ in range(300))

    team = team_claim.Team(sync)
    assert deepest(team) == 0  # a quiet team: the newest
    team.lost(ids[-1])  # busy: 4 per machine (2 at least), twice over: 16, and the lost one
    assert team_claim.Team(sync)._widened() == 2.0
    assert 2 <= deepest(team_claim.Team(sync)) <= 16
    for _ in range(2):
        team.lost(ids[-1])
    assert team_claim.Team(sync)._widened() == 8.0
    assert deepest(team_claim.Team(sync)) > 16  # among 64: deeper than 16 ever goes
    for _ in range(4):
        team_claim.Team(sync).landed()
    assert team_claim.Team(sync)._widened() == pytest.approx(8.0 * team_claim.NARROW**4)
    for _ in range(10):
        team_claim.Team(sync).lost(ids[-1])
    assert team_claim.Team(sync)._widened() == team_claim.WIDEST
    # Quiet for a while: back to the narrow choice, and a race lost then doubles that.
    later = time.time() + team_claim.BUSY + 1
    monkeypatch.setattr(team_claim.time, "time", lambda: later)
    assert team_claim.Team(sync)._widened() == 1.0
    team_claim.Team(sync).lost(ids[-2])
    assert team_claim.Team(sync)._widened() == 2.0
