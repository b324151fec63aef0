"""Claude Code with the project-scope install: the committed files alone.

A ``.mcp.json`` server runs only once approved. ``install claude-code`` (project
scope) lists it in ``enabledMcpjsonServers`` of the committed
``.claude/settings.json``, which Claude Code honours in a folder the person has
trusted (the question its first interactive start asks); ``claude -p`` approves
project servers by itself. Both are checked with the real ``claude``.
"""

from __future__ import annotations

import json

import pytest

from .conftest import BRIEF, World, client
from .model_server import Reply, ScriptedModel, Seen

pytestmark = pytest.mark.slow

QUIET = {"DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}


def _trust_folder(world: World) -> None:
    """Record the folder as trusted, where Claude Code's trust dialog records it."""
    path = world.home / ".claude.json"
    data = json.loads(path.read_text()) if path.exists() else {}
    data.setdefault("projects", {}).setdefault(str(world.repo), {})["hasTrustDialogAccepted"] = True
    path.write_text(json.dumps(data))


def test_claude_mcp_list_shows_the_project_server_connected_without_approving(
    world: World,
) -> None:
    claude = client("claude")
    world.amv("install", "claude-code", "--scope", "project")
    _trust_folder(world)
    listed = world.run(claude, "mcp", "list", env=QUIET, timeout=120)
    assert "agent-mem-vault" in listed.stdout, f"{listed.stdout}\n{listed.stderr}"
    line = next(x for x in listed.stdout.splitlines() if x.startswith("agent-mem-vault"))
    assert "Connected" in line, listed.stdout

    # The approval is what install wrote: without it the same server waits for one.
    settings = world.repo / ".claude" / "settings.json"
    data = json.loads(settings.read_text())
    assert data["enabledMcpjsonServers"] == ["agent-mem-vault"]
    del data["enabledMcpjsonServers"]
    settings.write_text(json.dumps(data))
    listed = world.run(claude, "mcp", "list", env=QUIET, timeout=120)
    assert "Pending approval" in listed.stdout, listed.stdout


def test_claude_print_mode_offers_the_project_server_and_runs_the_hook(world: World) -> None:
    claude = client("claude")
    world.amv("install", "claude-code", "--scope", "project")
    first: list[Seen] = []

    def model(seen: Seen) -> Reply:
        names = [t.get("name", "") for t in seen.body.get("tools", [])]
        if "mcp__agent-mem-vault__get_project_brief" in names:
            first.append(seen)
        return Reply(text="ok")

    with ScriptedModel("anthropic", model) as server:
        proc = world.run(
            claude,
            "-p",
            "What is this project?",
            env={
                **QUIET,
                "ANTHROPIC_BASE_URL": server.url,
                "ANTHROPIC_API_KEY": "sk-ant-scripted",
                "ENABLE_TOOL_SEARCH": "false",
            },
        )
        transcript = server.transcript()
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}\n{transcript}"
    assert first, f"the project server's tools were not offered\n{transcript}"
    assert BRIEF.strip() in first[0].text, transcript
