"""``install gemini`` / ``install opencode`` and the hand-written brief, via the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import Run


def test_install_gemini_writes_server_and_hook_and_uninstall_restores(run: Run, repo: Path) -> None:
    settings = repo / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"theme": "dark"}\n')
    run("install", "gemini")
    data = json.loads(settings.read_text())
    assert data["theme"] == "dark"
    assert data["mcpServers"]["agent-mem-vault"] == {
        "command": "agent-mem-vault",
        "args": ["serve", "--agent", "gemini"],
    }
    hook = data["hooks"]["SessionStart"][0]["hooks"][0]
    assert hook["command"] == "agent-mem-vault hook session-start --agent gemini --format json"
    assert hook["timeout"] == 10_000  # Gemini CLI counts milliseconds
    assert all(
        line.startswith("unchanged") for line in run("install", "gemini").stdout.splitlines()
    )
    run("uninstall", "gemini")
    assert json.loads(settings.read_text()) == {"theme": "dark"}


def test_install_gemini_dry_run_writes_nothing(run: Run, repo: Path) -> None:
    out = run("install", "gemini", "--dry-run")
    assert '"agent-mem-vault"' in out.stdout and "nothing was written" in out.stderr
    assert not (repo / ".gemini").exists()


def test_install_opencode_writes_the_server_and_the_session_plugin(run: Run, repo: Path) -> None:
    run("install", "opencode")
    config = json.loads((repo / "opencode.json").read_text())
    assert config["mcp"]["agent-mem-vault"]["command"] == [
        "agent-mem-vault",
        "serve",
        "--agent",
        "opencode",
    ]
    assert config["mcp"]["agent-mem-vault"]["type"] == "local"
    plugin = (repo / ".opencode" / "plugin" / "agent-mem-vault.js").read_text()
    assert "experimental.chat.system.transform" in plugin
    assert '"session-start", "--agent", "opencode", "--format", "text"' in plugin
    run("uninstall", "opencode")
    assert not (repo / "opencode.json").exists()
    assert not (repo / ".opencode" / "plugin" / "agent-mem-vault.js").exists()


def test_install_opencode_refuses_to_overwrite_a_plugin_it_did_not_write(
    run: Run, repo: Path
) -> None:
    plugin = repo / ".opencode" / "plugin" / "agent-mem-vault.js"
    plugin.parent.mkdir(parents=True)
    plugin.write_text("export const Mine = 1;\n")
    proc = run("install", "opencode", check=False)
    assert proc.returncode != 0 and "was not written by agent-mem-vault" in proc.stderr
    assert plugin.read_text() == "export const Mine = 1;\n"
    assert not (repo / "opencode.json").exists()


def test_a_brief_written_by_hand_without_frontmatter_is_used_by_the_hook(
    run: Run, repo: Path, tmp_path: Path
) -> None:
    brief = tmp_path / "vault" / "project" / "harbor-api" / "_brief.md"
    brief.parent.mkdir(parents=True)
    brief.write_text("Deploys go through CI only.\n")
    out = run("hook", "session-start", "--agent", "codex", stdin=json.dumps({"cwd": str(repo)}))
    assert "Deploys go through CI only." in out.stdout
