"""Codex's trust in the plugin's hooks, and what ``doctor`` says about the plugins.

Codex runs a plugin's hooks only once a person has trusted them, and asks again
at each new version of the plugin: its trust covers the plugin's content too
(``codex_trust.py``). ``plugin trust codex`` records that trust as Codex's own
/hooks does, from what Codex's app server reports.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ..core.errors import InvalidInputError
from .codex_trust import CodexHook, list_codex_hooks, trust_change
from .config_files import apply_changes
from .gemini_trust import gemini_folder_trust
from .installed import Installed, find_installed, install_problems
from .plugin_hook import CLIENT_TITLES, uninstall_command
from .plugins import add_commands, find_plugins, tool_prefix
from .runnable import ON_PATH, runs_from
from .targets import codex_home

__all__ = ["client_problems", "plugin_information", "plugin_problems", "trust_codex_plugin"]

TRUST = "agent-mem-vault plugin trust codex"


def _codex() -> str | None:
    return os.environ.get("AGENT_MEM_VAULT_CODEX") or shutil.which("codex")


def _plugin_hooks(home: Path, cwd: Path) -> list[CodexHook] | None:
    """The plugin's hooks as Codex sees them; None when codex cannot be asked."""
    codex = _codex()
    if codex is None:
        return None
    try:
        hooks = list_codex_hooks(codex, codex_home(home), cwd)
    except (OSError, RuntimeError):
        return None
    return [h for h in hooks if h.from_our_plugin]


def trust_codex_plugin(home: Path, cwd: Path) -> list[str]:
    """Record Codex's trust in the plugin's hooks; one line per hook."""
    if _codex() is None:
        raise InvalidInputError(
            "codex is not on PATH, so its hooks cannot be listed; put codex on PATH and run "
            "this again, or start codex, type /hooks and trust the agent-mem-vault hooks",
            code="codex_not_found",
        )
    hooks = _plugin_hooks(home, cwd)
    if hooks is None:
        raise InvalidInputError(
            "codex did not list its hooks (codex app-server did not answer); start codex, "
            "type /hooks and trust the agent-mem-vault hooks",
            code="codex_not_answering",
        )
    if not hooks:
        raise InvalidInputError(
            "Codex has no hooks of the agent-mem-vault plugin: add the plugin first ("
            + "; ".join(add_commands("codex")[:2])
            + ")",
            code="plugin_not_installed",
        )
    config = codex_home(home) / "config.toml"
    apply_changes([trust_change(config, hooks)])
    return [
        f"{'trusted' if h.trust_status != 'trusted' else 'unchanged':<9} {h.key}" for h in hooks
    ]


def client_problems(home: Path, repo: Path | None, path: str | None = None) -> list[str]:
    """What ``doctor`` reports for the clients: ``install``'s entries and the plugins."""
    found = install_problems(home, repo, path)
    found += plugin_problems(home, repo, find_installed(home, repo), path)
    return list(dict.fromkeys(found))


def plugin_problems(
    home: Path, repo: Path | None, installed: list[Installed], path: str | None = None
) -> list[str]:
    """Every problem with the plugins the clients have: registered twice, a program
    not on PATH, a Codex hook not trusted, a Gemini CLI folder not trusted."""
    found: list[str] = []
    plugins = find_plugins(home, repo)
    for plugin in plugins:
        title = CLIENT_TITLES[plugin.client]
        twice = [i for i in installed if i.client == plugin.client]
        if twice:
            # Claude Code names a plugin's server apart and starts both; the others
            # start the one of that name in their settings.
            servers = (
                f"both servers start (the plugin's tools are {tool_prefix(plugin.client)}*)"
                if plugin.client == "claude-code"
                else "install's server is the one started"
            )
            found.append(
                f"agent-mem-vault is registered twice in {title}: by its plugin ({plugin.name} "
                f"in {plugin.where}) and by install ({twice[0].file}); {servers}, and install's "
                f"hook gives the brief. Run '{uninstall_command(twice[0])}' to keep the plugin, "
                f"or {plugin.remove} to keep install"
            )
        if runs_from("agent-mem-vault", None, path) is None:
            found.append(
                f"the {title} plugin runs agent-mem-vault from PATH, which does not find it; "
                f"{ON_PATH}"
            )
    clients = {p.client for p in plugins}
    if "codex" in clients:
        hooks = _plugin_hooks(home, repo or Path.cwd())
        found += [
            f"Codex will not run the plugin's hook {h.key}: it is {h.trust_status or 'untrusted'}"
            f" (Codex asks again at each new version of a plugin); run '{TRUST}'"
            for h in hooks or []
            if h.trust_status != "trusted"
        ]
    if "gemini" in clients and repo is not None:
        trust = gemini_folder_trust(repo, home)
        if trust in ("untrusted", "unknown"):
            found.append(
                f"Gemini CLI will start neither the extension's server nor its hook in {repo}: "
                "the folder is not trusted; start 'gemini' there once and trust it (headless "
                "runs: GEMINI_CLI_TRUST_WORKSPACE=true)"
            )
    return found


def plugin_information(home: Path, repo: Path | None) -> list[str]:
    """Which way each client has agent-mem-vault: the plugin, and its tools' names."""
    return [
        f"{CLIENT_TITLES[p.client]} has the agent-mem-vault plugin ({p.name} in {p.where}); "
        f"its tools are named {tool_prefix(p.client)}*"
        for p in find_plugins(home, repo)
    ]
