"""A temporary HOME and repository, and the real CLI run as a subprocess against them."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "agent_mem_vault.cli.main"]
Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository named harbor-api (a .git folder is all discovery looks at)."""
    path = tmp_path / "src" / "harbor-api"
    (path / ".git").mkdir(parents=True)
    (path / ".git" / "config").write_text("[core]\n\tbare = false\n")
    return path


@pytest.fixture
def run(home: Path, repo: Path, tmp_path: Path) -> Run:
    def run_cli(
        *args: str, stdin: str = "", cwd: Path | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("CODEX_HOME", "AGENT_MEM_VAULT", "AGENT_MEM_VAULT_TOKEN")
        }
        # agent-mem-vault on PATH, as on a machine that installed it: install refuses
        # to register a bare command that the shell does not find.
        path = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}"
        env.update(HOME=str(home), AGENT_MEM_VAULT=str(tmp_path / "vault"), PATH=path)
        proc = subprocess.run(
            [*CLI, *args],
            input=stdin,
            capture_output=True,
            text=True,
            cwd=cwd or repo,
            env=env,
            timeout=60,
            check=False,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
        return proc

    return run_cli
