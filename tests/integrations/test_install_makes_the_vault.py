"""``install`` makes the vault its server will open, so the first start after it works.

``serve`` refuses a folder that is not a vault; ``install`` is where one is made
on purpose (the vault it pins, else the one this environment names). Each test
installs into a throwaway HOME, then starts the server exactly as the tool would,
from the command the tool's own file registers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

from agent_mem_vault.vault.folder.layout import is_vault
from mcp import Client, StdioServerParameters

CLI = [sys.executable, "-m", "agent_mem_vault.cli.main"]
NS = "project/harbor-api"

Proc = subprocess.CompletedProcess[str]


def _env(home: Path) -> dict[str, str]:
    """This environment without any AGENT_MEM_VAULT setting or tool home, HOME at ``home``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AGENT_MEM_VAULT", "CODEX_", "CLAUDE_"))
        or k == "AGENT_MEM_VAULT_RUNTIME_DIR"
    }
    env.update(HOME=str(home), PATH=f"{Path(sys.executable).parent}{os.pathsep}/usr/bin:/bin")
    return env


def _cli(home: Path, cwd: Path) -> Callable[..., Proc]:
    def run(*args: str) -> Proc:
        proc = subprocess.run(
            [*CLI, *args], capture_output=True, text=True, env=_env(home), cwd=cwd, timeout=120
        )
        assert proc.returncode == 0, proc.stderr
        return proc

    return run


async def _create_through(command: str, args: list[str], home: Path, cwd: Path) -> str:
    """Start the registered server as the tool would and leave one handoff through it."""
    params = StdioServerParameters(command=command, args=args, env=_env(home), cwd=str(cwd))
    async with Client(params) as client:
        result = await client.call_tool(
            "create_handoff", {"to": "codex", "summary": "s", "context": "c", "namespace": NS}
        )
    assert not result.is_error, result.content
    return str(result.structured_content["handoff"]["id"])


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "harbor-api"
    (repo / ".git").mkdir(parents=True)
    return repo


async def test_install_codex_makes_the_default_vault_and_its_server_starts(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    out = _cli(home, tmp_path)("install", "codex").stdout
    vault = home / "agent-mem-vault"
    assert is_vault(vault)
    assert f"created   the vault {vault}" in out
    server = tomllib.loads((home / ".codex" / "config.toml").read_text())["mcp_servers"][
        "agent-mem-vault"
    ]
    assert "--vault" not in server["args"]  # found at run time, as every command finds it
    assert server["env_vars"] == ["AGENT_MEM_VAULT"]
    handoff = await _create_through(server["command"], server["args"], home, tmp_path)
    assert (vault / "project" / "harbor-api" / "handoffs" / f"{handoff}.md").is_file()


async def test_install_claude_code_in_a_repository_makes_the_vault_its_mcp_json_server_opens(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    repo = _repo(tmp_path)
    _cli(home, repo)("install", "claude-code")
    vault = home / "agent-mem-vault"  # .mcp.json pins no vault: the server opens the default
    assert is_vault(vault)
    server = json.loads((repo / ".mcp.json").read_text())["mcpServers"]["agent-mem-vault"]
    assert "--vault" not in server["args"]
    command = str(Path(sys.executable).parent / server["command"])
    handoff = await _create_through(command, server["args"], home, repo)
    assert (vault / "project" / "harbor-api" / "handoffs" / f"{handoff}.md").is_file()


def test_install_makes_the_vault_it_pins_and_no_other(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    pinned = tmp_path / "team-vault"
    run = _cli(home, _repo(tmp_path))
    run("install", "claude-code", "--scope", "user", "--vault", str(pinned), "--temporary-vault")
    assert is_vault(pinned)
    assert not (home / "agent-mem-vault").exists()
    again = run(
        "install", "claude-code", "--scope", "user", "--vault", str(pinned), "--temporary-vault"
    ).stdout
    assert "the vault" not in again  # already a vault: nothing to say


def test_install_dry_run_and_uninstall_make_no_vault(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    run = _cli(home, _repo(tmp_path))
    dry = run("install", "codex", "--dry-run")
    assert f"the vault {home / 'agent-mem-vault'} would be made" in dry.stderr
    run("uninstall", "codex")
    assert not (home / "agent-mem-vault").exists()
