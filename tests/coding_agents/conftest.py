"""The real coding agents, in a throw-away home, against a scripted local model.

``scripts/test-env.sh`` installs the pinned clients (package.json here) with
npm. Each test gets its own HOME and XDG folders, a repository named
harbor-api and a vault, so nothing touches the person running the tests; the
clients reach no network but the scripted model on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.cli_process import home_env

BIN = Path(__file__).parent / "node_modules" / ".bin"
NAMESPACE = "project/harbor-api"
BRIEF = "Harbor API: the orders service. Deploys go through CI only.\n"
CLI = [sys.executable, "-m", "agent_mem_vault.cli.main"]


def client(name: str) -> Path:
    """The installed client, or skip with the reason."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("Node 20+ with npm is not installed; the real-agent tests need it")
    path = BIN / name
    if not path.exists():
        pytest.skip(f"{path} is missing: run scripts/test (test-env.sh installs the clients)")
    return path


def codex_config(world: World, url: str, model: str = "scripted") -> None:
    """Codex set up in ``world``'s HOME to talk to the scripted model at ``url``.

    Codex starts its first turn once an optional MCP server is up or a grace
    of about a second has passed, whichever comes first; on a loaded machine
    the vault's server can miss that second, and the turn then has no vault
    tools. A person who meets that raises the grace (docs/agents.md); the
    tests do too, so that their first turn waits for the server to be ready,
    as it does on a quiet machine, instead of racing a timer.
    """
    home = world.home / ".codex"
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(
        f'model = "{model}"\nmodel_provider = "scripted"\n'
        "mcp_optional_startup_grace_ms = 30000\n\n"
        "[model_providers.scripted]\n"
        f'name = "scripted"\nbase_url = "{url}/v1"\nwire_api = "responses"\n'
    )


@dataclass
class World:
    """A home, a repository and a vault; ``run`` runs a command in the repository."""

    root: Path
    home: Path
    repo: Path
    vault: Path
    env: dict[str, str]

    def run(
        self, *args: str | Path, timeout: float = 240, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(a) for a in args],
            cwd=self.repo,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
        )

    def exec_codex(
        self, prompt: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """One non-interactive Codex session on ``prompt`` that asks for no approvals."""
        return self.run(
            client("codex"),
            "exec",
            "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox",
            prompt,
            env=env,
        )

    def amv(self, *args: str) -> subprocess.CompletedProcess[str]:
        proc = self.run(*CLI, *args, timeout=60)
        assert proc.returncode == 0, f"agent-mem-vault {args}: {proc.stdout}\n{proc.stderr}"
        return proc

    def handoffs(self) -> list[dict[str, Any]]:
        out = self.amv("handoffs", "--status", "all", "--json", "--namespace", NAMESPACE).stdout
        data = json.loads(out)
        items = data["handoffs"] if isinstance(data, dict) else data
        assert isinstance(items, list)
        return items

    def sessions(self) -> list[dict[str, Any]]:
        """The coding sessions the vault knows of in the project's namespace."""
        out = self.amv("sessions", "--namespace", NAMESPACE, "--json").stdout
        found = json.loads(out)["sessions"]
        assert isinstance(found, list)
        return found


@pytest.fixture
def world(tmp_path: Path) -> World:
    return make_world(tmp_path)


def make_world(tmp_path: Path) -> World:
    """A fresh home, repository and vault under ``tmp_path`` (for wider-scoped fixtures)."""
    home, repo, vault = tmp_path / "home", tmp_path / "src" / "harbor-api", tmp_path / "vault"
    home.mkdir()
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "config").write_text("[core]\n\tbare = false\n")
    # A brief written by hand, as a person would: no frontmatter.
    (vault / NAMESPACE).mkdir(parents=True)
    (vault / NAMESPACE / "_brief.md").write_text(BRIEF)
    keep = ("PATH", "LANG", "LC_ALL", "TERM", "TMPDIR", "SYSTEMROOT")
    env = {k: v for k, v in os.environ.items() if k in keep}
    # The clients find agent-mem-vault on PATH, as on a machine that installed it.
    venv_bin = str(Path(sys.executable).parent)
    env.update(
        home_env(home),
        PATH=os.pathsep.join([str(BIN), venv_bin, env.get("PATH", "/usr/bin:/bin")]),
        AGENT_MEM_VAULT=str(vault),
        NO_COLOR="1",
        CI="1",
        # Claude Code's wait for an MCP server to start (ms): a loaded test machine can
        # take longer than its default to start Python, and a missing server would
        # leave the model without the vault's tools.
        MCP_TIMEOUT="60000",
    )
    return World(tmp_path, home, repo, vault, env)


Check = Callable[[], None]
