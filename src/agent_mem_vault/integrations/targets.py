"""Installers for Claude Code, Codex, Gemini CLI and opencode: where each keeps its
settings, and what we add.

Claude Code
    MCP server: ``<repo>/.mcp.json`` (scope ``project``, shared with the team) or
    ``~/.claude.json`` (scope ``user``), key ``mcpServers["agent-mem-vault"]``.
    Hook: ``<repo>/.claude/settings.json`` or ``~/.claude/settings.json``,
    ``hooks.SessionStart``. Claude Code 2.1.332 has no setting that makes
    ``claude -p`` wait longer for a server before its first model request
    (about 3 s; ``MCP_TIMEOUT`` and ``MCP_CONNECT_TIMEOUT_MS`` do not change it,
    tried in settings ``env`` and the environment): the warm process keeps
    ``serve`` inside it. A ``.mcp.json`` server runs only once approved: project
    scope lists ours in ``enabledMcpjsonServers`` of the committed settings, which
    Claude Code honours once the person has trusted the folder (its first-start
    question); ``claude -p`` approves project servers by itself.
Codex
    MCP server: ``$CODEX_HOME/config.toml`` (default ``~/.codex``), table
    ``[mcp_servers.agent-mem-vault]`` with a start-up timeout and
    ``env_vars = ["AGENT_MEM_VAULT"]``; never ``required`` (a user-wide file: a
    required server that fails stops Codex from starting in every repository).
    Hook: ``$CODEX_HOME/hooks.json``; ``[features] hooks = true`` in config.toml
    (on by default since 0.169; written so an older default cannot hide it),
    marked with a comment so uninstall removes the flag only if install set it.
    The deprecated ``codex_hooks`` flag an earlier install wrote goes. Codex runs
    only hooks the person trusted: ``codex_trust.py`` records that trust.
Gemini CLI
    ``<repo>/.gemini/settings.json`` or ``~/.gemini/settings.json`` (``$GEMINI_CLI_HOME``
    moves the latter): the server in ``mcpServers``, the hook in ``hooks.SessionStart``
    with matcher ``*`` (Gemini compares it with the source as a plain string) and its
    timeout in milliseconds. Gemini CLI uses neither in a folder the person has not
    trusted: ``gemini_trust.py`` reads that, and install says what to do.
opencode
    ``<repo>/opencode.json`` or ``$XDG_CONFIG_HOME/opencode/opencode.json``: the
    server in ``mcp`` (``type: local``). opencode has no command hooks; its
    plugins do: ``.opencode/plugin/agent-mem-vault.js`` runs our session-start
    hook once per session and adds what it prints to that session's system
    prompt, and our session-end hook when a session ends (``opencode_plugin.py``).

Each function is pure: text before → text after. ``cli/agents.py`` reads the files,
shows or applies the changes.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from ..core.errors import InvalidInputError
from .config_files import FileChange, json_change, load_json, read_text
from .hooks_json import END_EVENT, EVENT, TIMEOUT_SECONDS, add_session_hook, remove_session_hooks
from .jsonc import GEMINI, LENIENT, STRICT, Dialect

__all__ = [
    "SERVER_NAME",
    "Launch",
    "codex_home",
    "install_files",
    "opencode_config_dir",
    "plan_claude_code",
    "plan_codex",
    "plan_gemini",
    "plan_opencode",
]

SERVER_NAME = "agent-mem-vault"
FLAG_COMMENT = "added by agent-mem-vault install"
FORWARDED_ENV = ("AGENT_MEM_VAULT",)
"""The variables Codex passes to our server (it passes none unless told)."""
STARTUP_TIMEOUT_SECONDS = 30
"""How long a client waits for ``serve`` to answer ``initialize`` where it can be told."""
APPROVAL_KEY = "enabledMcpjsonServers"
PLUGIN_MARK = "// agent-mem-vault: written by `agent-mem-vault install opencode`"
Scope = Literal["project", "user"]


@dataclass(frozen=True)
class Launch:
    """How the tools start us: the executable (and any leading words), for one agent."""

    command: tuple[str, ...]
    """E.g. ``("agent-mem-vault",)`` or ``("/home/me/.local/bin/agent-mem-vault",)``."""
    agent: str
    vault: str | None = None
    """Passed as ``--vault`` when given; else the server uses $AGENT_MEM_VAULT or the default."""
    client: str | None = None
    """The client the hooks run in (``claude-code``, ``codex``, ``gemini-cli``,
    ``opencode``): it says how to find the session's process and transcript."""

    def _vault_args(self) -> list[str]:
        return ["--vault", self.vault] if self.vault else []

    def _client_args(self) -> list[str]:
        return ["--client", self.client] if self.client else []

    def server_args(self) -> list[str]:
        return [*self.command[1:], "serve", "--agent", self.agent, *self._vault_args()]

    def hook_words(self, fmt: str = "json") -> list[str]:
        words = [*self.command, "hook", "session-start", "--agent", self.agent]
        return [*words, *self._client_args(), "--format", fmt, *self._vault_args()]

    def hook_command(self) -> str:
        return shlex.join(self.hook_words())

    def end_hook_words(self) -> list[str]:
        """``hook session-end``: marks the session's run as ended cleanly."""
        words = [*self.command, "hook", "session-end", "--agent", self.agent]
        return [*words, *self._client_args(), *self._vault_args()]

    def end_hook_command(self) -> str:
        return shlex.join(self.end_hook_words())


def plan_claude_code(
    launch: Launch, *, scope: Scope, repo: Path, home: Path, remove: bool = False
) -> list[FileChange]:
    """The changes ``install claude-code`` (or ``uninstall``) makes."""
    if scope == "project":
        mcp_file, settings_file = repo / ".mcp.json", repo / ".claude" / "settings.json"
    else:
        mcp_file, settings_file = home / ".claude.json", home / ".claude" / "settings.json"
    launch = replace(launch, client="claude-code")
    entry = {"type": "stdio", "command": launch.command[0], "args": launch.server_args()}

    def settings(data: dict[str, Any]) -> dict[str, Any]:
        data = _hook_edit(
            data, EVENT, launch.hook_command(), "startup|resume|clear|compact", remove
        )
        # SessionEnd runs on a clean exit (and SIGTERM), not after a kill: a
        # clean end is then known at once rather than from the process being gone.
        data = _hook_edit(data, END_EVENT, launch.end_hook_command(), "*", remove)
        if scope == "project":
            data = _approve_project_server(data, remove)
        return data

    return [
        _json_edit(mcp_file, lambda d: _set_server(d, "mcpServers", entry, remove)),
        _json_edit(settings_file, settings),
    ]


def _approve_project_server(data: dict[str, Any], remove: bool) -> dict[str, Any]:
    """Our name in ``enabledMcpjsonServers``: the approval Claude Code asks for."""
    out = dict(data)
    names = out.get(APPROVAL_KEY, [])
    if not isinstance(names, list):
        raise InvalidInputError(
            f'"{APPROVAL_KEY}" in the settings is not a list; fix it by hand and run again',
            field=APPROVAL_KEY,
        )
    names = [n for n in names if n != SERVER_NAME] if remove else list(names)
    if not remove and SERVER_NAME not in names:
        names.append(SERVER_NAME)
    if names:
        out[APPROVAL_KEY] = names
    else:
        out.pop(APPROVAL_KEY, None)
    return out


def plan_codex(launch: Launch, *, codex_home: Path, remove: bool = False) -> list[FileChange]:
    """The changes ``install codex`` (or ``uninstall``) makes."""
    launch = replace(launch, client="codex")
    config, hooks = codex_home / "config.toml", codex_home / "hooks.json"

    def edit(data: dict[str, Any]) -> dict[str, Any]:
        data = _hook_edit(data, EVENT, launch.hook_command(), "startup|resume", remove)
        # Codex matches a matcher as a regular expression: "" matches every end.
        return _hook_edit(data, END_EVENT, launch.end_hook_command(), "", remove)

    return [_toml_edit(config, launch, remove), _json_edit(hooks, edit)]


def plan_gemini(
    launch: Launch, *, scope: Scope, repo: Path, home: Path, remove: bool = False
) -> list[FileChange]:
    """The changes ``install gemini`` (or ``uninstall``) makes: one settings.json."""
    from .gemini_trust import gemini_dir

    launch = replace(launch, client="gemini-cli")
    folder = repo / ".gemini" if scope == "project" else gemini_dir(home)
    settings = folder / "settings.json"
    entry = {"command": launch.command[0], "args": launch.server_args()}

    def edit(data: dict[str, Any]) -> dict[str, Any]:
        data = _set_server(data, "mcpServers", entry, remove)
        # Gemini CLI compares a SessionStart matcher with the source as a plain
        # string ("startup|resume|clear" matches nothing); "*" matches every
        # source. It counts hook timeouts in milliseconds.
        ms = TIMEOUT_SECONDS * 1000
        data = _hook_edit(data, EVENT, launch.hook_command(), "*", remove, ms)
        return _hook_edit(data, END_EVENT, launch.end_hook_command(), "*", remove, ms)

    return [_json_edit(settings, edit, GEMINI)]  # Gemini CLI reads JSON with comments


def plan_opencode(
    launch: Launch, *, scope: Scope, repo: Path, config_dir: Path, remove: bool = False
) -> list[FileChange]:
    """The changes ``install opencode`` (or ``uninstall``) makes: the server in
    opencode.json, the session plugin next to it, and the ``.npmrc`` that keeps
    opencode's own npm install from holding every start where no registry is
    reachable (see ``opencode_plugin.py``)."""
    launch = replace(launch, client="opencode")
    if scope == "project":
        config, plugin = repo / "opencode.json", repo / ".opencode" / "plugin"
    else:
        config, plugin = config_dir / "opencode.json", config_dir / "plugin"
    entry = {
        "type": "local",
        "command": [*launch.command, *launch.server_args()],
        "enabled": True,
        "timeout": STARTUP_TIMEOUT_SECONDS * 1000,
    }
    plugin_file = plugin / "agent-mem-vault.js"
    before = read_text(plugin_file)
    if before is not None and PLUGIN_MARK not in before:
        raise InvalidInputError(
            f"{plugin_file} exists and was not written by agent-mem-vault; move it away "
            "and run again. Nothing was changed",
            field="plugin",
        )
    after = None if remove else _opencode_plugin(launch)
    from .opencode_plugin import npmrc_change

    # The user's opencode folder is a config folder of every opencode start;
    # uninstalling a project keeps its .npmrc while a user-wide plugin needs it.
    user_plugin = config_dir / "plugin" / "agent-mem-vault.js"
    keep_user = scope == "project" and read_text(user_plugin) is not None
    npmrc = [npmrc_change(config_dir, remove=remove and not keep_user)]
    if scope == "project":
        npmrc.append(npmrc_change(plugin.parent, remove=remove))
    return [
        # opencode reads its config as JSON with comments and trailing commas.
        _json_edit(config, lambda d: _set_server(d, "mcp", entry, remove), LENIENT),
        FileChange(plugin_file, before, after),
        *npmrc,
    ]


def _opencode_plugin(launch: Launch) -> str:
    """The plugin: opencode's session hooks (see ``opencode_plugin.py``)."""
    from .opencode_plugin import plugin_source

    return plugin_source(
        PLUGIN_MARK, launch.hook_words("text"), launch.end_hook_words(), TIMEOUT_SECONDS * 1000
    )


def install_files(repo: Path) -> set[Path]:
    """The files in ``repo`` that hold what a project install wrote (for each client).

    A file counts only while it holds our entry (it names agent-mem-vault): one a
    person edited and we never touched is theirs.
    """
    candidates = [
        repo / ".mcp.json",
        repo / ".claude" / "settings.json",
        repo / ".gemini" / "settings.json",
        repo / "opencode.json",
        repo / ".opencode" / "plugin" / "agent-mem-vault.js",
        repo / ".opencode" / ".npmrc",
    ]
    return {path for path in candidates if SERVER_NAME in (read_text(path) or "")}


def codex_home(home: Path) -> Path:
    """``$CODEX_HOME``, else ``~/.codex``."""
    value = os.environ.get("CODEX_HOME")
    return Path(value).expanduser() if value else home / ".codex"


def opencode_config_dir(home: Path) -> Path:
    """``$XDG_CONFIG_HOME/opencode``, else ``~/.config/opencode``."""
    value = os.environ.get("XDG_CONFIG_HOME")
    return (Path(value).expanduser() if value else home / ".config") / "opencode"


def _hook_edit(
    data: dict[str, Any],
    event: str,
    command: str,
    matcher: str,
    remove: bool,
    timeout: int = TIMEOUT_SECONDS,
) -> dict[str, Any]:
    """``data`` with our ``event`` hook (it runs ``command``), or without it for ``remove``."""
    if remove:
        return remove_session_hooks(data, event)
    return add_session_hook(data, command=command, matcher=matcher, timeout=timeout, event=event)


def _json_edit(path: Path, edit: Any, dialect: Dialect = STRICT) -> FileChange:
    before = read_text(path)
    return json_change(path, before, edit(load_json(path, before, dialect)), dialect)


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
    from .toml_files import parse_toml, toml_change

    before = read_text(path)
    doc = parse_toml(path, before)
    if remove:
        _toml_remove(doc)
    else:
        _toml_add(doc, launch)
    return toml_change(path, before, doc)


def _toml_add(doc: Any, launch: Launch) -> None:
    import tomlkit

    servers = doc.get("mcp_servers")
    if servers is None:
        servers = tomlkit.table(is_super_table=True)
        doc["mcp_servers"] = servers
    # Codex passes an MCP server only the environment it is told to: env_vars
    # forwards AGENT_MEM_VAULT, so an unpinned server opens the vault the shell
    # that started Codex names, as the hook (which gets the whole environment)
    # does. Never `required`: this file is read in every repository, and Codex
    # will not start at all when a required server fails (a vault since
    # deleted, an executable since moved).
    wanted: dict[str, Any] = {
        "command": launch.command[0],
        "args": launch.server_args(),
        "env_vars": list(FORWARDED_ENV),
        "startup_timeout_sec": STARTUP_TIMEOUT_SECONDS,
    }
    table = servers.get(SERVER_NAME)
    if table is None:
        table = tomlkit.table()
        table.update(wanted)
        table.add(tomlkit.nl())
        servers[SERVER_NAME] = table
    for key, value in wanted.items():
        if table.get(key) != value:
            table[key] = value
    if "required" in table:
        del table["required"]
    features = doc.get("features")
    if features is None:
        features = tomlkit.table()
        doc["features"] = features
    _drop_our_flag(doc, features, "codex_hooks")
    if "features" not in doc:
        features = tomlkit.table()
        doc["features"] = features
    if features.get("hooks") is not True:
        item = tomlkit.item(True)
        item.comment(FLAG_COMMENT)
        features["hooks"] = item


def _toml_remove(doc: Any) -> None:
    servers = doc.get("mcp_servers")
    if servers is not None and SERVER_NAME in servers:
        del servers[SERVER_NAME]
        if not servers:
            del doc["mcp_servers"]
    features = doc.get("features")
    if features is not None:
        for flag in ("hooks", "codex_hooks"):
            _drop_our_flag(doc, features, flag)


def _drop_our_flag(doc: Any, features: Any, flag: str) -> None:
    """Remove ``[features] flag`` if install set it (it carries our comment)."""
    if flag not in features:
        return
    item = features.item(flag)
    if FLAG_COMMENT in (item.trivia.comment or ""):
        del features[flag]
        if not features:
            del doc["features"]
