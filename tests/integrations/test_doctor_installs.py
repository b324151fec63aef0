"""``doctor`` judges what ``install`` wrote as the clients will run it.

Real settings files written by the real ``install``, and the real CLI as a
subprocess with a PATH chosen per test: a command that does not resolve, a
Codex hook without trust, a ``.mcp.json`` server Claude Code would hold for
approval are each reported with the file and the one thing to do.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "agent_mem_vault.cli.main"]
VENV_BIN = str(Path(sys.executable).parent)
BARE_PATH = "/usr/bin:/bin"
"""A PATH on which agent-mem-vault is not found (nor codex)."""


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    home, repo = tmp_path / "home", tmp_path / "src" / "harbor-api"
    home.mkdir()
    (repo / ".git").mkdir(parents=True)
    return {"home": home, "repo": repo, "vault": tmp_path / "vault"}


def amv(
    world: dict[str, Path], *args: str, path: str = BARE_PATH
) -> subprocess.CompletedProcess[str]:
    keep = ("LANG", "LC_ALL", "TMPDIR")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update(
        HOME=str(world["home"]),
        XDG_CONFIG_HOME=str(world["home"] / ".config"),
        AGENT_MEM_VAULT=str(world["vault"]),
        AGENT_MEM_VAULT_WARM="0",
        PATH=path,
    )
    return subprocess.run(
        [*CLI, *args],
        cwd=world["repo"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def trust_in_gemini(world: dict[str, Path], level: str = "TRUST_FOLDER") -> None:
    """Record the person's answer to Gemini CLI's folder-trust dialog, as Gemini CLI writes it."""
    rules = world["home"] / ".gemini" / "trustedFolders.json"
    rules.parent.mkdir(parents=True, exist_ok=True)
    rules.write_text(json.dumps({str(world["repo"]): level}))


def install_all_with_the_program_on_path(world: dict[str, Path]) -> None:
    """A vault, and install run for three clients where agent-mem-vault is on PATH."""
    ok(amv(world, "init"))
    for tool in ("claude-code", "gemini", "opencode"):
        ok(amv(world, "install", tool, path=f"{VENV_BIN}:{BARE_PATH}"))
    trust_in_gemini(world)


def install_lines(proc: subprocess.CompletedProcess[str]) -> list[str]:
    return [x for x in proc.stdout.splitlines() if x.startswith("install: ")]


def test_a_project_install_is_healthy_where_agent_mem_vault_is_on_path(
    world: dict[str, Path],
) -> None:
    install_all_with_the_program_on_path(world)
    out = ok(amv(world, "doctor", path=f"{VENV_BIN}:{BARE_PATH}"))
    assert "No problems found." in out
    data = json.loads(ok(amv(world, "doctor", "--json", path=f"{VENV_BIN}:{BARE_PATH}")))
    assert data["installs"] == [] and data["ok"] is True


def test_every_installed_command_not_on_path_is_reported_with_its_fix(
    world: dict[str, Path],
) -> None:
    install_all_with_the_program_on_path(world)
    proc = amv(world, "doctor")
    assert proc.returncode == 7, proc.stdout
    assert "[install_problem]" in proc.stderr
    repo = world["repo"]
    where = {
        ("claude-code", "MCP server", repo / ".mcp.json"),
        ("claude-code", "session hook", repo / ".claude" / "settings.json"),
        ("claude-code", "session-end hook", repo / ".claude" / "settings.json"),
        ("gemini", "MCP server", repo / ".gemini" / "settings.json"),
        ("gemini", "session hook", repo / ".gemini" / "settings.json"),
        ("gemini", "session-end hook", repo / ".gemini" / "settings.json"),
        ("opencode", "MCP server", repo / "opencode.json"),
        ("opencode", "session hook", repo / ".opencode" / "plugin" / "agent-mem-vault.js"),
    }
    lines = install_lines(proc)
    assert len(lines) == len(where), proc.stdout
    for client, what, file in where:
        line = next((x for x in lines if f"{client} {what} in {file} " in x), None)
        assert line is not None, (client, what, file, lines)
        assert "runs 'agent-mem-vault', which is not on PATH" in line
        assert "uv tool install . or pipx install ." in line
        # The fix names a command this shell can run: the executable by its path.
        assert f"run '{VENV_BIN}/agent-mem-vault install {client} --scope user'" in line
    data = json.loads(amv(world, "doctor", "--json").stdout)
    assert data["ok"] is False and len(data["installs"]) == len(where)


def test_a_user_wide_command_that_was_moved_is_reported(
    world: dict[str, Path], tmp_path: Path
) -> None:
    exe = tmp_path / "bin" / "agent-mem-vault"
    exe.parent.mkdir()
    exe.write_text(f'#!/bin/sh\nexec {sys.executable} -m agent_mem_vault.cli.main "$@"\n')
    exe.chmod(0o755)
    ok(amv(world, "init"))
    ok(amv(world, "install", "claude-code", "--scope", "user", "--command", str(exe)))
    assert "No problems found." in ok(amv(world, "doctor"))
    exe.unlink()
    proc = amv(world, "doctor")
    assert proc.returncode == 7
    lines = install_lines(proc)
    assert len(lines) == 3, proc.stdout  # the server, the session hook, the session-end hook
    for line in lines:
        assert f"runs '{exe}', which does not exist or cannot run" in line
        assert f"run '{VENV_BIN}/agent-mem-vault install claude-code --scope user'" in line


def test_a_project_server_claude_code_would_hold_for_approval_is_reported(
    world: dict[str, Path],
) -> None:
    ok(amv(world, "init"))
    ok(amv(world, "install", "claude-code", path=f"{VENV_BIN}:{BARE_PATH}"))
    settings = world["repo"] / ".claude" / "settings.json"
    data = json.loads(settings.read_text())
    assert data["enabledMcpjsonServers"] == ["agent-mem-vault"]
    data["enabledMcpjsonServers"] = ["other"]
    settings.write_text(json.dumps(data))
    path = f"{VENV_BIN}:{BARE_PATH}"
    proc = amv(world, "doctor", path=path)
    assert proc.returncode == 7
    assert install_lines(proc) == [
        f"install: Claude Code holds the server in {world['repo'] / '.mcp.json'} for approval: "
        "it is in no enabledMcpjsonServers; run 'agent-mem-vault install claude-code' to "
        "approve it"
    ], proc.stdout
    ok(amv(world, "install", "claude-code", path=f"{VENV_BIN}:{BARE_PATH}"))
    assert json.loads(settings.read_text())["enabledMcpjsonServers"] == ["other", "agent-mem-vault"]
    assert "No problems found." in ok(amv(world, "doctor", path=path))
    # A rejection the person made is reported, not overridden.
    local = world["repo"] / ".claude" / "settings.local.json"
    local.write_text(json.dumps({"disabledMcpjsonServers": ["agent-mem-vault"]}))
    lines = install_lines(amv(world, "doctor", path=path))
    assert lines and f"disabledMcpjsonServers in {local}; remove it there" in lines[0]
    # Uninstall takes back only its own approval.
    local.unlink()
    ok(amv(world, "uninstall", "claude-code"))
    assert json.loads(settings.read_text()) == {"enabledMcpjsonServers": ["other"]}


def test_a_codex_hook_without_trust_is_reported_without_codex(world: dict[str, Path]) -> None:
    ok(amv(world, "init"))
    installed = amv(world, "install", "codex", "--command", f"{VENV_BIN}/agent-mem-vault")
    assert "codex is not on PATH" in installed.stderr
    proc = amv(world, "doctor")
    assert proc.returncode == 7
    codex = world["home"] / ".codex"
    assert install_lines(proc) == [
        f"install: Codex will not run the session hook in {codex / 'hooks.json'}: no "
        f"trusted_hash for it in {codex / 'config.toml'}; run 'agent-mem-vault install codex' "
        "to record it (or trust it in codex's /hooks)"
    ], proc.stdout


@pytest.mark.parametrize(
    ("level", "said"),
    [(None, "it is not trusted yet"), ("DO_NOT_TRUST", "you chose not to trust it")],
)
def test_a_repository_gemini_cli_does_not_trust_is_reported(
    world: dict[str, Path], level: str | None, said: str
) -> None:
    ok(amv(world, "init"))
    ok(amv(world, "install", "gemini", path=f"{VENV_BIN}:{BARE_PATH}"))
    if level is not None:
        trust_in_gemini(world, level)
    path = f"{VENV_BIN}:{BARE_PATH}"
    proc = amv(world, "doctor", path=path)
    assert proc.returncode == 7
    assert install_lines(proc) == [
        f"install: Gemini CLI will start neither the server nor the session hook in "
        f"{world['repo']}: {said}; start 'gemini' there once and trust the folder "
        "(headless runs: GEMINI_CLI_TRUST_WORKSPACE=true)"
    ], proc.stdout
    # Trusted (here: its parent, as Gemini CLI's TRUST_PARENT rule says), nothing to report.
    trust_in_gemini(world)
    rules = world["home"] / ".gemini" / "trustedFolders.json"
    rules.write_text(json.dumps({str(world["repo"] / "sub"): "TRUST_PARENT"}))
    assert "No problems found." in ok(amv(world, "doctor", path=path))


def test_a_pinned_vault_that_is_not_a_vault_is_reported_with_its_fix(
    world: dict[str, Path], tmp_path: Path
) -> None:
    pinned = tmp_path / "team-vault"
    ok(amv(world, "init"))
    ok(
        amv(
            world, "install", "claude-code", "--scope", "user", "--vault", str(pinned),
            "--temporary-vault",
        )
    )  # fmt: skip
    path = f"{VENV_BIN}:{BARE_PATH}"
    assert "No problems found." in ok(amv(world, "doctor", path=path))
    shutil.rmtree(pinned)  # or a typo made by hand in the settings file
    proc = amv(world, "doctor", path=path)
    assert proc.returncode == 7, proc.stdout
    lines = install_lines(proc)
    assert len(lines) == 3, proc.stdout  # the server and both session hooks pin it
    for line in lines:
        assert f"uses the vault {pinned}, which is gone" in line
        assert f"'agent-mem-vault init --vault {pinned}'" in line
        assert "run 'agent-mem-vault install claude-code --scope user' to pin none" in line
    assert not pinned.exists()  # doctor changes nothing


def test_a_claude_code_session_hook_without_its_session_end_hook_is_reported(
    world: dict[str, Path],
) -> None:
    ok(amv(world, "init"))
    command = f"{sys.executable} -m agent_mem_vault.cli.main"
    ok(amv(world, "install", "claude-code", "--scope", "user", "--command", command))
    settings = world["home"] / ".claude" / "settings.json"
    data = json.loads(settings.read_text())
    del data["hooks"]["SessionEnd"]
    settings.write_text(json.dumps(data))
    proc = amv(world, "doctor")
    assert proc.returncode == 7
    (line,) = [x for x in install_lines(proc) if "session-end" in x]
    assert f"session hook in {settings} has no session-end hook" in line
    assert f"run '{VENV_BIN}/agent-mem-vault install claude-code --scope user'" in line
    ok(amv(world, "install", "claude-code", "--scope", "user", "--command", command))
    assert not [x for x in install_lines(amv(world, "doctor")) if "session-end" in x]
