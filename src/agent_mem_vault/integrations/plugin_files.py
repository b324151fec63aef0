"""The files of the client plugins, written from one place.

Each client installs agent-mem-vault with its own plugin command from one
folder (``plugins.py`` says where it is and how each client adds it):

Claude Code and Codex
    The folder itself: a marketplace (``.claude-plugin/marketplace.json``, which
    Codex reads too) whose one plugin is the folder (``source: "./"``). Each
    client reads its own manifest (``.claude-plugin/plugin.json``,
    ``.codex-plugin/plugin.json``), and each manifest names its own server and
    hook files, so that the agent name in them is the client's.
Gemini CLI
    ``gemini/``: ``gemini-extension.json`` (the server), ``hooks/hooks.json`` and
    ``GEMINI.md``, the instruction line, which Gemini CLI loads into each session.
opencode
    ``opencode/``: a JS package whose ``config`` hook adds the server and whose
    session hooks are those ``install opencode`` writes (``opencode_plugin.py``).

Nothing in them names a root folder: Codex expands no variable in a plugin's
server entry, so every entry runs the ``agent-mem-vault`` on PATH, and every
hook first checks that there is one and otherwise tells the agent, in one line,
how to install it (the server fails then too, silently in most clients).

The files in the package are these functions' output, and a test checks that
they agree (``python -m agent_mem_vault.integrations.plugin_files --write``
writes them again); the version in each manifest is the package's.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

from ..core.version import __version__
from .hooks_json import TIMEOUT_SECONDS
from .instructions import instructions_text
from .opencode_plugin import plugin_source
from .targets import SERVER_NAME, STARTUP_TIMEOUT_SECONDS

__all__ = [
    "MISSING",
    "PLUGIN_NAME",
    "REPO_SOURCE",
    "expected_files",
    "marketplace",
    "plugin_root",
    "write_files",
]

PLUGIN_NAME = "agent-mem-vault"
"""The plugin's (and the marketplace's) name: ``agent-mem-vault@agent-mem-vault``."""
DESCRIPTION = (
    "Handoffs and memories between coding agents: the agent-mem-vault MCP tools and a "
    "session-start brief of the project and its pending handoffs."
)
REPO_SOURCE = "./src/agent_mem_vault/plugin"
"""Where the plugin lies from the repository's root (the repository's marketplace)."""
MISSING = (
    "agent-mem-vault is not installed (not on PATH), so the vault tools and the session "
    "brief are missing: install it with `uv tool install agent-mem-vault` or `pipx install "
    "agent-mem-vault`, then start a new session."
)
"""The one line an agent sees where the plugin cannot find the program."""
OPENCODE_MARK = "// agent-mem-vault: the opencode plugin of the agent-mem-vault package"


def plugin_root() -> Path:
    """The plugin folder inside the installed package."""
    return Path(__file__).resolve().parent.parent / "plugin"


def _json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _guarded(words: list[str], missing: str) -> str:
    """A shell command that runs ``words`` when agent-mem-vault is on PATH, else ``missing``.

    ``exec`` keeps the hook's process the client's child, which is how the
    session hook finds the session's process.
    """
    return f"command -v agent-mem-vault >/dev/null 2>&1 && exec {shlex.join(words)} || {missing}"


def _start_hook(client: str) -> str:
    said = json.dumps(
        {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": MISSING}}
    )
    return _guarded(["agent-mem-vault", "plugin", "hook", client], f"echo {shlex.quote(said)}")


def _end_hook(agent: str, client: str) -> str:
    words = ["agent-mem-vault", "hook", "session-end", "--agent", agent, "--client", client]
    return _guarded(words, "true")


def _hooks(
    agent: str, client: str, start: str, end: str, timeout: int = TIMEOUT_SECONDS
) -> dict[str, Any]:
    def entry(command: str) -> list[dict[str, Any]]:
        return [{"type": "command", "command": command, "timeout": timeout}]

    return {
        "hooks": {
            "SessionStart": [{"matcher": start, "hooks": entry(_start_hook(agent))}],
            "SessionEnd": [{"matcher": end, "hooks": entry(_end_hook(agent, client))}],
        }
    }


def _server(agent: str, **extra: Any) -> dict[str, Any]:
    entry = {"command": "agent-mem-vault", "args": ["serve", "--agent", agent], **extra}
    return {"mcpServers": {SERVER_NAME: entry}}


def _manifest(folder: str) -> dict[str, Any]:
    return {
        "name": PLUGIN_NAME,
        "version": __version__,
        "description": DESCRIPTION,
        "license": "MIT",
        "mcpServers": f"./{folder}/mcp.json",
        "hooks": f"./{folder}/hooks.json",
    }


def marketplace(source: str) -> str:
    """The marketplace file whose one plugin lies at ``source``."""
    entry = {"name": PLUGIN_NAME, "source": source, "description": DESCRIPTION}
    return _json(
        {
            "name": PLUGIN_NAME,
            "owner": {"name": "the agent-mem-vault developers"},
            "metadata": {"description": DESCRIPTION, "version": __version__},
            "plugins": [{**entry, "version": __version__}],
        }
    )


def _opencode() -> str:
    """The opencode plugin: install's session hooks, and the server added by ``config``."""
    server = {
        "type": "local",
        "command": ["agent-mem-vault", "serve", "--agent", "opencode"],
        "enabled": True,
        "timeout": STARTUP_TIMEOUT_SECONDS * 1000,
    }
    start = ["agent-mem-vault", "plugin", "hook", "opencode"]
    end = ["agent-mem-vault", "hook", "session-end", "--agent", "opencode", "--client", "opencode"]
    source = plugin_source(
        OPENCODE_MARK,
        start,
        end,
        TIMEOUT_SECONDS * 1000,
        missing=MISSING,
        servers={SERVER_NAME: server},
    )
    return source


def expected_files() -> dict[str, str]:
    """Every file of the plugin folder, by its path in the folder."""
    gemini_timeout = TIMEOUT_SECONDS * 1000  # Gemini CLI counts hook timeouts in ms
    gemini = {
        "name": PLUGIN_NAME,
        "version": __version__,
        "description": DESCRIPTION,
        **_server("gemini", timeout=STARTUP_TIMEOUT_SECONDS * 1000),
        # Gemini CLI loads an extension's context file into every session: the
        # instruction line install leaves to the person's GEMINI.md / AGENTS.md.
        "contextFileName": "GEMINI.md",
    }
    return {
        ".claude-plugin/marketplace.json": marketplace("./"),
        ".claude-plugin/plugin.json": _json(_manifest("claude-code")),
        ".codex-plugin/plugin.json": _json(_manifest("codex")),
        "claude-code/mcp.json": _json(_server("claude-code")),
        "claude-code/hooks.json": _json(
            _hooks("claude-code", "claude-code", "startup|resume|clear|compact", "*")
        ),
        # Codex passes a server no variable it is not told to; its matchers are
        # regular expressions ("" matches every end).
        "codex/mcp.json": _json(
            _server(
                "codex", env_vars=["AGENT_MEM_VAULT"], startup_timeout_sec=STARTUP_TIMEOUT_SECONDS
            )
        ),
        "codex/hooks.json": _json(_hooks("codex", "codex", "startup|resume", "")),
        "gemini/gemini-extension.json": _json(gemini),
        # Gemini CLI compares a SessionStart matcher with the source as a plain string.
        "gemini/GEMINI.md": instructions_text() + "\n",
        "gemini/hooks/hooks.json": _json(_hooks("gemini", "gemini-cli", "*", "*", gemini_timeout)),
        "opencode/package.json": _json(
            {
                "name": "agent-mem-vault-opencode",
                "version": __version__,
                "description": DESCRIPTION,
                "license": "MIT",
                "type": "module",
                "main": "index.js",
            }
        ),
        "opencode/index.js": _opencode(),
    }


def write_files(root: Path) -> list[Path]:
    """Write the plugin folder under ``root`` (the package's, by default); the changed files."""
    changed = []
    for name, text in expected_files().items():
        path = root / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            changed.append(path)
    return changed


if __name__ == "__main__":  # pragma: no cover - a maintainer's command
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python -m agent_mem_vault.integrations.plugin_files --write")
    written = write_files(plugin_root())
    # The repository's own marketplace, beside pyproject.toml, names the same folder.
    checkout = plugin_root().parents[2]
    if (checkout / "pyproject.toml").is_file():
        path = checkout / ".claude-plugin" / "marketplace.json"
        if not path.exists() or path.read_text(encoding="utf-8") != marketplace(REPO_SOURCE):
            path.parent.mkdir(exist_ok=True)
            path.write_text(marketplace(REPO_SOURCE), encoding="utf-8")
            written.append(path)
    for path in written:
        print(f"wrote {path}")
