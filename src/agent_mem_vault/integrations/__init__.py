"""Telling the agents: installers for Claude Code and Codex, the session-start hook,
namespace discovery and the instruction line for AGENTS.md / CLAUDE.md.
"""

from __future__ import annotations

from .config_files import FileChange, apply_changes
from .instructions import instructions_text
from .namespace import CONFIG_FILE, discover_namespace, find_repo_root
from .session_hook import HookInput, hook_json, parse_hook_input, render_session_start
from .targets import SERVER_NAME, Launch, codex_home, plan_claude_code, plan_codex

__all__ = [
    "CONFIG_FILE",
    "SERVER_NAME",
    "FileChange",
    "HookInput",
    "Launch",
    "apply_changes",
    "codex_home",
    "discover_namespace",
    "find_repo_root",
    "hook_json",
    "instructions_text",
    "parse_hook_input",
    "plan_claude_code",
    "plan_codex",
    "render_session_start",
]
