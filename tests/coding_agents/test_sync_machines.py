"""A handoff that travels between machines, in the real clients, over a network remote.

Machine A and machine B each have their own HOME, their own clone of the project
(served by ``git daemon`` on loopback) and their own vault, joined to the project's
repository with ``agent-mem-vault sync init --project``. Claude Code on A leaves a
handoff; it goes out by itself; Codex on B gets it in its first model request (its
session-start hook fetched it) and takes it with ``read_handoff``, which counts once
the remote took the claim; A's next session start fetches, and A sees it read.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_mem_vault.vault.sync.syncer import stop_syncer
from tests.git_remote import GitDaemon, bare_repo, git, git_env, remote_tree

from .conftest import BRIEF, NAMESPACE, World, client, make_world
from .model_server import ScriptedModel, Seen
from .test_claude_codex import (
    EXPECTED,
    SUMMARY,
    _tool_output,
    claude_hands_off,
    codex_continues,
    install_codex,
    run_claude,
)

pytestmark = pytest.mark.slow

REF = f"refs/agent-mem-vault/{NAMESPACE}"


def _machine(root: Path, url: str, runtime: Path) -> World:
    """A machine: its own HOME, a clone of the project, a vault joined to its repository."""
    root.mkdir()
    world = make_world(root)
    shutil.rmtree(world.repo)
    env = {**world.env, **{k: v for k, v in git_env(world.home).items() if k.startswith("GIT_")}}
    env["AGENT_MEM_VAULT_RUNTIME_DIR"] = str(runtime)  # its own warm process and syncer
    world.env = env
    git("clone", "--quiet", url, world.repo, env=env)
    world.amv("init")
    return world


@pytest.fixture
def machines(tmp_path: Path) -> Iterator[tuple[World, World, GitDaemon]]:
    served = tmp_path / "served"
    project = bare_repo(served / "harbor-api.git")
    seed = tmp_path / "seed"
    env = git_env(tmp_path / "seed-home")
    git("clone", "--quiet", project, seed, env=env)
    (seed / "README.md").write_text("Harbor API\n")
    git("add", "README.md", cwd=seed, env=env)
    git("commit", "-qm", "code", cwd=seed, env=env)
    git("push", "--quiet", "origin", "HEAD:main", cwd=seed, env=env)
    runtimes = [Path(tempfile.mkdtemp(prefix="amv-m")) for _ in range(2)]
    with GitDaemon(served) as daemon:
        url = daemon.url("harbor-api.git")
        a = _machine(tmp_path / "a", url, runtimes[0])
        b = _machine(tmp_path / "b", url, runtimes[1])
        (b.vault / NAMESPACE / "_brief.md").unlink()  # B's brief comes from A, through git
        for world in (a, b):
            world.amv("sync", "init", "--project")
        yield a, b, daemon
        for world in (a, b):
            stop_syncer(world.vault)
    for runtime in runtimes:
        shutil.rmtree(runtime, ignore_errors=True)


def _wait_for(check: Any, what: str, limit: float = 120.0) -> None:
    deadline = time.monotonic() + limit
    while not check():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.1)


def test_a_handoff_left_by_claude_code_on_one_machine_is_taken_by_codex_on_another(
    machines: tuple[World, World, GitDaemon],
) -> None:
    a, b, daemon = machines
    client("claude"), client("codex")
    project = daemon.base / "harbor-api.git"
    first: list[Seen] = []
    claude_model = claude_hands_off(first)  # A's next session hands nothing off

    a.amv("install", "claude-code", "--scope", "user")
    with ScriptedModel("anthropic", claude_model) as model:
        proc = run_claude(a, client("claude"), model)
        transcript = model.transcript()
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}\n{transcript}"
    sent = a.handoffs()
    assert [(h["to"], h["summary"], h["status"]) for h in sent] == [("codex", SUMMARY, "pending")]
    handoff_id = sent[0]["id"]
    path = f"{NAMESPACE}/handoffs/{handoff_id}.md"
    # Nobody ran `sync`: the write went out by itself.
    _wait_for(lambda: path in remote_tree(project, REF), "the handoff reached the remote")

    model, codex_first, outputs = codex_continues(b, install_codex)
    transcript = model.transcript()
    assert codex_first, transcript
    # B's session-start hook fetched A's handoff and A's brief before the first request.
    assert SUMMARY in codex_first[0].text and handoff_id in codex_first[0].text, transcript
    assert BRIEF.strip() in codex_first[0].text, transcript
    assert len(outputs) == 1, transcript
    result = _tool_output(outputs[0])
    taken_one = result["handoff"]
    heading = f"Handoff {handoff_id} from {taken_one['from']} to codex, {taken_one['created_at']}"
    # And who wrote it: the person A's git names, on A's machine.
    writer = taken_one["written_by"]
    config = json.loads((a.vault / ".agent-mem-vault-sync" / "config.json").read_text())
    assert writer["machine"] == config["machine"], writer
    written = (
        f"Written by {writer['person']} on {writer['machine']} (as its note says; not verified)."
    )
    assert result["text"] == f"{heading}\n{written}\n\n{EXPECTED}", transcript
    # The read counted once the remote took it: it is read there already.
    assert "status: read" in remote_tree(project, REF)[path]

    # A's next session: its syncer, watching the remote while A is in use, brings B's
    # read within seconds (the session start lists what it last fetched, never waiting).
    with ScriptedModel("anthropic", claude_model) as model:
        proc = run_claude(a, client("claude"), model)
        transcript = model.transcript()
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}\n{transcript}"
    _wait_for(
        lambda: [(h["id"], h["status"]) for h in a.handoffs()] == [(handoff_id, "read")],
        "A's view showed B's read",
    )
    shown = json.loads(a.amv("show", handoff_id, "--json").stdout)
    assert shown["status"] == "read"
    assert os.path.isdir(a.vault / ".agent-mem-vault-sync")
