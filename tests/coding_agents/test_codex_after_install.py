"""What ``install codex`` leaves in the user-wide ``~/.codex/config.toml`` never stops
the real Codex from starting, whatever became of the vault or the executable.

Codex refuses to start when a ``required`` MCP server fails; its config.toml is
read in every repository, so one deleted folder would stop Codex everywhere.
"""

from __future__ import annotations

import shutil
import stat
import sys
import tomllib
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from .conftest import NAMESPACE as NS
from .conftest import World, codex_config
from .model_server import Reply, ScriptedModel, Seen
from .test_claude_codex import _namespaced, _tool_output

pytestmark = pytest.mark.slow


def _answer(seen: Seen) -> Reply:
    return Reply(text="hello")


def _says_hello_after(world: World, install: Sequence[str], then: Callable[[], None]) -> None:
    """``install codex`` with ``install``'s options, ``then`` (what broke), then a Codex
    session: it must exit 0 having asked the model."""
    with ScriptedModel("responses", _answer) as model:
        codex_config(world, model.url)
        world.amv("install", "codex", *install)
        then()
        proc = world.exec_codex("Say hello.")
        requests = list(model.requests)
    output = f"{proc.stdout}\n{proc.stderr}"
    assert proc.returncode == 0, output
    assert requests, f"Codex never asked the model anything:\n{output}"


def test_codex_still_starts_when_the_vault_install_pinned_is_gone(world: World) -> None:
    pinned = world.root / "scratch-vault"

    def pinned_is_gone() -> None:
        server = tomllib.loads((world.home / ".codex" / "config.toml").read_text())
        assert "required" not in server["mcp_servers"]["agent-mem-vault"]
        shutil.rmtree(pinned)

    _says_hello_after(world, ["--vault", str(pinned), "--temporary-vault"], pinned_is_gone)


def test_codex_still_starts_when_the_executable_install_registered_is_gone(
    world: World,
) -> None:
    moved = world.root / "old-venv" / "agent-mem-vault"
    moved.parent.mkdir()
    moved.write_text(f'#!/bin/sh\nexec {sys.executable} -m agent_mem_vault.cli.main "$@"\n')
    moved.chmod(moved.stat().st_mode | stat.S_IXUSR)
    # The clone's virtual environment was deleted.
    _says_hello_after(world, ["--command", str(moved)], lambda: shutil.rmtree(moved.parent))


def test_an_unpinned_codex_server_opens_the_vault_of_the_shell_that_started_codex(
    world: World,
) -> None:
    other = world.root / "other-vault"
    world.amv("init", "--vault", str(other))
    world.amv(
        "create", "--vault", str(other), "--from", "claude-code", "--to", "codex",
        "-n", NS, "-s", "Only in the other vault", "-c", "x",
    )  # fmt: skip
    outputs: list[Any] = []
    first: list[str] = []

    def model_answer(seen: Seen) -> Reply:
        found = _namespaced(seen.body.get("tools"), "read_handoff")
        if found is None:
            return Reply(text="ok")
        items = seen.body.get("input", [])
        done = [i for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"]
        if done:
            outputs.append(done[-1].get("output"))
            return Reply(text="Took it.")
        first.append(seen.text)
        namespace, tool = found
        return Reply(tool=tool, namespace=namespace, args={"agent": "codex", "namespace": NS})

    with ScriptedModel("responses", model_answer) as model:
        codex_config(world, model.url)
        world.amv("install", "codex")
        assert "--vault" not in (world.home / ".codex" / "config.toml").read_text()
        proc = world.exec_codex("Continue.", env={"AGENT_MEM_VAULT": str(other)})
        transcript = model.transcript()
    assert proc.returncode == 0, f"{proc.stderr}\n{transcript}"
    # The hook (the whole environment) and the server (env_vars) read the same vault.
    assert first and "Only in the other vault" in first[0], transcript
    assert len(outputs) == 1, transcript
    assert _tool_output(outputs[0])["handoff"]["summary"] == "Only in the other vault"
