"""``install`` / ``uninstall`` for Claude Code and Codex, checked byte for byte."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from .conftest import Run

# A real executable: install refuses to register a command that cannot run.
EXE = str(Path(sys.executable).parent / "agent-mem-vault")

CLAUDE_MCP_JSON = f"""\
{{
  "mcpServers": {{
    "agent-mem-vault": {{
      "type": "stdio",
      "command": "{EXE}",
      "args": [
        "serve",
        "--agent",
        "claude-code"
      ]
    }}
  }}
}}
"""

HOOK = f"{EXE} hook session-start --agent claude-code --client claude-code --format json"
END_HOOK = f"{EXE} hook session-end --agent claude-code --client claude-code"
CLAUDE_SETTINGS_JSON = f"""\
{{
  "hooks": {{
    "SessionStart": [
      {{
        "matcher": "startup|resume|clear|compact",
        "hooks": [
          {{
            "type": "command",
            "command": "{HOOK}",
            "timeout": 10
          }}
        ]
      }}
    ],
    "SessionEnd": [
      {{
        "matcher": "*",
        "hooks": [
          {{
            "type": "command",
            "command": "{END_HOOK}",
            "timeout": 10
          }}
        ]
      }}
    ]
  }}
}}
"""

# Project scope also approves the .mcp.json server, as Claude Code's dialog would.
CLAUDE_PROJECT_SETTINGS_JSON = (
    CLAUDE_SETTINGS_JSON[:-3]
    + """,
  "enabledMcpjsonServers": [
    "agent-mem-vault"
  ]
}
"""
)

CODEX_CONFIG_TOML = f"""\
[mcp_servers.agent-mem-vault]
command = "{EXE}"
args = ["serve", "--agent", "codex", "--vault", "/data/vault"]
env_vars = ["AGENT_MEM_VAULT"]
startup_timeout_sec = 30

[features]
hooks = true # added by agent-mem-vault install
"""
VAULT = ("--vault", "/data/vault")


def snapshot(*roots: Path) -> dict[str, bytes]:
    return {
        str(p): p.read_bytes() for root in roots for p in sorted(root.rglob("*")) if p.is_file()
    }


def test_install_claude_code_writes_mcp_json_and_the_session_hook(run: Run, repo: Path) -> None:
    out = run("install", "claude-code", "--command", EXE).stdout
    assert (repo / ".mcp.json").read_text() == CLAUDE_MCP_JSON
    assert (repo / ".claude" / "settings.json").read_text() == CLAUDE_PROJECT_SETTINGS_JSON
    assert f"created   {repo / '.mcp.json'}" in out


def test_install_claude_code_user_scope_writes_claude_json_in_home(
    run: Run, home: Path, repo: Path
) -> None:
    (home / ".claude.json").write_text('{"numStartups": 7, "projects": {"/x": {}}}')
    run("install", "claude-code", "--scope", "user", "--command", EXE, *VAULT)
    data = json.loads((home / ".claude.json").read_text())
    assert data["numStartups"] == 7 and data["projects"] == {"/x": {}}
    args = data["mcpServers"]["agent-mem-vault"]["args"]
    assert args == ["serve", "--agent", "claude-code", *VAULT]
    pinned = CLAUDE_SETTINGS_JSON.replace(HOOK, f"{HOOK} --vault /data/vault").replace(
        END_HOOK, f"{END_HOOK} --vault /data/vault"
    )
    assert (home / ".claude" / "settings.json").read_text() == pinned
    assert not (repo / ".mcp.json").exists()


def test_install_keeps_the_permissions_of_a_file_it_rewrites(run: Run, home: Path) -> None:
    # ~/.claude.json holds tokens; a user who made it 0600 must find it 0600 again.
    claude_json = home / ".claude.json"
    claude_json.write_text('{"numStartups": 7}')
    claude_json.chmod(0o600)
    run("install", "claude-code", "--scope", "user", "--command", EXE, *VAULT)
    assert "mcpServers" in json.loads(claude_json.read_text())
    assert claude_json.stat().st_mode & 0o777 == 0o600


def test_install_codex_writes_config_toml_and_hooks_json(run: Run, home: Path) -> None:
    run("install", "codex", "--command", EXE, *VAULT)
    assert (home / ".codex" / "config.toml").read_text() == CODEX_CONFIG_TOML
    hooks = json.loads((home / ".codex" / "hooks.json").read_text())
    (end,) = hooks["hooks"]["SessionEnd"]
    assert end["matcher"] == ""
    assert end["hooks"][0]["command"] == (
        f"{EXE} hook session-end --agent codex --client codex --vault /data/vault"
    )
    (group,) = hooks["hooks"]["SessionStart"]
    assert group["matcher"] == "startup|resume"
    assert group["hooks"] == [
        {
            "type": "command",
            "command": f"{EXE} hook session-start --agent codex --client codex --format json "
            "--vault /data/vault",
            "timeout": 10,
        }
    ]


def test_install_codex_honours_codex_home(run: Run, home: Path, tmp_path: Path) -> None:
    codex_home = tmp_path / "elsewhere"
    env = {**os.environ, "HOME": str(home), "CODEX_HOME": str(codex_home)}
    subprocess.run(
        [
            sys.executable,
            "-m",
            "agent_mem_vault.cli.main",
            "install",
            "codex",
            "--command",
            EXE,
            *VAULT,
        ],
        env=env,
        check=True,
        capture_output=True,
    )
    assert (codex_home / "config.toml").read_text() == CODEX_CONFIG_TOML
    assert not (home / ".codex").exists()


@pytest.mark.parametrize("tool", ["claude-code", "codex"])
def test_rerunning_install_changes_nothing(run: Run, home: Path, repo: Path, tool: str) -> None:
    run("install", tool, "--command", EXE)
    before = snapshot(home, repo)
    out = run("install", tool, "--command", EXE).stdout
    assert snapshot(home, repo) == before
    assert all(line.startswith("unchanged") for line in out.splitlines())


def test_install_claude_code_merges_and_never_loses_existing_settings(run: Run, repo: Path) -> None:
    (repo / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"github": {"command": "gh-mcp"}}, "x": 1}, indent=4)
    )
    (repo / ".claude").mkdir()
    settings = {
        "permissions": {"allow": ["Bash(npm test)"]},
        "hooks": {
            "SessionStart": [
                {"matcher": "startup", "hooks": [{"type": "command", "command": "a"}]}
            ],
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "b"}]}],
        },
    }
    (repo / ".claude" / "settings.json").write_text(json.dumps(settings))
    run("install", "claude-code", "--command", EXE)
    mcp = json.loads((repo / ".mcp.json").read_text())
    assert mcp["x"] == 1 and mcp["mcpServers"]["github"] == {"command": "gh-mcp"}
    assert mcp["mcpServers"]["agent-mem-vault"]["command"] == EXE
    merged = json.loads((repo / ".claude" / "settings.json").read_text())
    assert merged["permissions"] == settings["permissions"]
    assert merged["hooks"]["PreToolUse"] == settings["hooks"]["PreToolUse"]  # type: ignore[index]
    starts = merged["hooks"]["SessionStart"]
    assert starts[0] == settings["hooks"]["SessionStart"][0]  # type: ignore[index]
    assert len(starts) == 2 and "hook session-start" in starts[1]["hooks"][0]["command"]


def test_install_codex_keeps_comments_and_formatting_of_config_toml(run: Run, home: Path) -> None:
    theirs = (
        "# my codex settings\n"
        'model = "gpt-5"   # the fast one\n'
        "\n"
        "[mcp_servers.github]\n"
        'command = "gh-mcp"\n'
        "\n"
    )
    original = theirs + "[features]\nweb_search = true\n"
    (home / ".codex").mkdir()
    (home / ".codex" / "config.toml").write_text(original)
    run("install", "codex", "--command", EXE, *VAULT)
    after = (home / ".codex" / "config.toml").read_text()
    assert after == theirs + (
        "[mcp_servers.agent-mem-vault]\n"
        f'command = "{EXE}"\n'
        'args = ["serve", "--agent", "codex", "--vault", "/data/vault"]\n'
        'env_vars = ["AGENT_MEM_VAULT"]\n'
        "startup_timeout_sec = 30\n"
        "\n"
        "[features]\n"
        "web_search = true\n"
        "hooks = true # added by agent-mem-vault install\n"
    )
    tomllib.loads(after)
    run("uninstall", "codex", "--command", EXE)
    assert (home / ".codex" / "config.toml").read_text() == original
    assert not (home / ".codex" / "hooks.json").exists()


def test_install_updates_a_stale_entry_in_place(run: Run, repo: Path, tmp_path: Path) -> None:
    old = tmp_path / "old" / "agent-mem-vault"
    old.parent.mkdir()
    old.write_text("#!/bin/sh\n")
    old.chmod(0o755)
    run("install", "claude-code", "--command", str(old))
    old.unlink()  # moved since
    run("install", "claude-code", "--command", EXE)
    assert (repo / ".mcp.json").read_text() == CLAUDE_MCP_JSON
    assert (repo / ".claude" / "settings.json").read_text() == CLAUDE_PROJECT_SETTINGS_JSON


@pytest.mark.parametrize("tool", ["claude-code", "codex"])
def test_dry_run_shows_a_diff_and_writes_nothing(
    run: Run, home: Path, repo: Path, tool: str
) -> None:
    before = snapshot(home, repo)
    proc = run("install", tool, "--command", EXE, "--dry-run")
    assert snapshot(home, repo) == before
    assert "+++ " in proc.stdout and "agent-mem-vault" in proc.stdout
    assert "dry run: nothing was written" in proc.stderr


def test_uninstall_dry_run_shows_removals_only(run: Run, repo: Path) -> None:
    run("install", "claude-code", "--command", EXE)
    proc = run("uninstall", "claude-code", "--dry-run")
    removed = [line for line in proc.stdout.splitlines() if line.startswith("-")]
    added = [line for line in proc.stdout.splitlines() if line.startswith("+")]
    assert any("agent-mem-vault" in line for line in removed)
    assert all(line.startswith("+++") for line in added)
    assert (repo / ".mcp.json").read_text() == CLAUDE_MCP_JSON


@pytest.mark.parametrize("tool", ["claude-code", "codex"])
def test_uninstall_removes_only_what_install_added(
    run: Run, home: Path, repo: Path, tool: str
) -> None:
    (repo / ".mcp.json").write_text('{\n    "mcpServers": {"github": {"command": "gh"}}\n}\n')
    (repo / ".claude").mkdir()
    (repo / ".claude" / "settings.json").write_text('{"model": "opus"}')
    (home / ".codex").mkdir()
    (home / ".codex" / "config.toml").write_text('model = "o3"\n\n[features]\ncodex_hooks = true\n')
    (home / ".codex" / "hooks.json").write_text('{"hooks": {"Stop": []}}')
    before = snapshot(home, repo)
    run("install", tool, "--command", EXE)
    assert snapshot(home, repo) != before
    run("uninstall", tool)
    # Byte for byte: the person's own layout ({"github": …} on one line) included.
    assert snapshot(home, repo) == before


@pytest.mark.parametrize("tool", ["claude-code", "codex"])
def test_uninstall_of_a_fresh_install_leaves_no_files_behind(
    run: Run, home: Path, repo: Path, tool: str
) -> None:
    before = snapshot(home, repo)
    run("install", tool, "--command", EXE)
    run("uninstall", tool)
    assert snapshot(home, repo) == before
    assert not (home / ".codex" / "config.toml").exists()


def test_install_refuses_to_touch_a_file_that_does_not_parse(run: Run, repo: Path) -> None:
    (repo / ".mcp.json").write_text("{not json")
    proc = run("install", "claude-code", "--command", EXE, check=False)
    assert proc.returncode == 7
    assert ".mcp.json is not valid JSON" in proc.stderr
    assert (repo / ".mcp.json").read_text() == "{not json"
    assert not (repo / ".claude").exists()


def test_install_pins_the_vault_when_asked(run: Run, repo: Path, tmp_path: Path) -> None:
    vault = tmp_path / "team vault"
    run("install", "claude-code", "--command", EXE, "--vault", str(vault), "--temporary-vault")
    server = json.loads((repo / ".mcp.json").read_text())["mcpServers"]["agent-mem-vault"]
    assert server["args"] == ["serve", "--agent", "claude-code", "--vault", str(vault)]
    hook = json.loads((repo / ".claude" / "settings.json").read_text())
    command = hook["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    assert command.endswith(f"--vault '{vault}'")


def test_install_finds_the_repository_from_a_subfolder(run: Run, repo: Path) -> None:
    sub = repo / "app" / "models"
    sub.mkdir(parents=True)
    run("install", "claude-code", "--command", EXE, cwd=sub)
    assert (repo / ".mcp.json").read_text() == CLAUDE_MCP_JSON
    assert not (sub / ".mcp.json").exists()


def test_project_files_name_the_bare_command_and_no_path_of_this_machine(
    run: Run, repo: Path
) -> None:
    run("install", "claude-code")
    server = json.loads((repo / ".mcp.json").read_text())["mcpServers"]["agent-mem-vault"]
    assert server["command"] == "agent-mem-vault" and "--vault" not in server["args"]
    assert "agent-mem-vault hook" in (repo / ".claude" / "settings.json").read_text()
    assert str(Path(sys.executable).parent) not in (repo / ".claude" / "settings.json").read_text()


def test_user_wide_install_registers_an_executable_that_exists(run: Run, home: Path) -> None:
    run("install", "claude-code", "--scope", "user")
    server = json.loads((home / ".claude.json").read_text())["mcpServers"]["agent-mem-vault"]
    assert Path(server["command"]).is_absolute() and Path(server["command"]).exists()


def test_a_settings_file_changed_while_installing_is_left_with_its_edit(tmp_path: Path) -> None:
    from agent_mem_vault.core.errors import ConflictError
    from agent_mem_vault.integrations.config_files import apply_changes, json_change, load_json

    target = tmp_path / ".claude.json"
    target.write_text('{"numStartups": 1}\n')
    before = target.read_text()
    change = json_change(target, before, {**load_json(target, before), "mcpServers": {}})
    # Claude Code rewrites its file between our read and our write.
    target.write_text('{"numStartups": 2}\n')
    with pytest.raises(ConflictError) as info:
        apply_changes([change])
    assert info.value.code == "file_changed" and "Run the command again" in info.value.message
    assert target.read_text() == '{"numStartups": 2}\n'
