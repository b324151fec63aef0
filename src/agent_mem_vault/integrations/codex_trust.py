"""Codex runs only the hooks a person has trusted: record that trust as Codex does.

Codex keeps trust in ``config.toml``: ``[hooks.state."<key>"] trusted_hash =
"sha256:…"``, where the key names the hook (``<hooks.json>:session_start:<group>:<n>``)
and the hash is of the hook as Codex reads it. Both come from Codex itself: its
app-server answers ``hooks/list`` with each hook's ``key``, ``currentHash`` and
``trustStatus``. So ``install codex`` asks the installed ``codex`` for them
rather than copying Codex's hashing, which could change with any release.
Without ``codex`` on PATH nothing can be asked; install then says what to run.

A plugin's hook (``codex plugin add``) is keyed by the plugin
(``agent-mem-vault@agent-mem-vault:codex/hooks.json:session_start:0:0``) and its
``currentHash`` is two hashes, ``<hook>/<plugin content>``: Codex records them as
``trusted_hash`` and ``trusted_content_hash``, so a new version of the plugin is
untrusted until it is trusted again.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .config_files import FileChange, read_text
from .hooks_json import END_EVENT, is_our_hook
from .plugin_files import PLUGIN_NAME

__all__ = ["CodexHook", "list_codex_hooks", "trust_change", "untrust_change"]

APP_SERVER_TIMEOUT_SECONDS = 60
_EVENTS = ("sessionStart", "sessionEnd")
"""The events install registers hooks for (``hooks/list`` names them so)."""


@dataclass(frozen=True)
class CodexHook:
    """One hook as Codex's ``hooks/list`` reports it."""

    key: str
    command: str
    current_hash: str
    trust_status: str
    """``trusted``, ``untrusted`` or ``modified`` (Codex's words)."""
    plugin_id: str = ""
    """``agent-mem-vault@<marketplace>`` for a plugin's hook, else empty."""

    @property
    def ours(self) -> bool:
        if self.plugin_id:
            return self.from_our_plugin
        hook = {"command": self.command}
        return is_our_hook(hook) or is_our_hook(hook, END_EVENT)

    @property
    def from_our_plugin(self) -> bool:
        return self.plugin_id.startswith(f"{PLUGIN_NAME}@")

    def trust(self) -> dict[str, str]:
        """The fields Codex records for this hook when a person trusts it."""
        hook_hash, _, content_hash = self.current_hash.partition("/")
        fields = {"trusted_hash": hook_hash}
        if content_hash:
            fields["trusted_content_hash"] = content_hash
        return fields


def list_codex_hooks(codex: str, codex_home: Path, cwd: Path) -> list[CodexHook]:
    """The SessionStart hooks Codex sees for ``cwd``, from ``codex app-server``.

    Raises ``OSError`` when codex cannot be started and ``RuntimeError`` when it
    does not answer as expected.
    """
    env = {**os.environ, "CODEX_HOME": str(codex_home)}
    requests = [
        {"id": 1, "method": "initialize", "params": {"clientInfo": _client_info()}},
        {"method": "initialized"},
        {"id": 2, "method": "hooks/list", "params": {"cwds": [str(cwd)]}},
    ]
    with subprocess.Popen(
        [codex, "app-server"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
        cwd=cwd,
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        try:
            for request in requests:
                proc.stdin.write(json.dumps(request) + "\n")
            proc.stdin.flush()
            answer = _answer(proc, request_id=2)
        finally:
            proc.kill()
    return _hooks_of(answer)


def _client_info() -> dict[str, str]:
    from ..core.version import __version__

    return {"name": "agent-mem-vault", "version": __version__}


def _answer(proc: subprocess.Popen[str], *, request_id: int) -> dict[str, Any]:
    import threading

    assert proc.stdout is not None
    found: dict[str, Any] = {}

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            try:
                message = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(message, dict) and message.get("id") == request_id:
                found.update(message)
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(APP_SERVER_TIMEOUT_SECONDS)
    if not found:
        raise RuntimeError("codex app-server did not answer hooks/list")
    if "error" in found:
        raise RuntimeError(f"codex app-server refused hooks/list: {found['error']}")
    return found


def _hooks_of(answer: dict[str, Any]) -> list[CodexHook]:
    hooks: list[CodexHook] = []
    for entry in answer.get("result", {}).get("data", []):
        for hook in entry.get("hooks", []) if isinstance(entry, dict) else []:
            if not isinstance(hook, dict) or hook.get("eventName") not in _EVENTS:
                continue
            hooks.append(
                CodexHook(
                    key=str(hook.get("key", "")),
                    command=str(hook.get("command") or ""),
                    current_hash=str(hook.get("currentHash") or ""),
                    trust_status=str(hook.get("trustStatus") or ""),
                    plugin_id=str(hook.get("pluginId") or ""),
                )
            )
    return hooks


def trust_change(config: Path, hooks: list[CodexHook]) -> FileChange:
    """config.toml with ``trusted_hash`` recorded for each of our hooks in ``hooks``."""
    import tomlkit

    from .toml_files import parse_toml, toml_change

    before = read_text(config)
    doc = parse_toml(config, before)
    for hook in hooks:
        if not hook.ours or not hook.key or not hook.current_hash:
            continue
        state = _state_table(doc)
        table = state.get(hook.key)
        if table is None:
            table = tomlkit.table()
            state[hook.key] = table
        for key, value in hook.trust().items():
            if table.get(key) != value:
                table[key] = value
    return toml_change(config, before, doc)


def untrust_change(config: Path, hooks: list[CodexHook]) -> FileChange:
    """config.toml without the trust entries of our hooks in ``hooks``."""
    from .toml_files import parse_toml, toml_change

    before = read_text(config)
    doc = parse_toml(config, before)
    hooks_table = doc.get("hooks")
    state = hooks_table.get("state") if hooks_table is not None else None
    if state is not None:
        for hook in hooks:
            if hook.ours and hook.key in state:
                del state[hook.key]
        if not state:
            del hooks_table["state"]
        if not hooks_table:
            del doc["hooks"]
    return toml_change(config, before, doc)


def _state_table(doc: Any) -> Any:
    import tomlkit

    hooks_table = doc.get("hooks")
    if hooks_table is None:
        hooks_table = tomlkit.table(is_super_table=True)
        doc["hooks"] = hooks_table
    state = hooks_table.get("state")
    if state is None:
        state = tomlkit.table(is_super_table=True)
        hooks_table["state"] = state
    return state
