"""A checkpoint keeps who wrote each note and whether a listed key signed it, so a machine
that joins from it knows as much as one that read the log; those verdicts count only
where the checkpoint's own signer is listed (``vault/sync/checkpoint_verdicts.py``).

Machines are vaults with git identities and ``ssh-keygen`` keys of their own, on one bare
repository; an outsider writes the remote's refs with plain git."""

from __future__ import annotations

import base64
import json
import subprocess
import time
from pathlib import Path

import pytest

from agent_mem_vault.vault import Vault
from agent_mem_vault.vault.sync import team_checkpoint
from agent_mem_vault.vault.sync.checkpoint_verdicts import VERDICTS
from tests.git_remote import git

from .conftest import NS, Machine
from .test_team_trust import Team
from .test_team_trust import _fresh as _fresh

EVERY = 4


@pytest.fixture
def team(tmp_path: Path, machine: Machine, remote: Path, monkeypatch: pytest.MonkeyPatch) -> Team:
    monkeypatch.setattr(team_checkpoint, "EVERY", EVERY)
    return Team(tmp_path, machine, remote)


def _requiring(team: Team, *vaults: Vault) -> None:
    for vault in vaults:
        vault.trust_signers(None, str(team.signers))
        vault.trust_policy(None, "require")


def _checkpoint(remote: Path) -> str:
    refs = git("for-each-ref", "--format=%(refname) %(objectname)", cwd=remote).splitlines()
    found = [line.split(" ")[1] for line in refs if line.split(" ")[0].endswith("/_checkpoint")]
    assert found, "a checkpoint was written"
    return found[0]


def _history(team: Team) -> tuple[str, str, str, str]:
    """Ada and Bob (listed) write a handoff each and Ada a decision, Eve (not listed) a
    handoff; Ada, checking, writes enough for a checkpoint. The ids: Ada's handoff, her
    decision, Eve's handoff, Bob's."""
    return _written(team)[1]


def _written(team: Team) -> tuple[Vault, tuple[str, str, str, str]]:
    """``_history``, and Ada's vault."""
    ada, bob, eve = team.trio("ada", "bob", "carol")
    _requiring(team, ada)
    ours = ada.create_handoff(to="codex", summary="Batch it", context="1000 rows", namespace=NS)
    decided = ada.save_memory(namespace=NS, title="Batches", content="1000 rows", kind="decision")
    bobs = bob.create_handoff(to="claude-code", summary="Review it", context="x", namespace=NS)
    assert ada.sync().ok and bob.sync().ok
    theirs = eve.create_handoff(to="codex", summary="Skip the tests", context="x", namespace=NS)
    assert eve.sync().ok and ada.sync().ok
    for i in range(EVERY + 1):
        ada.save_memory(namespace=NS, title=f"m{i}", content="x")
        assert ada.sync().ok
    return ada, (ours.id, decided.id, theirs.id, bobs.id)


def test_a_machine_that_joins_from_a_checkpoint_knows_who_wrote_each_note(team: Team) -> None:
    ours, decided, theirs, _bobs = _history(team)
    checkpoint = _checkpoint(team.remote)
    carried = json.loads(git("show", f"{checkpoint}:{VERDICTS}", cwd=team.remote))
    assert carried["version"] == 1 and carried["notes"]
    carol = team.join("c", "Carol Jones", "carol@example.com")
    _requiring(team, carol)
    assert carol.sync().ok
    origin = carol.get_handoff(ours).origin
    assert origin is not None and origin.verified is True, origin
    assert origin.author == "Ada Lovelace <ada@example.com>" and origin.trusted
    memory = carol.get_memory(decided).origin
    assert memory is not None and memory.verified is True, memory
    outsider = carol.get_handoff(theirs).origin
    assert outsider is not None and outsider.verified is False and outsider.why == "unknown_key"
    assert {h.id for h in carol.quarantined_handoffs(NS)} == {theirs}
    taken = carol.read_handoff(agent="codex", namespace=NS)
    assert taken is not None and taken.id == ours
    assert carol.read_handoff(agent="codex", namespace=NS) is None  # Eve's: held back


def test_a_checkpoints_verdicts_count_for_keys_this_machines_own_list_takes(
    team: Team,
) -> None:
    ours, _decided, _theirs, bobs = _history(team)
    carol = team.join("c", "Carol Jones", "carol@example.com")
    # Carol's own list names Ada (who signed the checkpoint) and Carol, not Bob.
    own = team.signers.with_name("carols_signers")
    own.write_text(
        f'ada@example.com namespaces="git" {team.public("ada")}\n'
        f'carol@example.com namespaces="git" {team.public("carol")}\n'
    )
    carol.trust_signers(None, str(own))
    assert carol.sync().ok
    origin = carol.get_handoff(ours).origin
    assert origin is not None and origin.verified is True, origin
    bob = carol.get_handoff(bobs).origin  # the checkpoint names his entry; her list, not him
    assert bob is not None and bob.verified is False, bob
    assert bob.why == "unknown_key" and bob.author == "Bob Builder <bob@example.com>"


def _forge(team: Team, checkpoint: str) -> None:
    """Eve replaces the checkpoint with one of her own, unsigned, whose record says Ada's
    entry wrote every note (so it would verify here, Ada's signature being good)."""
    carried = json.loads(git("show", f"{checkpoint}:{VERDICTS}", cwd=team.remote))
    adas = next(i for i, row in enumerate(carried["entries"]) if "ada@" in row[4])
    for note in carried["notes"].values():
        note[1], note[2] = [adas], adas
    env = {
        "GIT_DIR": str(team.remote),
        "GIT_INDEX_FILE": str(team.root.parent / "eves-index"),
        "GIT_AUTHOR_NAME": "Eve Outsider",
        "GIT_AUTHOR_EMAIL": "eve@example.net",
        "GIT_COMMITTER_NAME": "Eve Outsider",
        "GIT_COMMITTER_EMAIL": "eve@example.net",
        "PATH": "/usr/bin:/bin",
    }

    def run(*args: str, text: str | None = None) -> str:
        done = subprocess.run(["git", *args], input=text, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    blob = run("hash-object", "-w", "--stdin", text=json.dumps(carried))
    run("read-tree", f"{checkpoint}^{{tree}}")
    run("update-index", "--add", "--cacheinfo", f"100644,{blob},{VERDICTS}")
    message = run("log", "-1", "--format=%B", checkpoint)
    forged = run("commit-tree", run("write-tree"), "-m", message)
    ref = next(
        line.split(" ")[0]
        for line in run("for-each-ref", "--format=%(refname) %(objectname)").splitlines()
        if line.split(" ")[0].endswith("/_checkpoint")
    )
    run("update-ref", ref, forged)


def test_a_checkpoint_no_listed_key_signed_carries_no_verdicts(team: Team) -> None:
    ours, _decided, theirs, _bobs = _history(team)
    _forge(team, _checkpoint(team.remote))
    carol = team.join("c", "Carol Jones", "carol@example.com")
    _requiring(team, carol)
    assert carol.sync().ok
    outsider = carol.get_handoff(theirs).origin
    assert outsider is not None and outsider.verified is not True, outsider
    assert not outsider.trusted
    ada = carol.get_handoff(ours).origin  # nothing this machine checked says so either
    assert ada is not None and ada.verified is not True and ada.why == "before_signers"
    assert carol.read_handoff(agent="codex", namespace=NS) is None


def test_a_verdict_for_an_entry_not_at_hand_counts_while_its_key_is_listed(team: Team) -> None:
    from agent_mem_vault.vault.sync.verify import AllowedSigners, fingerprint, still_listed

    key = base64.b64decode(team.public("ada").split()[1])
    line = f'ada@example.com namespaces="git" {team.public("ada")}\n'
    ada = "Ada Lovelace <ada@example.com>"
    listed = AllowedSigners.parse(line)
    assert still_listed(listed, fingerprint(key), ada, time.time())
    assert not still_listed(listed, fingerprint(key), "Eve <eve@example.net>", time.time())
    assert not still_listed(listed, None, ada, time.time())
    revoked = AllowedSigners.parse(line, revoked=team.public("ada") + "\n")
    assert not still_listed(revoked, fingerprint(key), ada, time.time())
    lapsed = AllowedSigners.parse(
        f'ada@example.com namespaces="git",valid-before="20200101" {team.public("ada")}\n'
    )
    assert not still_listed(lapsed, fingerprint(key), ada, time.time())
    assert not still_listed(AllowedSigners.parse(""), fingerprint(key), ada, time.time())


def test_a_checkpoint_set_back_to_an_earlier_one_gives_no_verdicts(
    team: Team, tmp_path: Path
) -> None:
    from agent_mem_vault.vault.sync.checkpoint_verdicts import adopt_verdicts
    from agent_mem_vault.vault.sync.engine import RouteSync
    from agent_mem_vault.vault.sync.routes import load_config
    from agent_mem_vault.vault.sync.signers import trust_for
    from agent_mem_vault.vault.sync.verdicts import VerdictStore

    ada, _ids = _written(team)
    first = _checkpoint(team.remote)
    for i in range(EVERY + 1):
        ada.save_memory(namespace=NS, title=f"later {i}", content="x")
        assert ada.sync().ok
    second = _checkpoint(team.remote)
    assert second != first
    config = load_config(ada.path)
    assert config is not None and config.vault_route is not None
    sync = RouteSync(ada, config, config.vault_route)
    signers = trust_for(ada.path, config.vault_route).signers
    assert signers is not None

    def adopted(checkpoint: str, previous: str | None) -> int:
        with VerdictStore(tmp_path / f"{checkpoint}-{previous}.sqlite") as store:
            return adopt_verdicts(sync, signers, checkpoint, store, previous)

    assert adopted(first, None) > 0 and adopted(second, first) > 0  # forward: taken
    assert adopted(first, second) == 0  # an outsider set the remote back: nothing taken
