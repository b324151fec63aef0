"""The vault design's exchange with the Claude Code and Codex plugins alone.

Each client adds the plugin with its own commands, offline, from a local folder:
Claude Code from the repository (a clone is a marketplace), Codex from the
folder ``agent-mem-vault plugin path codex`` prints (the installed package's).
No ``agent-mem-vault install`` runs. Claude Code leaves ``create_handoff``; Codex's
next session sees it in the plugin's session-start hook and takes it with
``read_handoff``, as in ``test_claude_codex.py``.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from agent_mem_vault.integrations.plugin_files import MISSING

from .conftest import BIN, BRIEF, CLI, World, client
from .model_server import Reply, ScriptedModel, Seen
from .test_claude_codex import (
    EXPECTED,
    SUMMARY,
    _tool_output,
    claude_hands_off,
    codex_takes_a_handoff,
    codex_uses,
)

pytestmark = pytest.mark.slow

REPO_ROOT = Path(__file__).resolve().parents[2]
SELECTOR = "agent-mem-vault@agent-mem-vault"
CLAUDE_TOOL = "mcp__plugin_agent-mem-vault_agent-mem-vault__create_handoff"
CLAUDE_ENV = {
    "DISABLE_AUTOUPDATER": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "ENABLE_TOOL_SEARCH": "false",
    "ANTHROPIC_API_KEY": "sk-ant-scripted",
}


def ok(proc: Any) -> str:
    assert proc.returncode == 0, f"{proc.args}\n{proc.stdout}\n{proc.stderr}"
    return str(proc.stdout)


def add_claude_plugin(world: World, folder: Path) -> None:
    """The plugin from ``folder``; the vault $AGENT_MEM_VAULT names made first, as a
    person who names one has it (the default vault is made at first use)."""
    if not (world.vault / ".agent-mem-vault").exists():
        world.amv("init")
    warm_up(world)
    claude = client("claude")
    ok(world.run(claude, "plugin", "marketplace", "add", folder, timeout=120))
    ok(world.run(claude, "plugin", "install", SELECTOR, timeout=120))


def warm_up(world: World) -> None:
    """Start the warm process, as any earlier session on the machine has: ``claude -p``
    waits about 3 s for a server, less than a cold Python start on a loaded machine
    (docs/agents.md, "A fast start"); the hook starts it and runs in its own process."""
    world.run(*CLI, "plugin", "hook", "claude-code", timeout=60)


def add_codex_plugin(world: World) -> None:
    codex = client("codex")
    folder = world.amv("plugin", "path", "codex").stdout.strip()
    ok(world.run(codex, "plugin", "marketplace", "add", folder, timeout=120))
    ok(world.run(codex, "plugin", "add", SELECTOR, timeout=120))
    trusted = world.amv("plugin", "trust", "codex").stdout
    assert "trusted" in trusted and "session_start" in trusted, trusted


def run_claude(world: World, model: ScriptedModel, env: dict[str, str] | None = None) -> Any:
    return world.run(
        client("claude"),
        "-p",
        "Hand the orders backfill to codex.",
        "--allowedTools",
        CLAUDE_TOOL,
        env={**CLAUDE_ENV, "ANTHROPIC_BASE_URL": model.url, **(env or {})},
    )


def test_the_claude_code_plugin_leaves_a_handoff_that_the_codex_plugin_takes(
    world: World,
) -> None:
    first: list[Seen] = []
    add_claude_plugin(world, REPO_ROOT)
    with ScriptedModel("anthropic", claude_hands_off(first)) as model:
        proc = run_claude(world, model)
        transcript = model.transcript()
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}\n{transcript}"
    assert first, f"Claude Code never offered the plugin's create_handoff\n{transcript}"
    tools = [t.get("name") for t in first[0].body.get("tools", [])]
    assert CLAUDE_TOOL in tools, tools
    assert BRIEF.strip() in first[0].text, transcript
    assert "Pending handoffs for claude-code" in first[0].text, transcript
    sent = world.handoffs()
    assert [(h["to"], h["from"], h["status"]) for h in sent] == [
        ("codex", "claude-code", "pending")
    ], sent

    outputs: list[Any] = []
    codex_first: list[Seen] = []
    with ScriptedModel("responses", codex_takes_a_handoff(outputs, codex_first)) as model:
        codex_uses(world, model)
        add_codex_plugin(world)
        proc = world.run(
            client("codex"),
            "exec",
            "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox",
            "Continue the work.",
        )
        transcript = model.transcript()
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}\n{transcript}"
    assert codex_first, f"Codex never offered the plugin's read_handoff\n{transcript}"
    assert SUMMARY in codex_first[0].text and BRIEF.strip() in codex_first[0].text, transcript
    assert "Pending handoffs for codex" in codex_first[0].text, transcript
    assert len(outputs) == 1, transcript
    result = _tool_output(outputs[0])
    assert result["text"].endswith(EXPECTED), result
    assert [(h["to"], h["status"]) for h in world.handoffs()] == [("codex", "read")]
    # Nothing of install's in either client's files: the plugins alone did it.
    assert not (world.home / ".codex" / "hooks.json").exists()
    assert "mcpServers" not in json.loads((world.home / ".claude.json").read_text())
    doctor = world.run(*CLI, "doctor", timeout=120)
    assert "registered twice" not in doctor.stdout, doctor.stdout
    assert "has the agent-mem-vault plugin" in doctor.stdout, doctor.stdout


def test_without_the_program_the_plugin_tells_the_agent_how_to_install_it(world: World) -> None:
    """A PATH without agent-mem-vault: the session's first request carries the one line."""
    add_claude_plugin(world, REPO_ROOT)
    node = shutil.which("node")
    assert node is not None
    bare = os.pathsep.join([str(BIN), str(Path(node).parent), "/usr/bin", "/bin"])
    assert shutil.which("agent-mem-vault", path=bare) is None
    seen: list[Seen] = []

    def script(request: Seen) -> Reply:
        seen.append(request)
        return Reply(text="ok")

    with ScriptedModel("anthropic", script) as model:
        proc = run_claude(world, model, env={"PATH": bare})
        transcript = model.transcript()
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}\n{transcript}"
    assert any(MISSING in s.text for s in seen), transcript


def test_install_after_the_plugin_writes_nothing_and_the_plugin_after_install_says_so(
    world: World,
) -> None:
    """One server and one hook per client: install declines beside the plugin; the
    plugin beside an earlier install prints no second brief and names the fix."""
    add_claude_plugin(world, REPO_ROOT)
    said = world.amv("install", "claude-code", "--scope", "user")
    assert "already registers" in said.stderr, said.stderr
    assert not (world.home / ".claude" / "settings.json").read_text().count("session-start")
    assert "mcpServers" not in json.loads((world.home / ".claude.json").read_text())

    claude = client("claude")
    ok(world.run(claude, "plugin", "uninstall", SELECTOR, timeout=120))
    world.amv("install", "claude-code", "--scope", "user")
    ok(world.run(claude, "plugin", "install", SELECTOR, timeout=120))
    first: list[Seen] = []
    with ScriptedModel("anthropic", claude_hands_off(first)) as model:
        proc = run_claude(world, model)
        transcript = model.transcript()
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}\n{transcript}"
    assert first, transcript
    assert first[0].text.count("Pending handoffs for claude-code") == 1, transcript
    assert "registered twice in Claude Code" in first[0].text, transcript
    assert "agent-mem-vault uninstall claude-code --scope user" in first[0].text, transcript
    doctor = world.run(*CLI, "doctor", timeout=120)
    assert doctor.returncode == 7, doctor.stdout
    assert "registered twice in Claude Code" in doctor.stdout, doctor.stdout

    world.amv("uninstall", "claude-code", "--scope", "user")
    doctor = world.run(*CLI, "doctor", timeout=120)
    assert "registered twice" not in doctor.stdout, doctor.stdout
