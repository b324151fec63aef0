"""What a remote receives names the person who sent it, as git resolves them for the route,
and the machine it came from (``vault/sync/identity.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_mem_vault.vault import Vault
from agent_mem_vault.vault.sync import identity
from agent_mem_vault.vault.sync.engine import sync_route
from agent_mem_vault.vault.sync.journal import note_changes
from agent_mem_vault.vault.sync.routes import LOG_REFS, load_config
from tests.cli_process import BIN, cli_env, run_process, succeeded
from tests.git_remote import git, git_env, remote_tree
from tests.mcp_wire import serving

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
    """Each commit a route sent to ``repo``: author, committer, and its facts. ``ref`` is
    its log in layout 1; in layout 2, every ref under the route's prefix (each machine's
    log, the marker, the fence on ``ref``)."""
    route = ref.removeprefix(LOG_REFS)
    team = f"refs/agent-mem-vault-sync/{'_vault' if route == 'vault' else route}/"
    refs = git("for-each-ref", "--format=%(refname)", team, cwd=repo).split()
    out = []
    raw = git("log", "--format=%an <%ae>%x00%cn <%ce>%x00%B%x01", ref, *refs, cwd=repo)
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
    assert any(s[2].get("machine") == machine_name for s in sent)

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


# -- who wrote the text, in every view of one note -----------------------------------------


def person_of(vault: Vault, name: str, email: str) -> str:
    """The vault route of ``vault`` names ``name <email>`` (its own git folder's config,
    as a clone's user.email would): two people on one test machine."""
    folder = vault.path / ".agent-mem-vault-sync" / "vault.git"
    git("config", "--file", str(folder / "config"), "user.name", name)
    git("config", "--file", str(folder / "config"), "user.email", email)
    return f"{name} <{email}>"


def machine_of(vault: Vault) -> str:
    config = json.loads((vault.path / ".agent-mem-vault-sync" / "config.json").read_text())
    return str(config["machine"])


def test_every_view_names_the_person_and_machine_that_wrote_the_text(
    machine: Machine, remote: Path, tmp_path: Path
) -> None:
    a = machine("a")
    assert a.join_remote(str(remote)).ok
    ada = person_of(a, "Ada Lovelace", "ada@example.com")
    made = a.create_handoff(to="codex", summary="Batch it", context="1000 rows", namespace=NS)
    kept = a.save_memory(namespace=NS, title="Batch size", content="1000 rows a batch")
    assert made.origin is not None and made.origin.author == ada  # the write's answer too
    assert a.sync().ok
    b = machine("b")
    assert b.join_remote(str(remote)).ok
    where = machine_of(a)
    said = f"Written by {ada} on {where} (as its note says; not verified)."

    # In the note, for Obsidian.
    text = (b.path / made.path).read_text()
    assert f'written_by: "{ada}"' in text or f"written_by: {ada}" in text
    assert f"written_on: {where}" in text

    cli = cli_env(vault=b.path, AGENT_MEM_VAULT_SYNC_AUTO="off")
    peek = succeeded(run_process([BIN, "peek", "--agent", "codex", "-n", NS], env=cli)).stdout
    assert said in peek.splitlines()[1]  # right under who left it, before the text
    shown = succeeded(run_process([BIN, "show", made.id], env=cli)).stdout
    assert f"written_by:    {ada}" in shown and f"written_on:    {where}" in shown
    assert "verified:      not checked" in shown
    got = succeeded(run_process([BIN, "memory", "get", kept.id], env=cli)).stdout
    assert f"written_by:    {ada}" in got
    as_json = json.loads(succeeded(run_process([BIN, "show", made.id, "--json"], env=cli)).stdout)
    assert as_json["written_by"] == {
        "person": ada,
        "machine": where,
        "verified": None,  # no signers file: not checked
        "signer": None,
        "why": None,
        "sent": True,
        "earlier_unverified": None,
        "released_by": None,
        "changed_by_unverified": None,
        "vouched_by": None,
    }

    env = {**git_env(tmp_path / "home"), "AGENT_MEM_VAULT_SYNC_AUTO": "off"}
    with serving(b.path, "--agent", "codex", "--namespace", NS, env=env) as server:
        peeked = server.call(1, "peek_handoff", {})
        memory = server.call(2, "get_memory", {"id": kept.id})
        read = server.call(3, "read_handoff", {})
    assert said in peeked["content"][0]["text"]
    assert peeked["structuredContent"]["handoff"]["written_by"]["person"] == ada
    assert said in memory["content"][0]["text"]
    assert memory["structuredContent"]["memory"]["written_by"]["machine"] == where
    assert said in read["content"][0]["text"]


def test_a_teammates_read_or_ack_does_not_make_the_text_theirs(
    machine: Machine, remote: Path
) -> None:
    a = machine("a")
    assert a.join_remote(str(remote)).ok
    ada = person_of(a, "Ada Lovelace", "ada@example.com")
    first = a.create_handoff(to="codex", summary="One", context="C", namespace=NS)
    second = a.create_handoff(to="codex", summary="Two", context="C", namespace=NS)
    assert a.sync().ok
    b = machine("b")
    assert b.join_remote(str(remote)).ok
    person_of(b, "Bob Builder", "bob@example.com")
    assert b.read_handoff(agent="codex", namespace=NS) is not None
    b.ack_handoff(first.id)
    assert b.sync().ok
    tree = remote_tree(remote)
    for h in (first, second):
        assert "status: read" in tree[h.path] and "Bob" not in tree[h.path]
    assert a.sync().ok
    assert a.get_handoff(second.id).origin == b.get_handoff(second.id).origin
    assert b.get_handoff(first.id).origin.author == ada  # type: ignore[union-attr]


def test_an_edit_in_obsidian_is_stamped_with_its_editor_before_it_travels(
    machine: Machine, remote: Path
) -> None:
    a = machine("a")
    assert a.join_remote(str(remote)).ok
    person_of(a, "Ada Lovelace", "ada@example.com")
    m = a.save_memory(namespace=NS, title="Batch size", content="1000 rows a batch")
    assert a.sync().ok
    b = machine("b")
    assert b.join_remote(str(remote)).ok
    bob = person_of(b, "Bob Builder", "bob@example.com")
    note = b.path / m.path
    note.write_text(note.read_text().replace("1000 rows", "500 rows"))  # as Obsidian saves
    hand = b.path / NS / "memories" / "hand-written.md"
    hand.write_text("# Deploys\n\nOnly on Tuesdays.\n")  # a note with no properties at all
    own = b.path / "ideas.md"  # a person's own note, not the vault's: sent as it is
    own.write_text("Ideas\n")
    note_changes(b.path, ["ideas.md"])
    assert b.get_memory(m.id).content == "500 rows a batch"  # a look notices the edit
    b.list_memories(namespace=NS)  # and the new note
    assert b.sync().ok

    tree = remote_tree(remote)
    assert "500 rows" in tree[m.path] and "Bob Builder" in tree[m.path]
    assert f"written_on: {machine_of(b)}" in tree[m.path]
    assert "Bob Builder" in tree[f"{NS}/memories/hand-written.md"]
    assert own.read_text() == "Ideas\n" and tree["ideas.md"] == "Ideas\n"
    assert a.sync().ok
    assert a.get_memory(m.id).origin.author == bob  # type: ignore[union-attr]
    # Stamped once: the next sync finds the pair its own and writes nothing again.
    before = note.stat().st_mtime_ns
    assert b.sync().ok
    assert note.stat().st_mtime_ns == before

    # Edited while nothing of the vault ran: the syncer's first pass, which stages every
    # note, stamps it too.
    mine = a.path / m.path
    mine.write_text(mine.read_text().replace("500 rows", "250 rows"))
    config = load_config(a.path)
    assert config is not None and config.vault_route is not None
    sync_route(a, config, config.vault_route, full=True)
    assert "250 rows" in remote_tree(remote)[m.path]
    assert "Ada Lovelace" in remote_tree(remote)[m.path]


def test_a_vault_that_syncs_nowhere_stamps_nothing(machine: Machine) -> None:
    a = machine("a")
    h = a.create_handoff(to="codex", summary="Here", context="C", namespace=NS)
    assert "written_by" not in (a.path / h.path).read_text()
    assert h.origin is None and a.get_handoff(h.id).origin is None
    assert "written_by" not in a.get_handoff(h.id).to_dict()


def test_two_people_changing_one_note_at_once_end_with_the_same_writer_property() -> None:
    from agent_mem_vault.vault.format.merge import merge_notes
    from agent_mem_vault.vault.format.notes import parse_note

    head = "---\ntype: memory\nid: x\ntitle: Plan\nwritten_by: {who}\nwritten_on: {on}\n---\n"
    lines = ["one", "two", "three", "four", "five", "six"]
    base = head.format(who="Ada <a@x>", on="m-a") + "\n".join(lines) + "\n"
    bob = head.format(who="Bob <b@x>", on="m-b") + "\n".join(["ONE", *lines[1:]]) + "\n"
    cy = head.format(who="Cy <c@x>", on="m-c") + "\n".join([*lines[:-1], "SIX"]) + "\n"
    one, other = merge_notes(base, bob, cy), merge_notes(base, cy, bob)
    assert one.text == other.text  # the same bytes on every machine
    assert one.kept is None and other.kept is None  # no conflict copy for the pair
    assert "ONE" in one.text and "SIX" in one.text
    meta = parse_note(one.text).meta  # type: ignore[union-attr]
    assert (meta["written_by"], meta["written_on"]) in {("Bob <b@x>", "m-b"), ("Cy <c@x>", "m-c")}
