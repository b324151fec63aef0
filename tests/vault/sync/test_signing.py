"""What a route sends is signed as the person's git signs their commits, with keys made by
``ssh-keygen`` and held by a real ``ssh-agent``; a key that needs a person holds the
sending back and never lets an unsigned commit out (``vault/sync/signing.py``)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from agent_mem_vault.vault.sync import identity, signing
from agent_mem_vault.vault.sync.routes import LOG_REFS
from tests.cli_process import BIN, cli_env, run_process, succeeded
from tests.git_remote import git, remote_tree
from tests.mcp_wire import serving

from .conftest import NS, Machine

PASSPHRASE = "correct horse battery"


@dataclass
class Keys:
    """A person's SSH keys: ``plain`` opens without a passphrase, ``locked`` needs one."""

    home: Path
    plain: Path
    locked: Path

    def public(self, key: Path) -> str:
        return key.with_name(key.name + ".pub").read_text().strip()

    def signers(self, *keys: Path, email: str = "ada@example.com") -> Path:
        """An allowed signers file (git's format) listing ``keys`` for ``email``."""
        path = self.home / "allowed_signers"
        lines = [f'{email} namespaces="git" {" ".join(self.public(k).split()[:2])}' for k in keys]
        path.write_text("\n".join(lines) + "\n")
        return path


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_MEM_VAULT_SYNC_AUTO", "off")  # each push is the test's
    monkeypatch.setattr(identity, "_known", {})
    monkeypatch.setattr(signing, "_known", {})
    for name in ("SSH_AUTH_SOCK", "SSH_AGENT_PID", "DISPLAY", "SSH_ASKPASS"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def keys(tmp_path: Path) -> Keys:
    if shutil.which("ssh-keygen") is None or shutil.which("ssh-agent") is None:
        pytest.skip("OpenSSH's ssh-keygen and ssh-agent are not installed (Debian: openssh-client)")
    home = tmp_path / "git-home"
    ssh = home / ".ssh"
    ssh.mkdir(parents=True, exist_ok=True)
    for name, phrase in (("plain", ""), ("locked", PASSPHRASE)):
        run = run_process(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", phrase, "-C", name, "-f", ssh / name]
        )
        assert run.returncode == 0, run.stderr
    git("config", "--global", "user.name", "Ada Lovelace", cwd=home)
    git("config", "--global", "user.email", "ada@example.com", cwd=home)
    return Keys(home, ssh / "plain", ssh / "locked")


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[Path]:
    """A running ``ssh-agent``: the path of its socket (killed at the end)."""
    sock = tmp_path / "agent.sock"
    proc = subprocess.Popen(
        ["ssh-agent", "-D", "-a", str(sock)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    for _ in range(500):
        if sock.exists():
            break
        time.sleep(0.01)
    yield sock
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(10)


def add_to_agent(sock: Path, key: Path, tmp_path: Path) -> None:
    """``ssh-add`` a key that needs its passphrase, typed by an askpass program (as a
    desktop's would)."""
    askpass = tmp_path / "askpass"
    askpass.write_text(f"#!/bin/sh\necho '{PASSPHRASE}'\n")
    askpass.chmod(0o755)
    env = {
        **os.environ,
        "SSH_AUTH_SOCK": str(sock),
        "SSH_ASKPASS": str(askpass),
        "SSH_ASKPASS_REQUIRE": "force",
        "DISPLAY": ":0",
    }
    done = subprocess.run(
        ["ssh-add", str(key)],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        start_new_session=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr


def sign_commits(home: Path, key: str) -> None:
    """The person's git signs their commits with ``key`` over SSH."""
    git("config", "--global", "gpg.format", "ssh", cwd=home)
    git("config", "--global", "user.signingkey", key, cwd=home)
    git("config", "--global", "commit.gpgsign", "true", cwd=home)


def sent_commits(repo: Path) -> list[str]:
    """Every commit on every ref of the remote."""
    out = git("rev-list", "--all", cwd=repo).split()
    assert out, "the remote holds nothing"
    return out


def verdicts(repo: Path, signers: Path) -> dict[str, str]:
    """Each commit of the remote, and git's own verdict of its signature (``%G?``)."""
    out = git(
        "-c",
        f"gpg.ssh.allowedSignersFile={signers}",
        "log",
        "--all",
        "--format=%H %G?",
        cwd=repo,
    )
    return dict(line.split() for line in out.splitlines())


def no_refs(repo: Path) -> bool:
    return git("for-each-ref", cwd=repo).strip() == ""


def test_sync_commits_are_signed_through_the_users_ssh_agent(
    machine: Machine,
    remote: Path,
    keys: Keys,
    agent: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    add_to_agent(agent, keys.locked, tmp_path)
    monkeypatch.setenv("SSH_AUTH_SOCK", str(agent))
    # The key as the agent holds it (no file to open): only the agent can sign.
    sign_commits(keys.home, f"key::{keys.public(keys.locked)}")
    a = machine("a")
    assert a.join_remote(str(remote)).ok
    a.create_handoff(to="codex", summary="Signed", context="C", namespace=NS)
    assert a.sync().ok
    seen = verdicts(remote, keys.signers(keys.locked))
    assert len(seen) >= 2 and set(seen.values()) == {"G"}, seen  # the checkpoint and entries
    for commit in sent_commits(remote):
        git(
            "-c",
            f"gpg.ssh.allowedSignersFile={keys.signers(keys.locked)}",
            "verify-commit",
            commit,
            cwd=remote,
        )
    status = succeeded(
        run_process([BIN, "sync", "--status"], env=cli_env(vault=a.path, SSH_AUTH_SOCK=str(agent)))
    ).stdout
    assert "sends as Ada Lovelace <ada@example.com> from " in status
    assert ", signed with ssh-ed25519 SHA256:" in status


def test_a_passphrase_key_without_an_agent_holds_writes_back_and_pushes_nothing_unsigned(
    machine: Machine, remote: Path, keys: Keys
) -> None:
    sign_commits(keys.home, str(keys.locked))
    a = machine("a")
    assert a.join_remote(str(remote)).ok  # nothing to send yet: nothing to sign
    env = cli_env(vault=a.path)
    create = [BIN, "create", "--to", "codex", "--context", "C", "-n", NS, "--summary"]
    succeeded(run_process([*create, "First"], env=env))  # no signature tried yet
    synced = run_process([BIN, "sync"], env=env)
    assert synced.returncode == 6, (synced.stdout, synced.stderr)
    assert "this machine signs what it sends, and its key ssh-ed25519 SHA256:" in synced.stderr
    assert no_refs(remote)

    # From then on each write says so, with the fix (written here: exit 10).
    made = run_process([*create, "Second"], env=env)
    assert made.returncode == 10, (made.stdout, made.stderr)
    assert "held back on this machine: it is saved here, and goes out signed" in made.stderr
    assert (
        "the key ssh-ed25519 SHA256:" in made.stderr
        and f'needs its passphrase, and no ssh-agent holds it; eval "$(ssh-agent)" && ssh-add '
        f"{keys.locked}\n"
        in made.stderr
    )

    # Over MCP: an answer saying so, not an error (the note is saved).
    with serving(a.path, "--agent", "claude-code", "--namespace", NS, env=env) as server:
        saved = server.call(1, "save_memory", {"title": "Plain", "content": "Batches of 1000"})
    assert not saved.get("isError")
    assert saved["content"][0]["text"].startswith("Held back on this machine: it is saved here")
    assert "ssh-add" in saved["structuredContent"]["held_back"]

    status = succeeded(run_process([BIN, "sync", "--status"], env=env)).stdout
    assert "sending held back since " in status and "(nothing goes out unsigned)" in status
    doctor = run_process([BIN, "doctor", "--json"], env=env)
    assert doctor.returncode == 7, doctor.stderr  # a problem for a person to fix
    report = json.loads(doctor.stdout)
    assert any("sending held back since" in p for p in report["problems"]), report["problems"]


def test_a_background_signature_never_starts_an_askpass_program(
    machine: Machine, remote: Path, keys: Keys, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A desktop session: an askpass program that would type the passphrase, and a display.
    ran = tmp_path / "askpass-ran"
    askpass = tmp_path / "askpass"
    askpass.write_text(f"#!/bin/sh\ntouch '{ran}'\necho '{PASSPHRASE}'\n")
    askpass.chmod(0o755)
    monkeypatch.setenv("SSH_ASKPASS", str(askpass))
    monkeypatch.setenv("DISPLAY", ":0")
    sign_commits(keys.home, str(keys.locked))
    a = machine("a")
    a.create_handoff(to="codex", summary="Held", context="C", namespace=NS)
    joined = a.join_remote(str(remote))
    assert joined.routes[0].error is not None and joined.routes[0].error.code == "signing_held"
    assert not ran.exists()
    assert no_refs(remote)


def test_held_writes_go_out_signed_once_the_key_is_in_the_agent(
    machine: Machine,
    remote: Path,
    keys: Keys,
    agent: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sign_commits(keys.home, str(keys.locked))
    a = machine("a")
    held = a.create_handoff(to="codex", summary="Waits for the key", context="C", namespace=NS)
    assert not a.join_remote(str(remote)).ok
    assert a.held_back(held.path) is not None
    assert (a.path / ".agent-mem-vault-sync" / signing.HELD_MARK).exists()

    add_to_agent(agent, keys.locked, tmp_path)
    monkeypatch.setenv("SSH_AUTH_SOCK", str(agent))
    assert a.sync().ok
    assert held.path in remote_tree(remote)
    seen = verdicts(remote, keys.signers(keys.locked))
    assert seen and set(seen.values()) == {"G"}, seen
    assert a.held_back(held.path) is None
    assert not (a.path / ".agent-mem-vault-sync" / signing.HELD_MARK).exists()
    assert a.sync_status()[0].signing is None


def test_a_read_is_not_taken_while_the_key_needs_a_person(
    machine: Machine,
    remote: Path,
    keys: Keys,
    agent: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    b = machine("b")  # a teammate whose git does not sign
    assert b.join_remote(str(remote)).ok
    task = b.create_handoff(to="codex", summary="The next task", context="C", namespace=NS)
    assert b.sync().ok

    sign_commits(keys.home, str(keys.locked))
    a = machine("a")
    assert a.join_remote(str(remote)).ok  # what arrives needs no signature
    env = cli_env(vault=a.path)
    read = run_process([BIN, "read", "--agent", "codex", "-n", NS, "--json"], env=env)
    assert read.returncode == 6, (read.stdout, read.stderr)
    assert "signing_held" in read.stdout + read.stderr
    assert f"the read of handoff {task.id} was not taken" in read.stdout + read.stderr
    peek = succeeded(run_process([BIN, "peek", "--agent", "codex", "-n", NS], env=env)).stdout
    assert "The next task" in peek
    assert "status: pending" in remote_tree(remote)[task.path]

    add_to_agent(agent, keys.locked, tmp_path)
    taken = run_process(
        [BIN, "read", "--agent", "codex", "-n", NS, "--json"],
        env={**env, "SSH_AUTH_SOCK": str(agent)},
    )
    assert taken.returncode == 0, (taken.stdout, taken.stderr)
    assert json.loads(taken.stdout)["id"] == task.id


def test_a_signing_program_that_hangs_is_killed_within_its_limit(
    machine: Machine, remote: Path, keys: Keys, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hangs = tmp_path / "hangs"
    hangs.write_text("#!/bin/sh\nsleep 600\n")
    hangs.chmod(0o755)
    sign_commits(keys.home, str(keys.plain))
    git("config", "--global", "gpg.ssh.program", str(hangs), cwd=keys.home)
    a = machine("a")
    a.create_handoff(to="codex", summary="Held", context="C", namespace=NS)
    env = cli_env(vault=a.path, AGENT_MEM_VAULT_SIGN_WAIT="1")
    joined = run_process([BIN, "sync", "init", str(remote)], env=env, timeout=60)
    assert joined.returncode == 6, (joined.stdout, joined.stderr)
    synced = run_process([BIN, "sync", "--json"], env=env, timeout=60)
    assert synced.returncode == 6, (synced.stdout, synced.stderr)
    assert "did not sign within 1 s" in synced.stdout
    state = json.loads((a.path / ".agent-mem-vault-sync" / "vault.state.json").read_text())
    assert state["signing"]["state"] == "timeout"
    assert no_refs(remote)


def test_sync_init_sign_uses_a_key_the_user_has_and_prints_its_signers_line(
    machine: Machine, remote: Path, keys: Keys
) -> None:
    ssh = keys.home / ".ssh"
    # No key git names, none in an agent, none where ssh-keygen puts one by default:
    # refused, naming how to make one; nothing joined.
    fresh = machine("fresh")
    refused = run_process(
        [BIN, "sync", "init", str(remote), "--sign"], env=cli_env(vault=fresh.path)
    )
    assert refused.returncode == 3, (refused.stdout, refused.stderr)
    assert "ssh-keygen -t ed25519" in refused.stderr
    assert not (fresh.path / ".agent-mem-vault-sync" / "config.json").exists()

    # A key that needs a passphrase, with no agent: refused at once, nothing changed.
    b = machine("b")
    b.create_handoff(to="codex", summary="Signed from the start", context="C", namespace=NS)
    env = cli_env(vault=b.path)
    locked = run_process(
        [BIN, "sync", "init", str(remote), "--sign", "--key", str(keys.locked)], env=env
    )
    assert locked.returncode == 6 and "needs its passphrase" in locked.stderr, locked.stderr
    assert not (b.path / ".agent-mem-vault-sync" / "config.json").exists()
    assert no_refs(remote)

    # ~/.ssh/id_ed25519, where ssh-keygen puts a key by default.
    shutil.copy(keys.plain, ssh / "id_ed25519")
    shutil.copy(keys.plain.with_name("plain.pub"), ssh / "id_ed25519.pub")
    joined = succeeded(run_process([BIN, "sync", "init", str(remote), "--sign"], env=env)).stdout
    blob = keys.public(keys.plain).split()[1]
    assert "signs with ssh-ed25519 SHA256:" in joined and "as ada@example.com." in joined
    assert f'ada@example.com namespaces="git" ssh-ed25519 {blob}' in joined
    seen = verdicts(remote, keys.signers(keys.plain))
    assert seen and set(seen.values()) == {"G"}, seen
    config = json.loads((b.path / ".agent-mem-vault-sync" / "config.json").read_text())
    assert config["routes"][0]["sign"] == str(ssh / "id_ed25519")

    # Later, on a route joined already: --sign alone (--json for scripts).
    a = machine("a")
    succeeded(run_process([BIN, "sync", "init", str(remote)], env=cli_env(vault=a.path)))
    told = json.loads(
        succeeded(
            run_process(
                [BIN, "sync", "init", "--sign", "--key", str(keys.plain), "--json"],
                env=cli_env(vault=a.path),
            )
        ).stdout
    )
    assert told["principal"] == "ada@example.com" and told["key"] == str(keys.plain)
    assert told["signers_line"] == f'ada@example.com namespaces="git" ssh-ed25519 {blob}'
    a.create_handoff(to="codex", summary="Signed later", context="C", namespace=NS)
    succeeded(run_process([BIN, "sync"], env=cli_env(vault=a.path)))
    head = git("rev-parse", f"{LOG_REFS}vault", cwd=remote).strip()
    assert verdicts(remote, keys.signers(keys.plain))[head] == "G"


@pytest.fixture
def gnupg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A GnuPG home of the test's own (its gpg-agent killed at the end)."""
    if shutil.which("gpg") is None or shutil.which("gpgconf") is None:
        pytest.skip("gpg is not installed here (Debian: apt install gnupg)")
    home = tmp_path / "gnupg"
    home.mkdir(mode=0o700)
    monkeypatch.setenv("GNUPGHOME", str(home))
    yield home
    subprocess.run(["gpgconf", "--kill", "gpg-agent"], capture_output=True, timeout=30)


def test_openpgp_signing_holds_back_on_a_locked_key(
    machine: Machine, remote: Path, keys: Keys, gnupg: Path
) -> None:
    gpg = ["gpg", "--batch", "--pinentry-mode", "loopback", "--passphrase", PASSPHRASE]
    made = run_process([*gpg, "--quick-gen-key", "Ada <ada@example.com>", "ed25519", "sign"])
    assert made.returncode == 0, made.stderr
    listed = run_process(["gpg", "--list-secret-keys", "--with-colons"]).stdout
    fingerprint = next(line.split(":")[9] for line in listed.splitlines() if line[:4] == "fpr:")
    run_process(["gpgconf", "--kill", "gpg-agent"])  # the agent forgets the passphrase
    git("config", "--global", "user.signingkey", fingerprint, cwd=keys.home)
    git("config", "--global", "commit.gpgsign", "true", cwd=keys.home)

    a = machine("a")
    a.create_handoff(to="codex", summary="Signed with gpg", context="C", namespace=NS)
    joined = a.join_remote(str(remote))
    error = joined.routes[0].error
    assert error is not None and error.code == "signing_held", joined
    assert "is locked and needs its PIN or passphrase" in error.message
    assert "echo | gpg --clearsign" in error.message
    assert no_refs(remote)

    # Unlocked once, as a person does at a terminal: what waited goes out, signed.
    unlocked = run_process([*gpg, "--clearsign"], input="x\n")
    assert unlocked.returncode == 0, unlocked.stderr
    assert a.sync().ok
    seen = dict(
        line.split() for line in git("log", "--all", "--format=%H %G?", cwd=remote).splitlines()
    )
    assert seen and set(seen.values()) == {"G"}, seen
