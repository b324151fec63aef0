"""Secrets a note gained on this machine never reach its remote (``vault/sync/gate.py``)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from agent_mem_vault.core.errors import ConflictError
from agent_mem_vault.vault import Memory, Vault
from agent_mem_vault.vault.format.notes import parse_note, render_note
from tests.cli_process import BIN, cli_env, in_terminal, run_process, succeeded
from tests.git_remote import git_env, remote_tree
from tests.mcp_wire import serving

from .conftest import NS, Machine

AWS = "AKIAZ7QW3RT5YU2IO4PL"
GITHUB = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
ANTHROPIC = "sk-ant-api03-" + "Xy7" * 12
KEY_BLOCK = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "-----END OPENSSH PRIVATE KEY-----"
)
URL_PASSWORD = "postgres://deploy:Tr0ub4dor-and-3@db.internal:5432/app"
PASSWORD = "DB_PASSWORD=hunter2-but-much-longer-9"

SECRETS = {
    "AWS access key": f"aws_access_key_id = {AWS}",
    "GitHub token": f"push with {GITHUB}",
    "Anthropic key": f"ANTHROPIC_API_KEY={ANTHROPIC}",
    "private key": KEY_BLOCK,
    "URL password": f"connect to {URL_PASSWORD}",
    "secret assignment": PASSWORD,
}


@pytest.fixture(autouse=True)
def _no_syncer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_MEM_VAULT_SYNC_AUTO", "off")  # each push is the test's


def sent_memory(vault: Vault, remote: Path, content: str) -> tuple[Memory, str]:
    """``vault`` joined to ``remote``, a memory saved there and sent: it, and its text
    as the remote has it."""
    vault.join_remote(str(remote))
    memory = vault.save_memory(namespace=NS, title="Plan", content=content)
    assert vault.sync().ok
    return memory, remote_tree(remote)[memory.path]


def remote_objects(repo: Path) -> bytes:
    """Every object the remote holds, as ``cat-file`` prints them: what anyone who can
    fetch from it can read, whichever ref names it."""
    return subprocess.run(
        ["git", "-C", str(repo), "cat-file", "--batch-all-objects", "--batch"],
        capture_output=True,
        check=True,
    ).stdout


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_secrets_of_every_kind_in_handoffs_and_memories_never_reach_the_remote(
    machine: Machine, remote: Path, kind: str
) -> None:
    a = machine("a")
    a.join_remote(str(remote))
    line = SECRETS[kind]
    h = a.create_handoff(to="codex", summary="Deploy", context=f"Run it:\n{line}", namespace=NS)
    m = a.save_memory(namespace=NS, title="Staging", content=f"Creds:\n{line}")
    clean = a.save_memory(namespace=NS, title="Plain", content="Batches of 1000")
    assert a.sync().ok
    tree = remote_tree(remote)
    assert clean.path in tree  # the rest went out
    assert h.path not in tree and m.path not in tree
    secret = line.splitlines()[1] if kind == "private key" else line.split()[-1].split("=")[-1]
    assert secret.encode() not in remote_objects(remote)
    assert kind in (a.held_back(h.path) or "") and kind in (a.held_back(m.path) or "")
    assert a.held_back(clean.path) is None
    # On disk, the notes are as written.
    assert line in (a.path / h.path).read_text()


def test_a_memory_edited_by_hand_with_a_secret_is_held_back_and_its_remote_version_kept(
    machine: Machine, remote: Path
) -> None:
    a = machine("a")
    m, sent = sent_memory(a, remote, "Creds are in the vault")
    note = a.path / m.path
    note.write_text(note.read_text() + f"\nOr just use {GITHUB}\n")
    a.sync()
    assert remote_tree(remote)[m.path] == sent
    assert GITHUB.encode() not in remote_objects(remote)
    assert "GitHub token" in (a.held_back(m.path) or "")


def test_a_held_note_goes_out_once_redacted_in_place(machine: Machine, remote: Path) -> None:
    a = machine("a")
    a.join_remote(str(remote))
    m = a.save_memory(namespace=NS, title=f"Staging {GITHUB}", content=f"key {AWS}\nand more")
    a.sync()
    assert m.path not in remote_tree(remote)
    assert {kind for _line, kind in a.redact_note(m.id, dry_run=True).found} == {
        "GitHub token",
        "AWS access key",
    }
    assert m.path not in remote_tree(remote)  # a dry run writes nothing
    done = a.redact_note(m.path)
    assert done.written and done.path == m.path
    a.sync()
    sent = remote_tree(remote)[m.path]
    assert "[redacted AWS access key]" in sent and "and more" in sent
    assert a.get_memory(m.id).title == "Staging [redacted GitHub token]"
    assert a.held_back(m.path) is None
    objects = remote_objects(remote)
    assert AWS.encode() not in objects and GITHUB.encode() not in objects
    assert not a.redact_note(m.id).written  # nothing left to take out


def test_a_superseded_version_keeps_its_secret_home(machine: Machine, remote: Path) -> None:
    """An update writes a new version; the old one, still holding the secret, stays held
    until it is redacted too."""
    a = machine("a")
    a.join_remote(str(remote))
    m = a.save_memory(namespace=NS, title="Staging", content=f"key {AWS}")
    new = a.update_memory(m.id, content="key in the team's secret store")
    a.sync()
    assert "secret store" in remote_tree(remote)[new.path]
    assert m.path not in remote_tree(remote) and a.held_back(m.path) is not None
    a.redact_note(m.id)
    a.sync()
    assert "[redacted AWS access key]" in remote_tree(remote)[m.path]
    assert AWS.encode() not in remote_objects(remote)


def test_a_secret_the_remote_already_has_is_not_held_back(machine: Machine, remote: Path) -> None:
    """A note that arrived with a secret in it (sent before this machine looked, or by a
    release without the gate) is no secret of this machine's: reading and acking it,
    it travels as any note does."""
    a, b = machine("a"), machine("b")
    a.join_remote(str(remote))
    h = a.create_handoff(to="codex", summary="Deploy", context="soon", namespace=NS)
    a.sync()
    # The remote gets a secret from outside (a teammate's older release), as git writes.
    note = parse_note((a.path / h.path).read_text())
    assert note is not None
    (a.path / h.path).write_text(render_note(note.meta, note.body + f"\nkey {AWS}\n"))
    _force_out(a, h.path)
    b.join_remote(str(remote))
    assert b.held_back(h.path) is None
    taken = b.read_handoff(agent="codex", namespace=NS)
    assert taken is not None and taken.id == h.id
    assert "status: read" in remote_tree(remote)[h.path]


def test_a_held_handoff_the_remote_never_had_is_read_here_alone(
    machine: Machine, remote: Path
) -> None:
    a = machine("a")
    a.join_remote(str(remote))
    h = a.create_handoff(to="codex", summary="Deploy", context=f"key {AWS}", namespace=NS)
    taken = a.read_handoff(agent="codex", namespace=NS)
    assert taken is not None and taken.id == h.id
    assert a.get_handoff(h.id).status == "read"
    assert h.path not in remote_tree(remote)
    assert AWS.encode() not in remote_objects(remote)


def test_a_handoff_the_remote_has_cannot_be_claimed_with_a_secret_gained_here(
    machine: Machine, remote: Path
) -> None:
    a = machine("a")
    a.join_remote(str(remote))
    h = a.create_handoff(to="codex", summary="Deploy", context="soon", namespace=NS)
    a.sync()
    note = a.path / h.path
    note.write_text(note.read_text() + f"\nkey {AWS}\n")
    with pytest.raises(ConflictError) as caught:
        a.read_handoff(agent="codex", namespace=NS)
    assert caught.value.code == "held_back"
    assert "AWS access key" in caught.value.message and "redact" in caught.value.message
    assert a.get_handoff(h.id).status == "pending"  # nothing taken
    assert "status: pending" in remote_tree(remote)[h.path]


def test_a_held_note_merged_with_a_remote_change_sends_nothing_of_it(
    machine: Machine, remote: Path
) -> None:
    a, b = machine("a"), machine("b")
    a.join_remote(str(remote))
    m = a.save_memory(namespace=NS, title="Staging", content="first line")
    a.sync()
    b.join_remote(str(remote))
    note = a.path / m.path
    note.write_text(note.read_text() + f"\nkey {AWS}\n")
    newer = b.update_memory(m.id, tags=["deploy"])  # a new version: the old one superseded
    b.sync()
    a.sync()  # fetches b's change, merges it with the held one, sends none of a's
    mine = (a.path / m.path).read_text()
    assert newer.id in mine and AWS in mine  # both sides' changes, on disk here
    assert AWS.encode() not in remote_objects(remote)
    assert newer.id in remote_tree(remote)[m.path]
    assert a.held_back(m.path) is not None


def _force_out(vault: object, path: str) -> None:
    """Send ``path`` as it is on disk, the gate aside: what a release without it did."""
    from agent_mem_vault.vault.sync import gate

    saved = gate.find_secrets
    gate.find_secrets = lambda text: []  # type: ignore[assignment]
    try:
        assert vault.sync().ok  # type: ignore[attr-defined]
    finally:
        gate.find_secrets = saved


# -- the writer is told: the MCP answer, the CLI's exit 10, sync --status, doctor ----------


def test_the_writer_is_told_which_note_which_kind_which_line(
    machine: Machine, remote: Path, tmp_path: Path
) -> None:
    a = machine("a")
    a.join_remote(str(remote))
    env = {**git_env(tmp_path / "home"), "AGENT_MEM_VAULT_SYNC_AUTO": "off"}

    # Over MCP: an answer, not an error (the note exists; writing it again would make two).
    with serving(a.path, "--agent", "claude-code", "--namespace", NS, env=env) as server:
        made = server.call(
            1,
            "create_handoff",
            {"to": "codex", "summary": "Deploy", "context": f"Use {GITHUB} to push"},
        )
        plain = server.call(2, "save_memory", {"title": "Plain", "content": "Batches of 1000"})
    assert not made.get("isError")
    text = made["content"][0]["text"]
    assert text.startswith("Held back on this machine: line ")
    assert "GitHub token" in text and "agent-mem-vault redact" in text
    assert "do not write it again" in text
    assert "secrets allow" in text  # and what a person does when it is no secret
    held_line = made["structuredContent"]["held_back"]
    path = made["structuredContent"]["handoff"]["path"]
    assert path in held_line and GITHUB not in held_line and GITHUB[:4] in held_line
    assert "held_back" not in plain["structuredContent"]

    # The CLI: what it prints as ever, then the line on stderr, and exit 10.
    cli = cli_env(vault=a.path, **env)
    saved = run_process(
        [BIN, "memory", "save", "-n", NS, "-t", "Creds", "-c", f"DB_PASSWORD={PASSWORD[12:]}"],
        env=cli,
    )
    assert saved.returncode == 10, (saved.stdout, saved.stderr)
    memory_id = saved.stdout.strip()
    assert "secret assignment" in saved.stderr and "redact" in saved.stderr
    made_ok = run_process([BIN, "create", "--to", "codex", "-n", NS, "-s", "S", "-c", "C"], env=cli)
    assert made_ok.returncode == 0 and made_ok.stderr == ""

    # Sync says so and sends the rest; status and doctor name both notes.
    synced = succeeded(run_process([BIN, "sync"], env=cli))
    assert "pushed" in synced.stdout
    status = succeeded(run_process([BIN, "sync", "--status"], env=cli)).stdout
    assert status.count("held back on this machine") == 2 and path in status
    doctor = run_process([BIN, "doctor"], env=cli)
    assert doctor.returncode != 0
    problems = [line for line in doctor.stdout.splitlines() if "held back" in line]
    assert len(problems) == 2 and all(line.startswith("problem: ") for line in problems)
    as_json = json.loads(
        succeeded(run_process([BIN, "sync", "--status", "--json"], env=cli)).stdout
    )
    kinds = {f["kind"] for r in as_json["routes"] for h in r["held_back"] for f in h["found"]}
    assert kinds == {"GitHub token", "secret assignment"}

    # redact frees them: listed first, then replaced; the next sync sends them.
    dry = succeeded(run_process([BIN, "redact", memory_id, "--dry-run"], env=cli)).stdout
    assert "would replace 1 secret" in dry and "secret assignment" in dry
    succeeded(run_process([BIN, "redact", memory_id], env=cli))
    succeeded(run_process([BIN, "redact", path], env=cli))
    succeeded(run_process([BIN, "sync"], env=cli))
    status = succeeded(run_process([BIN, "sync", "--status"], env=cli)).stdout
    assert "held back" not in status
    assert path in remote_tree(remote)
    assert GITHUB.encode() not in remote_objects(remote)
    assert plain["structuredContent"]["memory"]["path"] in remote_tree(remote)


def test_redact_names_what_it_cannot_find(machine: Machine, tmp_path: Path) -> None:
    a = machine("a")
    cli = cli_env(vault=a.path, **git_env(tmp_path / "home"))
    missing = run_process([BIN, "redact", "3l6qyvzp7ns2c"], env=cli)
    assert (
        missing.returncode == 3 and "no handoff or memory with id 3l6qyvzp7ns2c" in missing.stderr
    )
    bad = run_process([BIN, "redact", "not-an-id"], env=cli)
    assert bad.returncode == 2 and "not a handoff or memory id" in bad.stderr
    outside = run_process([BIN, "redact", "../elsewhere.md"], env=cli)
    assert outside.returncode == 3 and "no note at" in outside.stderr
    m = a.save_memory(namespace=NS, title="Plain", content="Batches of 1000")
    before = (a.path / m.path).read_bytes()
    clean = succeeded(run_process([BIN, "redact", m.id], env=cli))
    assert "nothing that looks like a secret" in clean.stdout
    assert (a.path / m.path).read_bytes() == before


# -- allowed by a person at a terminal ---------------------------------------------------


EXAMPLE_KEY = "AKIAIOSFODNN7EXAMPLE"  # the key AWS's own documentation uses


def test_an_allowed_finding_goes_out_and_a_new_secret_in_the_same_note_is_held(
    machine: Machine, remote: Path, tmp_path: Path
) -> None:
    a = machine("a")
    a.join_remote(str(remote))
    m = a.save_memory(
        namespace=NS, title="How to set up the CLI", content=f"export KEY_ID={EXAMPLE_KEY}"
    )
    a.sync()
    assert m.path not in remote_tree(remote)
    line = int((a.held_back(m.path) or "").split("line ")[1].split()[0])
    cli = cli_env(vault=a.path, **git_env(tmp_path / "home"), AGENT_MEM_VAULT_SYNC_AUTO="off")

    declined = in_terminal([BIN, "secrets", "allow", m.id, "--line", str(line)], cli, "no\n")
    assert declined[0] == 1 and "Nothing allowed." in declined[1]
    status, shown = in_terminal(
        [BIN, "secrets", "allow", m.id, "--line", str(line)], cli, "allow\n"
    )
    assert status == 0, shown
    assert "AWS access key" in shown and "allowed:" in shown and EXAMPLE_KEY not in shown
    assert a.held_back(m.path) is None
    a.sync()
    assert EXAMPLE_KEY in remote_tree(remote)[m.path]

    # A real secret added to the same note is held again; the allowed one is not named.
    note = a.path / m.path
    note.write_text(note.read_text() + f"\nand the real one: {GITHUB}\n")
    told = a.held_back(m.path) or ""
    assert "GitHub token" in told and "AWS" not in told
    a.sync()
    assert GITHUB.encode() not in remote_objects(remote)


def test_a_secret_cannot_be_allowed_without_a_terminal(
    machine: Machine, remote: Path, tmp_path: Path
) -> None:
    a = machine("a")
    a.join_remote(str(remote))
    m = a.save_memory(namespace=NS, title="Keys", content=f"KEY_ID={EXAMPLE_KEY}")
    cli = cli_env(vault=a.path, **git_env(tmp_path / "home"), AGENT_MEM_VAULT_SYNC_AUTO="off")
    refused = run_process([BIN, "secrets", "allow", m.id, "--line", "14"], env=cli, input="allow\n")
    assert refused.returncode == 5
    assert "allow_needs_a_person" in refused.stderr and "redact" in refused.stderr
    assert not (a.path / ".agent-mem-vault-sync" / "allowed.json").exists()
    assert a.held_back(m.path) is not None
    # And a line that holds nothing says what the note does hold.
    status, shown = in_terminal([BIN, "secrets", "allow", m.id, "--line", "2"], cli, "allow\n")
    assert status == 3 and "no secret on line 2" in shown and "AWS access key" in shown
