"""What a remote receives names the person who sent it, as git resolves them for the route,
and the machine it came from (``vault/sync/identity.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_mem_vault.vault.sync import identity
from agent_mem_vault.vault.sync.routes import LOG_REFS
from tests.cli_process import BIN, cli_env, run_process, succeeded
from tests.git_remote import git

from .conftest import NS, Machine, clone_of


@pytest.fixture(autouse=True)
def _fresh_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_MEM_VAULT_SYNC_AUTO", "off")  # each push is the test's
    monkeypatch.setattr(identity, "_known", {})  # each test sets its own person
    for name in (
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
    ):
        monkeypatch.delenv(name, raising=False)


def senders(repo: Path, ref: str) -> list[tuple[str, str, dict[str, object]]]:
    """Each entry of the log at ``ref`` in ``repo``: author, committer, and its facts."""
    out = []
    raw = git("log", "--format=%an <%ae>%x00%cn <%ce>%x00%B%x01", ref, cwd=repo)
    for item in raw.split("\x01"):
        if not item.strip():
            continue
        author, committer, body = item.strip("\n").split("\x00")
        facts = json.loads(body.strip().splitlines()[-1]) if "{" in body else {}
        out.append((author, committer, facts))
    return out


def set_person(home: Path, name: str, email: str) -> None:
    git("config", "--global", "user.name", name, cwd=home)
    git("config", "--global", "user.email", email, cwd=home)


def test_entries_carry_the_identity_git_resolves_for_each_route(
    machine: Machine,
    remote: Path,
    project: Path,
    tmp_path: Path,
) -> None:
    home = Path(str(tmp_path / "git-home"))
    set_person(home, "Ada Lovelace", "ada@example.com")
    a = machine("a")
    a.join_remote(str(remote))
    a.create_handoff(to="codex", summary="S", context="C", namespace="elsewhere/x")
    assert a.sync().ok
    sent = senders(remote, f"{LOG_REFS}vault")
    machine_name = json.loads((a.path / ".agent-mem-vault-sync" / "config.json").read_text())[
        "machine"
    ]
    assert sent and all(s[:2] == ("Ada Lovelace <ada@example.com>",) * 2 for s in sent), sent
    assert sent[0][2].get("machine") == machine_name

    # A project's route: the clone's own user.email wins over the global one, as for the
    # person's own commits there.
    clone = clone_of(project, tmp_path / "b-src")
    git("config", "user.email", "ada@work.example", cwd=clone)
    b = machine("b")
    assert b.join_project(NS, clone).ok
    b.create_handoff(to="codex", summary="S", context="C", namespace=NS)
    assert b.sync().ok
    authors = {s[0] for s in senders(project, f"{LOG_REFS}{NS}")}
    assert authors == {"Ada Lovelace <ada@work.example>"}


def test_a_ci_job_names_itself_through_the_environment(
    machine: Machine, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIT_AUTHOR_NAME", "release bot")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "bot@ci.example")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "release bot")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "bot@ci.example")
    a = machine("a")
    a.join_remote(str(remote))
    a.create_handoff(to="codex", summary="S", context="C", namespace=NS)
    assert a.sync().ok
    assert {s[0] for s in senders(remote, f"{LOG_REFS}vault")} == {"release bot <bot@ci.example>"}


def test_a_machine_with_no_git_identity_never_guesses_one(
    machine: Machine, remote: Path, tmp_path: Path
) -> None:
    a = machine("a")
    a.join_remote(str(remote))
    a.create_handoff(to="codex", summary="S", context="C", namespace=NS)
    assert a.sync().ok
    assert {s[0] for s in senders(remote, f"{LOG_REFS}vault")} == {
        "agent-mem-vault <agent-mem-vault@localhost>"
    }
    cli = cli_env(vault=a.path, HOME=str(tmp_path / "git-home"), GIT_CONFIG_NOSYSTEM="1")
    status = succeeded(run_process([BIN, "sync", "--status"], env=cli)).stdout
    assert "sends unnamed from" in status and "git config --global user.email" in status
    set_person(tmp_path / "git-home", "Ada Lovelace", "ada@example.com")
    status = succeeded(run_process([BIN, "sync", "--status"], env=cli)).stdout
    assert "sends as Ada Lovelace <ada@example.com> from " in status
