"""``install`` never writes what would break a client: no vault pinned behind the
person's back, none under a temporary folder without asking, no Codex server that
can stop Codex from starting, and no command the client could not run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from .conftest import CLI, Run

EXE = str(Path(sys.executable).parent / "agent-mem-vault")


def snapshot(*roots: Path) -> dict[str, bytes]:
    return {
        str(p): p.read_bytes() for root in roots for p in sorted(root.rglob("*")) if p.is_file()
    }


def test_install_pins_no_vault_unless_one_is_named(run: Run, home: Path, repo: Path) -> None:
    # The shell names a vault (as the README's scratch one does): nothing pins it.
    run("install", "codex")
    run("install", "claude-code", "--scope", "user")
    config = (home / ".codex" / "config.toml").read_text()
    assert "--vault" not in config
    assert "--vault" not in (home / ".codex" / "hooks.json").read_text()
    assert "--vault" not in (home / ".claude.json").read_text()
    assert "--vault" not in (home / ".claude" / "settings.json").read_text()
    server = tomllib.loads(config)["mcp_servers"]["agent-mem-vault"]
    # Codex passes a server no environment unless told: the vault's variable is forwarded.
    assert server["env_vars"] == ["AGENT_MEM_VAULT"]


def test_install_never_makes_the_codex_server_required(run: Run, home: Path) -> None:
    (home / ".codex").mkdir()
    (home / ".codex" / "config.toml").write_text(
        "[mcp_servers.agent-mem-vault]\n"
        f'command = "{EXE}"\n'
        'args = ["serve", "--agent", "codex"]\n'
        "required = true\n"
        "startup_timeout_sec = 30\n"
    )
    run("install", "codex")
    server = tomllib.loads((home / ".codex" / "config.toml").read_text())["mcp_servers"]
    assert "required" not in server["agent-mem-vault"]


def test_install_refuses_to_pin_a_vault_under_a_temporary_folder_without_asking(
    run: Run, home: Path, repo: Path, tmp_path: Path
) -> None:
    scratch = tmp_path / "scratch-vault"  # under the temporary folder, as mktemp -d makes
    before = snapshot(home, repo)
    proc = run("install", "codex", "--vault", str(scratch), check=False)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.endswith("[temporary_vault]\n")
    assert "under the temporary folder" in proc.stderr and "--temporary-vault" in proc.stderr
    assert snapshot(home, repo) == before and not scratch.exists()
    run("install", "codex", "--vault", str(scratch), "--temporary-vault")
    assert str(scratch) in (home / ".codex" / "config.toml").read_text()


def test_a_temporary_folder_is_tmp_var_tmp_dev_shm_or_tmpdir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_mem_vault.integrations.runnable import temporary_folder_of

    own = tmp_path / "own-tmp"
    own.mkdir()
    monkeypatch.setenv("TMPDIR", str(own))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    assert temporary_folder_of(Path("/tmp/tmp.x1/vault")) == Path("/tmp").resolve()
    assert temporary_folder_of(Path("/var/tmp/vault")) == Path("/var/tmp").resolve()
    assert temporary_folder_of(own / "vault") == own.resolve()
    assert temporary_folder_of(Path("/srv/vaults/team")) is None
    assert temporary_folder_of(Path("/tmpfoo/vault")) is None


@pytest.mark.parametrize(
    ("command", "why"),
    [
        ("agent-mem-vault-nowhere", "agent-mem-vault-nowhere is not on PATH in this shell"),
        ("bin/agent-mem-vault", "bin/agent-mem-vault is a relative path"),
        ("/gone/bin/agent-mem-vault", "/gone/bin/agent-mem-vault does not exist"),
    ],
)
def test_install_refuses_a_command_the_client_could_not_run(
    run: Run, home: Path, repo: Path, command: str, why: str
) -> None:
    before = snapshot(home, repo)
    proc = run("install", "claude-code", "--command", command, check=False)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert why in proc.stderr and proc.stderr.endswith("[command_not_runnable]\n")
    assert "Nothing was written" in proc.stderr
    assert snapshot(home, repo) == before


def test_install_in_a_shell_without_agent_mem_vault_on_path_says_what_to_do(
    home: Path, repo: Path, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_MEM_VAULT")}
    env.update(HOME=str(home), PATH="/usr/bin:/bin", AGENT_MEM_VAULT=str(tmp_path / "v"))
    proc = subprocess.run(
        [*CLI, "install", "claude-code"], cwd=repo, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 2, proc.stdout
    assert "agent-mem-vault is not on PATH in this shell" in proc.stderr
    assert "uv tool install . or pipx install ." in proc.stderr and "--scope user" in proc.stderr
    assert not (repo / ".mcp.json").exists() and not (repo / ".claude").exists()
    # User-wide files name the executable by its absolute path: that runs anywhere.
    user = subprocess.run(
        [*CLI, "install", "claude-code", "--scope", "user"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
    )
    assert user.returncode == 0, user.stderr
    server = json.loads((home / ".claude.json").read_text())["mcpServers"]["agent-mem-vault"]
    assert Path(server["command"]).is_absolute() and Path(server["command"]).exists()


def test_uninstall_works_where_the_command_no_longer_runs(run: Run, repo: Path) -> None:
    run("install", "claude-code")
    proc = run("uninstall", "claude-code", "--command", "/gone/agent-mem-vault")
    assert proc.returncode == 0
    assert not (repo / ".mcp.json").exists()
