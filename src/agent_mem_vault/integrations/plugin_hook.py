"""The plugin's session-start hook, and what it says when ``install`` registered us too.

A person who ran ``install`` and then added the plugin (or the other way round)
has two session hooks in the client. Both would print the brief; the plugin's
prints only one line instead, naming the two registrations and the command
that keeps one, so the session sees the brief once and the person the fix.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

from .installed import Installed, find_installed
from .namespace import find_repo_root
from .plugins import HOOK_CLIENT
from .session_hook import HookInput, render_session_start

if TYPE_CHECKING:
    from ..vault import Vault

__all__ = ["install_entries", "plugin_instead", "plugin_session_start", "uninstall_command"]

CLIENT_TITLES = {
    "claude-code": "Claude Code",
    "codex": "Codex",
    "gemini": "Gemini CLI",
    "opencode": "opencode",
}


def plugin_session_start(vault: Vault, hook: HookInput, client: str, home: Path) -> str:
    """What the plugin's hook prints in ``client`` for the session in ``hook``."""
    try:
        repo = find_repo_root(Path(hook.cwd))
        entries = [i for i in install_entries(client, home, repo) if i.what == "session hook"]
    except Exception:  # a failing hook can block the session: look no further
        entries = []
    if entries:
        return (
            f"agent-mem-vault is registered twice in {CLIENT_TITLES[client]}: by its plugin "
            f"and by `agent-mem-vault install` ({entries[0].file}), whose hook gives this "
            f"session's brief; run '{uninstall_command(entries[0])}' to keep the plugin alone."
        )
    # As the server the plugin starts does: the default vault is made at first use, so
    # the plugin needs no set-up step (a vault named elsewhere must exist; if it does
    # not, the brief below says so in one line).
    with contextlib.suppress(Exception):
        vault.require(make_default=True)
    return render_session_start(vault, hook, agent=client, client=HOOK_CLIENT[client])


def install_entries(client: str, home: Path, repo: Path | None) -> list[Installed]:
    """What ``install`` registered in ``client`` (server and hooks) for ``home`` and ``repo``."""
    return [i for i in find_installed(home, repo) if i.client == client]


def uninstall_command(item: Installed) -> str:
    """The ``uninstall`` that removes ``item`` (and the rest ``install`` wrote beside it)."""
    scope = " --scope user" if item.scope == "user" and item.client != "codex" else ""
    return f"agent-mem-vault uninstall {item.client}{scope}"


def plugin_instead(client: str, home: Path, repo: Path | None) -> str | None:
    """Why ``install client`` should write nothing: the client has the plugin, which
    registers the same server and hook. None when it has not."""
    from .plugins import find_plugins

    for plugin in find_plugins(home, repo):
        if plugin.client == client:
            return (
                f"the agent-mem-vault plugin already registers the server and the session hook "
                f"in {CLIENT_TITLES[client]} ({plugin.name} in {plugin.where}), so install "
                f"wrote nothing: one of each is enough. To use install instead, "
                f"{plugin.remove}, then run this again"
            )
    return None
