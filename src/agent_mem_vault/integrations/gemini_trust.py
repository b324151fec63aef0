"""Does Gemini CLI trust a folder? Read the way the CLI itself decides.

Gemini CLI (folder trust is on unless ``security.folderTrust.enabled`` is false
in ~/.gemini/settings.json) starts no stdio MCP server and runs no project hook
in a folder the person has not trusted, and ``gemini -p`` refuses to run there.
The person's choice lives in ``~/.gemini/trustedFolders.json`` (or
``$GEMINI_CLI_TRUSTED_FOLDERS_PATH``): ``{"/path": "TRUST_FOLDER" | "TRUST_PARENT" |
"DO_NOT_TRUST"}``, the longest matching rule wins, ``TRUST_PARENT`` stands for the
rule's parent folder. ``GEMINI_CLI_TRUST_WORKSPACE=true|false`` overrides it all.

``install gemini`` only reads this, to say what to do: trusting a folder lets
Gemini CLI load everything in it (its .env, its other settings), which is the
person's decision in Gemini CLI's own dialog, not ours to take for them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

__all__ = ["GeminiTrust", "gemini_dir", "gemini_folder_trust"]

GeminiTrust = Literal["trusted", "untrusted", "unknown", "not-required"]
"""``unknown``: no rule covers the folder yet (the CLI asks when it starts there)."""


def gemini_dir(home: Path, env: Mapping[str, str] | None = None) -> Path:
    """``$GEMINI_CLI_HOME/.gemini``, else ``~/.gemini``: where Gemini CLI keeps its files."""
    value = (os.environ if env is None else env).get("GEMINI_CLI_HOME")
    return (Path(value).expanduser() if value else home) / ".gemini"


def gemini_folder_trust(
    folder: Path, home: Path, env: Mapping[str, str] | None = None
) -> GeminiTrust:
    """How Gemini CLI started in ``folder`` would treat it."""
    env = os.environ if env is None else env
    override = env.get("GEMINI_CLI_TRUST_WORKSPACE")
    if override == "true":
        return "trusted"
    if override == "false":
        return "untrusted"
    base = gemini_dir(home, env)
    settings = _load(base / "settings.json")
    security = settings.get("security") if isinstance(settings, dict) else None
    folder_trust = security.get("folderTrust") if isinstance(security, dict) else None
    if isinstance(folder_trust, dict) and folder_trust.get("enabled") is False:
        return "not-required"
    rules_path = Path(env.get("GEMINI_CLI_TRUSTED_FOLDERS_PATH") or base / "trustedFolders.json")
    rules = _load(rules_path)
    target = _real(folder)
    best: tuple[int, str] | None = None
    for rule, level in rules.items() if isinstance(rules, dict) else []:
        if level not in ("TRUST_FOLDER", "TRUST_PARENT", "DO_NOT_TRUST"):
            continue
        effective = _real(Path(rule).parent if level == "TRUST_PARENT" else Path(rule))
        if (target == effective or effective in target.parents) and (
            best is None or len(rule) > best[0]
        ):
            best = (len(rule), level)
    if best is None:
        return "unknown"
    return "untrusted" if best[1] == "DO_NOT_TRUST" else "trusted"


def _real(path: Path) -> Path:
    try:
        return path.expanduser().resolve()
    except OSError:
        return path.expanduser().absolute()


def _load(path: Path) -> object:
    """The file's JSON, or None when it is missing or unreadable (the CLI then
    reports the problem itself when it starts)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
