"""Updating and removing the plugins with each client's own commands.

A copy of the plugin folder stands for a newer release: its version is raised
and the client updates from it. Each client then has exactly one version, Codex
asks for its hooks to be trusted again (``doctor`` says so, ``plugin trust
codex`` does it), and removing the plugin leaves nothing of ours but what the
client itself keeps (its marketplace entry, Codex's record of trusted hooks).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from agent_mem_vault import __version__
from agent_mem_vault.integrations.plugin_files import plugin_root

from .conftest import CLI, World, client
from .test_plugins_claude_codex import SELECTOR, ok

pytestmark = pytest.mark.slow

NEXT = "99.0.0"


def release(world: World) -> Path:
    """A copy of the plugin folder, as a person's marketplace folder."""
    folder = world.root / "market"
    shutil.copytree(plugin_root(), folder)
    return folder


def installed_release(world: World, agent: Path, install: str) -> Path:
    """A vault, and ``agent`` with the plugin taken from a release's marketplace folder
    by its own ``plugin <install>``: the folder."""
    world.amv("init")
    folder = release(world)
    ok(world.run(agent, "plugin", "marketplace", "add", folder, timeout=120))
    ok(world.run(agent, "plugin", install, SELECTOR, timeout=120))
    return folder


def raise_version(folder: Path) -> None:
    for name in (".claude-plugin/plugin.json", ".codex-plugin/plugin.json"):
        path = folder / name
        path.write_text(path.read_text().replace(f'"{__version__}"', f'"{NEXT}"'))
    market = folder / ".claude-plugin" / "marketplace.json"
    market.write_text(market.read_text().replace(f'"{__version__}"', f'"{NEXT}"'))


def doctor(world: World) -> str:
    proc = world.run(*CLI, "doctor", timeout=120)
    return str(proc.stdout)


def test_codex_updates_to_one_version_trusted_again_and_removes_it(world: World) -> None:
    codex = client("codex")
    folder = installed_release(world, codex, "add")
    world.amv("plugin", "trust", "codex")
    assert "Codex will not run" not in doctor(world)

    raise_version(folder)
    ok(world.run(codex, "plugin", "add", SELECTOR, timeout=120))
    cache = world.home / ".codex" / "plugins" / "cache" / "agent-mem-vault" / "agent-mem-vault"
    assert sorted(p.name for p in cache.iterdir()) == [NEXT]
    said = doctor(world)
    assert "Codex will not run the plugin's hook" in said, said
    assert "agent-mem-vault plugin trust codex" in said, said
    trusted = world.amv("plugin", "trust", "codex").stdout
    assert trusted.count("trusted ") == 2, trusted
    said = doctor(world)
    assert "Codex will not run" not in said and "Codex has the agent-mem-vault plugin" in said
    servers = ok(world.run(codex, "mcp", "list", timeout=120))
    assert servers.count("serve --agent codex") == 1, servers

    ok(world.run(codex, "plugin", "remove", SELECTOR, timeout=120))
    assert not cache.exists() or not any(cache.iterdir())
    assert "agent-mem-vault" not in ok(world.run(codex, "mcp", "list", timeout=120))
    assert "Codex has the agent-mem-vault plugin" not in doctor(world)


def test_claude_code_updates_to_one_version_and_uninstalls_it(world: World) -> None:
    claude = client("claude")
    folder = installed_release(world, claude, "install")
    raise_version(folder)
    ok(world.run(claude, "plugin", "marketplace", "update", "agent-mem-vault", timeout=120))
    ok(world.run(claude, "plugin", "update", SELECTOR, timeout=120))
    listed = ok(world.run(claude, "plugin", "list", timeout=120))
    assert listed.count("agent-mem-vault@agent-mem-vault") == 1, listed
    assert f"Version: {NEXT}" in listed, listed
    installed = json.loads(
        (world.home / ".claude" / "plugins" / "installed_plugins.json").read_text()
    )
    assert len(installed["plugins"][SELECTOR]) == 1, installed

    ok(world.run(claude, "plugin", "uninstall", SELECTOR, timeout=120))
    settings = json.loads((world.home / ".claude" / "settings.json").read_text())
    assert SELECTOR not in settings.get("enabledPlugins", {}), settings
    assert "Claude Code has the agent-mem-vault plugin" not in doctor(world)
