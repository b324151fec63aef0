"""A team whose people sign with gpg lists their OpenPGP keys beside its allowed signers
file (``allowed_signers.gpg``): each entry signed with one is checked with ``gpgv``
against those keys alone, and its author must be one of the key's user IDs
(``vault/sync/openpgp.py``).

Keys are made by gpg in a GnuPG home of the test's own; machines are vaults on one bare
repository."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_mem_vault.vault import Vault
from agent_mem_vault.vault.sync import identity, signing
from tests.cli_process import run_process
from tests.git_remote import git

from .conftest import NS, Machine, clone_of
from .test_team_trust import Team, _commit_signers, _on_project
from .test_team_trust import _fresh as _fresh


@pytest.fixture
def gnupg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A GnuPG home of the test's own (its gpg-agent killed at the end)."""
    for tool in ("gpg", "gpgv", "gpgconf"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed here (Debian: apt install gnupg gpgv)")
    home = tmp_path / "gnupg"
    home.mkdir(mode=0o700)
    monkeypatch.setenv("GNUPGHOME", str(home))
    yield home
    subprocess.run(["gpgconf", "--kill", "gpg-agent"], capture_output=True, timeout=30)


@pytest.fixture
def team(tmp_path: Path, machine: Machine, remote: Path) -> Team:
    return Team(tmp_path, machine, remote)


def _gpg(*args: str) -> str:
    done = run_process(["gpg", "--batch", "--passphrase", "", *args])
    assert done.returncode == 0, done.stderr
    return done.stdout


def _key(person: str) -> str:
    """A new OpenPGP key for ``person`` (``Name <email>``), no passphrase; its fingerprint."""
    _gpg("--quick-gen-key", person, "ed25519", "sign", "never")
    listed = _gpg("--list-keys", "--with-colons", person)
    return next(line.split(":")[9] for line in listed.splitlines() if line[:4] == "fpr:")


def _signing_with_gpg(team: Team, where: str, name: str, email: str, key: str) -> Vault:
    """A machine of ``name <email>`` whose sync signs with OpenPGP key ``key``."""
    vault = team.machine(where)
    assert vault.join_remote(str(team.remote)).ok
    config = vault.path / ".agent-mem-vault-sync" / "vault.git" / "config"
    for setting, value in (
        ("user.name", name),
        ("user.email", email),
        ("gpg.format", "openpgp"),
        ("user.signingkey", key),
        ("commit.gpgsign", "true"),
    ):
        assert run_process(["git", "config", "--file", config, setting, value]).returncode == 0
    identity._known.clear()  # git is asked once a minute per process
    signing._known.clear()
    return vault


def _signed_with_pgp(remote: Path) -> bool:
    """Whether a log on ``remote`` ends in an entry signed with OpenPGP."""
    refs = git("for-each-ref", "--format=%(refname) %(objectname)", cwd=remote).splitlines()
    logs = [line.split(" ")[1] for line in refs if "/_log/" in line.split(" ")[0]]
    return any("BEGIN PGP SIGNATURE" in git("cat-file", "commit", c, cwd=remote) for c in logs)


def test_an_entry_signed_with_a_listed_openpgp_key_is_verified(team: Team, gnupg: Path) -> None:
    ada_key = _key("Ada Lovelace <ada@example.com>")
    ada = _signing_with_gpg(team, "a", "Ada Lovelace", "ada@example.com", ada_key)
    ours = ada.create_handoff(to="codex", summary="Batch it", context="1000 rows", namespace=NS)
    assert ada.sync().ok
    assert _signed_with_pgp(team.remote), "signed with gpg"

    bob = team.join("b", "Bob Builder", "bob@example.com")
    bob.trust_signers(None, str(team.signers))
    assert bob.sync().ok
    origin = bob.get_handoff(ours.id).origin
    assert origin is not None and (origin.verified, origin.why) == (False, "not_ssh"), origin

    # The team lists Ada's OpenPGP key beside its signers file: every entry judged again.
    beside = team.signers.with_name(team.signers.name + ".gpg")
    beside.write_text(_gpg("--export", "--armor", ada_key))
    assert bob.sync().ok
    origin = bob.get_handoff(ours.id).origin
    assert origin is not None and origin.verified is True, origin
    assert (origin.signer, origin.author) == ("ada@example.com", "Ada Lovelace <ada@example.com>")


def test_an_openpgp_key_not_listed_revoked_or_of_someone_else_is_not_verified(
    team: Team, gnupg: Path
) -> None:
    ada_key = _key("Ada Lovelace <ada@example.com>")
    eve_key = _key("Eve Outsider <eve@example.net>")
    carol_key = _key("Carol Jones <carol@example.com>")
    ada = _signing_with_gpg(team, "a", "Ada Lovelace", "ada@example.com", ada_key)
    ours = ada.create_handoff(to="codex", summary="Batch it", context="x", namespace=NS)
    assert ada.sync().ok
    eve = _signing_with_gpg(team, "e", "Eve Outsider", "eve@example.net", eve_key)
    theirs = eve.create_handoff(to="codex", summary="Ship it", context="x", namespace=NS)
    assert eve.sync().ok
    # Carol's key is listed, but it signs words her machine puts in Ada's name.
    posing = _signing_with_gpg(team, "c", "Ada Lovelace", "ada@example.com", carol_key)
    posed = posing.create_handoff(to="codex", summary="Also", context="x", namespace=NS)
    assert posing.sync().ok

    beside = team.signers.with_name(team.signers.name + ".gpg")
    beside.write_text(_gpg("--export", "--armor", ada_key, carol_key))
    bob = team.join("b", "Bob Builder", "bob@example.com")
    bob.trust_signers(None, str(team.signers))
    assert bob.sync().ok
    verdicts = {
        h: (o.verified, o.why)
        for h in (ours.id, theirs.id, posed.id)
        if (o := bob.get_handoff(h).origin) is not None
    }
    assert verdicts == {
        ours.id: (True, None),
        theirs.id: (False, "unknown_key"),
        posed.id: (False, "claim_mismatch"),
    }

    # Ada's key revoked (its revocation in the listed file): none of hers counts any more.
    revocation = gnupg / "openpgp-revocs.d" / f"{ada_key}.rev"
    _gpg("--import", str(_certificate(revocation)))
    beside.write_text(_gpg("--export", "--armor", ada_key, carol_key))
    assert bob.sync().ok
    origin = bob.get_handoff(ours.id).origin
    assert origin is not None and (origin.verified, origin.why) == (False, "revoked"), origin


def _certificate(stored: Path) -> Path:
    """The revocation certificate gpg stored at key creation, made importable (gpg keeps
    its first line escaped so that it is not imported by mistake)."""
    usable = stored.with_suffix(".asc")
    usable.write_text(stored.read_text().replace(":-----BEGIN", "-----BEGIN"))
    return usable


def test_openpgp_keys_beside_the_list_on_the_projects_branch_are_taken_as_the_list_is(
    team: Team, gnupg: Path, project: Path
) -> None:
    gus_key = _key("Gus Grey <gus@example.com>")
    seed = clone_of(project, team.root.parent / "seed-signers")
    ada_line = f'ada@example.com namespaces="git" {team.public("ada")}'
    _commit_signers(seed, team, "ada", "Ada Lovelace <ada@example.com>", [ada_line])
    bob = _on_project(team, "b", "Bob Builder", "bob@example.com", project)
    gus = team.machine("g")  # his clone's git signs with gpg, as his own commits are
    gus_clone = clone_of(project, team.root.parent / "g-src")
    for setting, value in (
        ("user.name", "Gus Grey"),
        ("user.email", "gus@example.com"),
        ("gpg.format", "openpgp"),
        ("user.signingkey", gus_key),
        ("commit.gpgsign", "true"),
    ):
        run_process(["git", "config", setting, value], cwd=gus_clone)
    identity._known.clear()
    signing._known.clear()
    assert gus.join_project(NS, gus_clone).ok
    bob.trust_signers(NS, None, branch="main")
    made = gus.create_handoff(to="codex", summary="Batch it", context="x", namespace=NS)
    assert gus.sync().ok and bob.sync().ok
    assert bob.get_handoff(made.id).origin.why == "not_ssh"  # type: ignore[union-attr]

    # Ada lists Gus's OpenPGP key beside the list, in a commit she signs: taken.
    run_process(["git", "pull", "-q", "origin", "main"], cwd=seed)
    (seed / ".agent-mem-vault" / "allowed_signers.gpg").write_text(
        _gpg("--export", "--armor", gus_key)
    )
    _commit_signers(seed, team, "ada", "Ada Lovelace <ada@example.com>", [ada_line])
    assert bob.sync().ok
    origin = bob.get_handoff(made.id).origin
    assert origin is not None and origin.verified is True and origin.signer == "gus@example.com"

    # Gus, listed by his OpenPGP key, adds Cy to the list with a commit gpg signs.
    run_process(["git", "pull", "-q", "origin", "main"], cwd=seed)
    cy_line = f'cy@example.com namespaces="git" {team.public("cy")}'
    (seed / ".agent-mem-vault" / "allowed_signers").write_text(f"{ada_line}\n{cy_line}\n")
    run_process(["git", "add", "-A"], cwd=seed)
    signed = run_process(
        ["git", "-c", "user.name=Gus Grey", "-c", "user.email=gus@example.com", "-c",
         "gpg.format=openpgp", "-c", f"user.signingkey={gus_key}", "commit", "-q", "-S",
         "-m", "Cy joins"],
        cwd=seed,
    )  # fmt: skip
    assert signed.returncode == 0, signed.stderr
    assert run_process(["git", "push", "-q", "origin", "HEAD:main"], cwd=seed).returncode == 0
    assert bob.sync().ok
    status = bob.trust_status(NS)
    assert status.principals == ("ada@example.com", "cy@example.com"), status
    assert status.refused is None
