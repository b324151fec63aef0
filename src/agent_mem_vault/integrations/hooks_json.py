"""The ``hooks`` object shared by Claude Code's settings.json and Codex's hooks.json.

Both tools read ``{"hooks": {"SessionStart": [{"matcher": …, "hooks": [{"type":
"command", "command": …, "timeout": …}]}]}}``. Our entry is recognised by its
command (``… hook session-start …`` of agent-mem-vault; ``… hook session-end …``
under ``SessionEnd``), so install can update a stale one in place and
uninstall removes ours and nothing else.
"""

from __future__ import annotations

import copy
import shlex
from itertools import pairwise
from typing import Any

__all__ = ["add_session_hook", "find_our_hook", "is_our_hook", "remove_session_hooks"]

EVENT = "SessionStart"
END_EVENT = "SessionEnd"
TIMEOUT_SECONDS = 10
VERBS = {EVENT: "session-start", END_EVENT: "session-end"}


def is_our_hook(hook: Any, event: str = EVENT) -> bool:
    """True for a hook entry that runs ``agent-mem-vault … hook session-start``
    (``session-end`` for ``event="SessionEnd"``)."""
    if not isinstance(hook, dict) or not isinstance(hook.get("command"), str):
        return False
    try:
        words = shlex.split(hook["command"])
    except ValueError:
        return False
    ours = bool(words) and ("agent-mem-vault" in words[0] or "agent_mem_vault" in hook["command"])
    verb = VERBS.get(event, "session-start")
    return ours and any(a == "hook" and b == verb for a, b in pairwise(words))


def add_session_hook(
    data: dict[str, Any],
    *,
    command: str,
    matcher: str,
    timeout: int = TIMEOUT_SECONDS,
    event: str = EVENT,
) -> dict[str, Any]:
    """``data`` with our SessionStart hook present exactly once, everything else kept.

    ``timeout`` is in the tool's unit: seconds for Claude Code and Codex,
    milliseconds for Gemini CLI.
    """
    out = copy.deepcopy(data)
    entry = {"type": "command", "command": command, "timeout": timeout}
    groups = out.setdefault("hooks", {}).setdefault(event, [])
    for group in groups:
        hooks = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(hooks, list):
            continue
        for i, hook in enumerate(hooks):
            if not is_our_hook(hook, event):
                continue
            if group.get("matcher") == matcher or len(hooks) == 1:
                # Update a stale entry in place (say, a moved executable, or a
                # matcher an earlier version wrote that the tool never matches).
                hooks[i] = {**hook, **entry}
                group["matcher"] = matcher
                return _dedupe(out, event)
            # Ours shares a group with someone else's hooks under another
            # matcher: leave theirs as it is, ours moves to a group of its own.
            del hooks[i]
            groups.append({"matcher": matcher, "hooks": [entry]})
            return _dedupe(out, event)
    groups.append({"matcher": matcher, "hooks": [entry]})
    return out


def remove_session_hooks(data: dict[str, Any], event: str = EVENT) -> dict[str, Any]:
    """``data`` without our hook entries; containers only ours filled are dropped."""
    out = copy.deepcopy(data)
    hooks_obj = out.get("hooks")
    if not isinstance(hooks_obj, dict) or not isinstance(hooks_obj.get(event), list):
        return out
    kept_groups = []
    for group in hooks_obj[event]:
        hooks = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(hooks, list) or not any(is_our_hook(h, event) for h in hooks):
            kept_groups.append(group)
            continue
        rest = [h for h in hooks if not is_our_hook(h, event)]
        if rest:
            kept_groups.append({**group, "hooks": rest})
    if kept_groups:
        hooks_obj[event] = kept_groups
    else:
        del hooks_obj[event]
    if not hooks_obj:
        del out["hooks"]
    return out


def _dedupe(data: dict[str, Any], event: str = EVENT) -> dict[str, Any]:
    """Keep only the first of our entries, should a hand edit have doubled it."""
    seen = False
    for group in data["hooks"][event]:
        hooks = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(hooks, list):
            continue
        kept = []
        for hook in hooks:
            if is_our_hook(hook, event):
                if seen:
                    continue
                seen = True
            kept.append(hook)
        group["hooks"] = kept
    data["hooks"][event] = [
        g for g in data["hooks"][event] if not isinstance(g, dict) or g.get("hooks") != []
    ]
    return data


def find_our_hook(data: dict[str, Any], event: str = EVENT) -> dict[str, Any] | None:
    """Our hook entry for ``event`` (SessionStart by default) in ``data``, if there is one."""
    hooks_obj = data.get("hooks")
    groups = hooks_obj.get(event) if isinstance(hooks_obj, dict) else None
    for group in groups if isinstance(groups, list) else []:
        hooks = group.get("hooks") if isinstance(group, dict) else None
        for hook in hooks if isinstance(hooks, list) else []:
            if is_our_hook(hook, event):
                return dict(hook)
    return None
