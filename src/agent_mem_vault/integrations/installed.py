"""What ``install`` left in each client's settings, judged as the client will run it.

``doctor`` reports these problems next to the vault's own, because a vault that
is healthy but never reached is the failure a person sees: a server or hook
command that no longer resolves (a moved virtualenv, a teammate without
agent-mem-vault on PATH), a Codex hook that Codex will skip because its trust
is missing or stale, a ``.mcp.json`` server that Claude Code holds for approval,
a repository that Gemini CLI does not trust (it then starts neither).
The plugins the clients installed are judged in ``plugin_trust.py``.
Each problem names the file and the one thing to do. Nothing here writes.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .gemini_trust import gemini_dir, gemini_folder_trust
from .hooks_json import END_EVENT, EVENT, is_our_hook
from .runnable import ON_PATH, runs_from
from .settings_read import read_json, read_toml
from .targets import APPROVAL_KEY, SERVER_NAME, codex_home, opencode_config_dir

__all__ = ["Installed", "find_installed", "install_problems", "this_program"]

_HOOK_LINE = re.compile(r"^const HOOK = (\[.*\]);$", re.MULTILINE)


@dataclass(frozen=True)
class Installed:
    """One command a client will run because ``install`` registered it."""

    client: str
    """claude-code, codex, gemini or opencode (the ``install`` argument)."""
    what: str
    """``MCP server`` or ``session hook``."""
    file: Path
    words: tuple[str, ...]
    scope: str
    """``project`` or ``user``: how to re-run install for it."""
    cwd: Path | None = None
    """Where the client runs it from (a relative command resolves there)."""

    def reinstall(self, path: str | None = None) -> str:
        """The install command that writes this entry again, as this shell can run it."""
        scope = " --scope user" if self.scope == "user" and self.client != "codex" else ""
        return f"{this_program(path)} install {self.client}{scope}"


def this_program(path: str | None = None) -> str:
    """How to run the agent-mem-vault that runs now: by name where ``path`` (PATH) finds
    it, else by its absolute path, so that a fix never names a command the shell lacks."""
    import sys

    if runs_from("agent-mem-vault", path=path) is not None:
        return "agent-mem-vault"
    beside = Path(sys.executable).parent / "agent-mem-vault"
    if runs_from(str(beside)) is not None:
        return str(beside)
    return f"{sys.executable} -m agent_mem_vault.cli.main"


def install_problems(home: Path, repo: Path | None, path: str | None = None) -> list[str]:
    """Every problem with what ``install`` wrote for ``home`` and ``repo``."""
    installed = find_installed(home, repo)
    problems = [_command_problem(i, path) for i in installed]
    problems += [_vault_problem(i, path) for i in installed]
    found = list(dict.fromkeys(p for p in problems if p))
    found += codex_trust_problems(codex_home(home), repo or Path.cwd(), path)
    found += end_hook_problems(installed)
    if repo is not None:
        found += claude_approval_problems(home, repo)
        if any(i.client == "gemini" for i in installed):
            found += gemini_trust_problems(home, repo)
    return found


def find_installed(home: Path, repo: Path | None) -> list[Installed]:
    """The server and hook commands of our entries in every client's settings."""
    out: list[Installed] = []
    places: list[tuple[str, Path, Path, Path | None]] = [
        ("user", home / ".claude.json", home / ".claude" / "settings.json", None),
    ]
    if repo is not None:
        places.insert(0, ("project", repo / ".mcp.json", repo / ".claude" / "settings.json", repo))
    for scope, servers, settings, cwd in places:
        out += _json_server("claude-code", scope, servers, "mcpServers", cwd)
        out += _json_hook("claude-code", scope, settings, cwd)
        out += _json_hook("claude-code", scope, settings, cwd, END_EVENT)
    codex = codex_home(home)
    config = codex / "config.toml"
    entry = _table(_table(read_toml(config), "mcp_servers"), SERVER_NAME)
    if isinstance(entry, dict) and isinstance(entry.get("command"), str):
        args = entry.get("args")
        extra = (
            tuple(args) if isinstance(args, list) and all(isinstance(a, str) for a in args) else ()
        )
        out.append(Installed("codex", "MCP server", config, (entry["command"], *extra), "user"))
    out += _json_hook("codex", "user", codex / "hooks.json", None)
    out += _json_hook("codex", "user", codex / "hooks.json", None, END_EVENT)
    gemini: list[tuple[str, Path, Path | None]] = [
        ("user", gemini_dir(home) / "settings.json", None)
    ]
    opencode: list[tuple[str, Path, Path | None]] = [("user", opencode_config_dir(home), None)]
    if repo is not None:
        gemini.insert(0, ("project", repo / ".gemini" / "settings.json", repo))
        opencode.insert(0, ("project", repo, repo))
    for scope, file, cwd in gemini:
        out += _json_server("gemini", scope, file, "mcpServers", cwd)
        out += _json_hook("gemini", scope, file, cwd)
        out += _json_hook("gemini", scope, file, cwd, END_EVENT)
    for scope, base, cwd in opencode:
        out += _json_server("opencode", scope, base / "opencode.json", "mcp", cwd)
        plugin = base / (".opencode/plugin" if scope == "project" else "plugin")
        out += _plugin_hook(scope, plugin / "agent-mem-vault.js", cwd)
    return out


def _vault_problem(item: Installed, path: str | None = None) -> str | None:
    """A pinned ``--vault`` that is not a vault: the server would refuse to start (and
    the hook load nothing), so a typo in a settings file is caught here first."""
    from ..vault.folder.layout import is_vault

    words = list(item.words)
    if "--vault" not in words[:-1]:
        return None
    pinned = Path(words[words.index("--vault") + 1]).expanduser()
    if not pinned.is_absolute() and item.cwd is not None:
        pinned = item.cwd / pinned
    if is_vault(pinned):
        return None
    gone = "which is gone" if not pinned.exists() else "which is not a vault"
    return (
        f"{item.client} {item.what} in {item.file} uses the vault {pinned}, {gone}; run "
        f"'{this_program(path)} init --vault {pinned}' if it is the one you meant, else run "
        f"'{item.reinstall(path)}' to pin none (the vault is then found as every command "
        "finds it) or add --vault PATH to pin another"
    )


def _command_problem(item: Installed, path: str | None) -> str | None:
    words = list(item.words)
    while words and "=" in words[0] and not words[0].startswith(("/", ".")):
        words.pop(0)  # FOO=bar before the command
    if not words:
        return (
            f"{item.client} {item.what} in {item.file} has no command; run '{item.reinstall(path)}'"
        )
    word = words[0]
    if runs_from(word, item.cwd, path) is not None:
        return None
    where = f"{item.client} {item.what} in {item.file} runs '{word}'"
    if "/" in word or os.sep in word:
        return (
            f"{where}, which does not exist or cannot run (moved or uninstalled?); "
            f"run '{item.reinstall(path)}' to register the agent-mem-vault installed now"
        )
    if word != "agent-mem-vault":
        return f"{where}, which is not on PATH; install {word} so it is on PATH"
    if item.scope == "user":
        return f"{where}, which is not on PATH; run '{item.reinstall(path)}'"
    return (
        f"{where}, which is not on PATH; {ON_PATH}, or run '{item.reinstall(path)} --scope user' "
        "to register the executable by its absolute path"
    )


def codex_trust_problems(home: Path, cwd: Path, path: str | None = None) -> list[str]:
    """Our Codex hook, if installed, as Codex judges its trust.

    Asks the installed ``codex`` (``hooks/list``: ``trustStatus``), which also
    catches a hash that no longer matches the hook; without ``codex`` only a
    missing ``trusted_hash`` can be seen.
    """
    hooks_file = home / "hooks.json"
    if not _json_hook("codex", "user", hooks_file, None):
        return []
    fix = "run 'agent-mem-vault install codex' to record it (or trust it in codex's /hooks)"
    codex = os.environ.get("AGENT_MEM_VAULT_CODEX") or shutil.which("codex", path=path)
    if codex is not None:
        from .codex_trust import list_codex_hooks

        try:
            hooks = list_codex_hooks(codex, home, cwd)
        except (OSError, RuntimeError):
            hooks = None
        hooks = None if hooks is None else [h for h in hooks if not h.plugin_id]
        if hooks is not None and not any(h.ours for h in hooks):
            return [
                f"Codex does not see the session hook in {hooks_file} (is [features] hooks "
                f"turned off in {home / 'config.toml'}?); run 'agent-mem-vault install codex'"
            ]
        if hooks is not None:
            return [
                f"Codex will not run the session hook in {hooks_file}: it is "
                f"{h.trust_status or 'untrusted'} (trusted_hash in {home / 'config.toml'} "
                f"missing or not matching the hook); {fix}"
                for h in hooks
                if h.ours and h.trust_status != "trusted"
            ]
    state = _table(_table(read_toml(home / "config.toml"), "hooks"), "state")
    prefix = f"{hooks_file}:session_start:"
    trusted = any(
        str(key).startswith(prefix) and isinstance(v, dict) and v.get("trusted_hash")
        for key, v in (state.items() if isinstance(state, dict) else [])
    )
    if trusted:
        return []
    return [
        f"Codex will not run the session hook in {hooks_file}: no trusted_hash for it "
        f"in {home / 'config.toml'}; {fix}"
    ]


def claude_approval_problems(home: Path, repo: Path) -> list[str]:
    """A ``.mcp.json`` server of ours that Claude Code would hold for approval."""
    mcp = repo / ".mcp.json"
    servers = read_json(mcp).get("mcpServers")
    if not isinstance(servers, dict) or SERVER_NAME not in servers:
        return []
    files = [
        repo / ".claude" / "settings.json",
        repo / ".claude" / "settings.local.json",
        home / ".claude" / "settings.json",
    ]
    for file in files:
        rejected = read_json(file).get("disabledMcpjsonServers")
        if isinstance(rejected, list) and SERVER_NAME in rejected:
            return [
                f"Claude Code will not start the server in {mcp}: it is listed in "
                f"disabledMcpjsonServers in {file}; remove it there"
            ]
    for file in files:
        data = read_json(file)
        names = data.get(APPROVAL_KEY)
        if data.get("enableAllProjectMcpServers") is True or (
            isinstance(names, list) and SERVER_NAME in names
        ):
            return []
    return [
        f"Claude Code holds the server in {mcp} for approval: it is in no "
        f"{APPROVAL_KEY}; run 'agent-mem-vault install claude-code' to approve it"
    ]


def gemini_trust_problems(home: Path, repo: Path) -> list[str]:
    """A repository Gemini CLI does not trust (the caller found our entries installed).

    Gemini CLI starts no stdio MCP server and runs no hook in such a folder, and
    ``gemini -p`` refuses to run there. Trusting it is the person's decision
    (see :mod:`.gemini_trust`), so the problem names the two ways to make it.
    """
    trust = gemini_folder_trust(repo, home)
    if trust in ("trusted", "not-required"):
        return []
    said = "you chose not to trust it" if trust == "untrusted" else "it is not trusted yet"
    return [
        f"Gemini CLI will start neither the server nor the session hook in {repo}: {said}; "
        "start 'gemini' there once and trust the folder (headless runs: "
        "GEMINI_CLI_TRUST_WORKSPACE=true)"
    ]


def _table(data: dict[str, Any], key: str) -> dict[str, Any]:
    """``data[key]`` if it is a table (a file edited by hand may hold anything), else {}."""
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _json_server(
    client: str, scope: str, file: Path, key: str, cwd: Path | None
) -> list[Installed]:
    entry = read_json(file).get(key, {})
    entry = entry.get(SERVER_NAME) if isinstance(entry, dict) else None
    if not isinstance(entry, dict):
        return []
    command = entry.get("command")
    raw = command if isinstance(command, list) else [command]
    if not raw or not all(isinstance(w, str) for w in raw):
        return []
    args = entry.get("args")
    if isinstance(args, list) and all(isinstance(a, str) for a in args):
        raw = [*raw, *args]
    words = tuple(str(w) for w in raw)
    return [Installed(client, "MCP server", file, words, scope, cwd)]


def _json_hook(
    client: str, scope: str, file: Path, cwd: Path | None, event: str = EVENT
) -> list[Installed]:
    hooks = read_json(file).get("hooks", {})
    groups = hooks.get(event) if isinstance(hooks, dict) else None
    what = "session hook" if event == EVENT else "session-end hook"
    out: list[Installed] = []
    for group in groups if isinstance(groups, list) else []:
        entries = group.get("hooks") if isinstance(group, dict) else None
        for hook in entries if isinstance(entries, list) else []:
            if is_our_hook(hook, event):
                words = tuple(shlex.split(hook["command"]))
                out.append(Installed(client, what, file, words, scope, cwd))
    return out


def end_hook_problems(installed: list[Installed]) -> list[str]:
    """A settings file with our session hook but not the session-end hook install adds.

    Without it a session that ends cleanly is still found ended, once its
    process is gone; with it the end is known at once, even where processes
    cannot be looked at. So this is worth one re-install, and says so.
    """
    ends = {(i.client, i.file) for i in installed if i.what == "session-end hook"}
    return [
        f"{i.client} session hook in {i.file} has no session-end hook next to it, so a "
        f"clean end is seen only once the session's process is gone; run "
        f"'{i.reinstall()}' to add it"
        for i in installed
        if i.what == "session hook"
        and i.client in ("claude-code", "codex", "gemini")
        and (i.client, i.file) not in ends
    ]


def _plugin_hook(scope: str, file: Path, cwd: Path | None) -> list[Installed]:
    try:
        text = file.read_text(encoding="utf-8")
    except OSError:
        return []
    match = _HOOK_LINE.search(text)
    try:
        words = json.loads(match.group(1)) if match else None
    except ValueError:
        words = None
    if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
        return [Installed("opencode", "session hook", file, (), scope, cwd)]
    return [Installed("opencode", "session hook", file, tuple(words), scope, cwd)]
