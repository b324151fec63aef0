"""Installers for Claude Code and Codex: where each keeps its settings, and what we add.

Claude Code
    MCP server: ``<repo>/.mcp.json`` (scope ``project``, shared with the team) or
    ``~/.claude.json`` (scope ``user``), key ``mcpServers["agent-mem-vault"]``.
    Hook: ``<repo>/.claude/settings.json`` or ``~/.claude/settings.json``,
    ``hooks.SessionStart``.
Codex
    MCP server: ``$CODEX_HOME/config.toml`` (default ``~/.codex``), table
    ``[mcp_servers.agent-mem-vault]``. Hook: ``$CODEX_HOME/hooks.json``, plus
    ``[features] codex_hooks = true`` in config.toml (hooks are behind that flag),
    marked with a comment so uninstall removes the flag only if install set it.

Each function is pure: text before → text after. ``cli/agents.py`` reads the files,
shows or applies the changes.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..core.errors import InvalidInputError
from .config_files import FileChange, json_change, load_json, read_text
from .hooks_json import add_session_hook, remove_session_hooks

__all__ = ["SERVER_NAME", "Launch", "codex_home", "plan_claude_code", "plan_codex"]

SERVER_NAME = "agent-mem-vault"
FLAG_COMMENT = "added by agent-mem-vault install"
Scope = Literal["project", "user"]


@dataclass(frozen=True)
class Launch:
    """How the tools start us: the executable (and any leading words), for one agent."""

    command: tuple[str, ...]
    """E.g. ``("/home/me/.local/bin/agent-mem-vault",)``."""
    agent: str
    vault: str | None = None
    """Passed as ``--vault`` when given; else the server uses $AGENT_MEM_VAULT or the default."""

    def _vault_args(self) -> list[str]:
        return ["--vault", self.vault] if self.vault else []

    def server_args(self) -> list[str]:
        return [*self.command[1:], "serve", "--agent", self.agent, *self._vault_args()]

    def hook_command(self) -> str:
        words = [*self.command, "hook", "session-start", "--agent", self.agent]
        return shlex.join([*words, "--format", "json", *self._vault_args()])


def plan_claude_code(
    launch: Launch, *, scope: Scope, repo: Path, home: Path, remove: bool = False
) -> list[FileChange]:
    """The changes ``install claude-code`` (or ``uninstall``) makes."""
    if scope == "project":
        mcp_file, settings_file = repo / ".mcp.json", repo / ".claude" / "settings.json"
    else:
        mcp_file, settings_file = home / ".claude.json", home / ".claude" / "settings.json"
    entry = {"type": "stdio", "command": launch.command[0], "args": launch.server_args()}
    changes = [
        _json_edit(mcp_file, lambda d: _set_server(d, "mcpServers", entry, remove)),
        _json_edit(
            settings_file,
            lambda d: (
                remove_session_hooks(d)
                if remove
                else add_session_hook(
                    d, command=launch.hook_command(), matcher="startup|resume|clear|compact"
                )
            ),
        ),
    ]
    return changes


def plan_codex(launch: Launch, *, codex_home: Path, remove: bool = False) -> list[FileChange]:
    """The changes ``install codex`` (or ``uninstall``) makes."""
    config, hooks = codex_home / "config.toml", codex_home / "hooks.json"
    return [
        _toml_edit(config, launch, remove),
        _json_edit(
            hooks,
            lambda d: (
                remove_session_hooks(d)
                if remove
                else add_session_hook(d, command=launch.hook_command(), matcher="startup|resume")
            ),
        ),
    ]


def codex_home(home: Path) -> Path:
    """``$CODEX_HOME``, else ``~/.codex``."""
    value = os.environ.get("CODEX_HOME")
    return Path(value).expanduser() if value else home / ".codex"


def _json_edit(path: Path, edit: Any) -> FileChange:
    before = read_text(path)
    return json_change(path, before, edit(load_json(path, before)))


def _set_server(
    data: dict[str, Any], key: str, entry: dict[str, Any], remove: bool
) -> dict[str, Any]:
    out = dict(data)
    servers = out.get(key, {})
    if not isinstance(servers, dict):
        raise InvalidInputError(
            f'"{key}" in the settings is not an object; fix it by hand and run again',
            field=key,
        )
    servers = dict(servers)
    if remove:
        servers.pop(SERVER_NAME, None)
    else:
        # Keep fields the person added (env, timeouts); ours win on what we set.
        current = servers.get(SERVER_NAME)
        servers[SERVER_NAME] = {**current, **entry} if isinstance(current, dict) else entry
    if servers:
        out[key] = servers
    else:
        out.pop(key, None)
    return out


def _toml_edit(path: Path, launch: Launch, remove: bool) -> FileChange:
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    from ..core.errors import DataError

    before = read_text(path)
    try:
        doc = tomlkit.parse(before or "")
    except TOMLKitError as exc:
        raise DataError(
            f"{path} is not valid TOML ({exc}); fix it and run again. Nothing was changed",
            path=str(path),
        ) from exc
    if remove:
        removed = _toml_remove(doc)
    else:
        _toml_add(doc, launch)
    after = tomlkit.dumps(doc)
    if remove and removed and after.endswith("\n\n"):
        # tomlkit put a blank line before our table when it appended it; take it back.
        after = after.rstrip("\n") + "\n"
    if before is not None and not after.strip():
        return FileChange(path, before, None)
    if before is None and not after.strip():
        return FileChange(path, None, None)
    return FileChange(path, before, after)


def _toml_add(doc: Any, launch: Launch) -> None:
    import tomlkit

    servers = doc.get("mcp_servers")
    if servers is None:
        servers = tomlkit.table(is_super_table=True)
        doc["mcp_servers"] = servers
    wanted = {"command": launch.command[0], "args": launch.server_args()}
    table = servers.get(SERVER_NAME)
    if table is None:
        table = tomlkit.table()
        table.update(wanted)
        table.add(tomlkit.nl())
        servers[SERVER_NAME] = table
    for key, value in wanted.items():
        if table.get(key) != value:
            table[key] = value
    features = doc.get("features")
    if features is None:
        features = tomlkit.table()
        doc["features"] = features
    if features.get("codex_hooks") is not True:
        item = tomlkit.item(True)
        item.comment(FLAG_COMMENT)
        features["codex_hooks"] = item


def _toml_remove(doc: Any) -> bool:
    removed = False
    servers = doc.get("mcp_servers")
    if servers is not None and SERVER_NAME in servers:
        del servers[SERVER_NAME]
        removed = True
        if not servers:
            del doc["mcp_servers"]
    features = doc.get("features")
    if features is not None and "codex_hooks" in features:
        item = features.item("codex_hooks")
        if FLAG_COMMENT in (item.trivia.comment or ""):
            del features["codex_hooks"]
            removed = True
            if not features:
                del doc["features"]
    return removed
