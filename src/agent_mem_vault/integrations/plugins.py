"""Where each client installs the agent-mem-vault plugin from, and whether it has.

Every client has its own way to add a tool, and ``plugin_files.py`` writes the
one folder (with a sub-folder for Gemini CLI and opencode) that each adds
(``DIR`` is what ``agent-mem-vault plugin path CLIENT`` prints):

- Claude Code: ``claude plugin marketplace add DIR``, then
  ``claude plugin install agent-mem-vault@agent-mem-vault``.
- Codex: ``codex plugin marketplace add DIR``, then ``codex plugin add
  agent-mem-vault@agent-mem-vault``; its hooks run once trusted
  (``agent-mem-vault plugin trust codex``).
- Gemini CLI: ``gemini extensions install DIR --consent``.
- opencode: ``opencode plugin DIR`` (``-g`` for every repository).

A client where both the plugin and ``install`` registered us would start two
servers and print the brief twice. ``find_plugins`` reads the client's own
record of its plugins, so that ``install`` can decline, the plugin's hook can
stay quiet but for one line, and ``doctor`` can tell which is there.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path

from .gemini_trust import gemini_dir
from .plugin_files import PLUGIN_NAME, plugin_root
from .settings_read import read_json, read_toml
from .targets import codex_home, opencode_config_dir

__all__ = [
    "CLIENTS",
    "HOOK_CLIENT",
    "Plugin",
    "add_commands",
    "find_plugins",
    "plugin_folder",
    "tool_prefix",
]

CLIENTS = ("claude-code", "codex", "gemini", "opencode")
"""The clients by the names ``install`` takes."""
HOOK_CLIENT = {
    "claude-code": "claude-code",
    "codex": "codex",
    "gemini": "gemini-cli",
    "opencode": "opencode",
}
"""The ``--client`` of each client's session hook (its agent is the client's name)."""
SELECTOR = f"{PLUGIN_NAME}@{PLUGIN_NAME}"


@dataclass(frozen=True)
class Plugin:
    """The plugin as one client recorded it."""

    client: str
    where: Path
    """The file (or folder) that records it."""
    name: str
    """How the client names it (``agent-mem-vault@agent-mem-vault``, a path, …)."""
    remove: str
    """What removes it, as a phrase: "run '<the client's command>'" (opencode has no
    such command: the entry to delete, and where)."""


def plugin_folder(client: str) -> Path:
    """The folder ``client`` installs the plugin from (inside the installed package)."""
    root = plugin_root()
    return root / client if client in ("gemini", "opencode") else root


def add_commands(client: str, folder: Path | None = None) -> list[str]:
    """The client's own commands that add the plugin from ``folder``."""
    where = shlex.quote(str(folder or plugin_folder(client)))
    if client == "claude-code":
        return [f"claude plugin marketplace add {where}", f"claude plugin install {SELECTOR}"]
    if client == "codex":
        return [
            f"codex plugin marketplace add {where}",
            f"codex plugin add {SELECTOR}",
            "agent-mem-vault plugin trust codex",
        ]
    if client == "gemini":
        return [f"gemini extensions install {where} --consent"]
    return [f"opencode plugin {where}"]


def tool_prefix(client: str) -> str:
    """How the client names the plugin's tools (Claude Code names a plugin's server
    ``plugin_<plugin>_<server>``); allow-lists written for ``install`` need this one."""
    if client == "claude-code":
        return f"mcp__plugin_{PLUGIN_NAME}_{PLUGIN_NAME}__"
    if client == "codex":
        return "mcp__agent_mem_vault__"
    if client == "gemini":
        return "mcp_agent-mem-vault_"
    return "agent-mem-vault_"


def find_plugins(home: Path, repo: Path | None) -> list[Plugin]:
    """The clients that have the plugin enabled, for ``home`` and ``repo``."""
    found: list[Plugin] = []
    claude = [home / ".claude" / "settings.json"]
    if repo is not None:
        claude += [repo / ".claude" / "settings.json", repo / ".claude" / "settings.local.json"]
    for file in claude:
        enabled = read_json(file).get("enabledPlugins")
        for name, on in enabled.items() if isinstance(enabled, dict) else []:
            if str(name).startswith(f"{PLUGIN_NAME}@") and on is True:
                remove = f"run 'claude plugin uninstall {name}'"
                found.append(Plugin("claude-code", file, str(name), remove))
    config = codex_home(home) / "config.toml"
    plugins = read_toml(config).get("plugins")
    for name, table in plugins.items() if isinstance(plugins, dict) else []:
        ours = str(name).startswith(f"{PLUGIN_NAME}@") and isinstance(table, dict)
        if ours and table.get("enabled", True) is True:
            found.append(Plugin("codex", config, str(name), f"run 'codex plugin remove {name}'"))
    extension = gemini_dir(home) / "extensions" / PLUGIN_NAME
    if (extension / "gemini-extension.json").is_file():
        remove = f"run 'gemini extensions uninstall {PLUGIN_NAME}'"
        found.append(Plugin("gemini", extension, PLUGIN_NAME, remove))
    opencode = [opencode_config_dir(home)]
    if repo is not None:
        opencode += [repo / ".opencode", repo]
    for folder in opencode:
        for file in (folder / "opencode.json", folder / "opencode.jsonc"):
            entries = read_json(file).get("plugin")
            for entry in entries if isinstance(entries, list) else []:
                if isinstance(entry, str) and _names_us(entry):
                    remove = f'delete {json.dumps(entry)} from "plugin" in {file}'
                    found.append(Plugin("opencode", file, entry, remove))
    return found


def _names_us(entry: str) -> bool:
    return PLUGIN_NAME in entry or "agent_mem_vault" in entry
