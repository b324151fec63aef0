"""The opencode plugin ``install opencode`` writes: opencode's session hooks.

opencode has no command hooks; a plugin is how it runs ours. For each session
the plugin runs ``hook session-start`` once, at the session's first model
request, with the session's id (so the session is registered as a run and an
automatic handoff for a session that died is written), and adds what it prints
to that session's system prompt. Each session gets its own text: one
``opencode serve`` process holds many sessions, and a session that starts
later must see the handoffs pending then, not those of the first session.

Not every model request is the session's own turn: opencode asks the model
for the session's title with the title agent's prompt and the session's id.
That request gets nothing; it would only spend tokens and, at the session's
start, run the hook before the session's real first request.

When opencode deletes a session or exits normally, ``hook session-end`` marks
the session ended. A killed opencode runs nothing: the session's process being
gone is what tells it died.

The plugin imports only Node's own modules and needs no package. opencode
itself, though, installs its plugin SDK with npm into each of its config
folders (``~/.config/opencode``, the repository's ``.opencode``) at every start
until that succeeds, and holds the first model request until those installs
end whenever any plugin is present. With no registry reachable, npm's retries
make that over a minute at every start; the ``.npmrc`` install writes next to
the plugin and in the user's opencode folder turns the retries off, so an
install that cannot succeed fails at once (``npmrc_change``).
"""

from __future__ import annotations

import json
from pathlib import Path

from .config_files import FileChange, read_text

__all__ = ["NPMRC", "NPMRC_MARK", "SIDE_PROMPTS", "npmrc_change", "plugin_source"]

SIDE_PROMPTS = (
    "You are a title generator",
    "Summarize what was done in this conversation",
)
"""How opencode's own side requests (the title and summary agents) begin their
system prompt: requests that are not the session's turn."""


def plugin_source(
    mark: str,
    start: list[str],
    end: list[str],
    timeout_ms: int,
    *,
    missing: str | None = None,
    servers: dict[str, dict[str, object]] | None = None,
) -> str:
    """The plugin's JavaScript, running ``start`` and ``end`` (argument lists), each
    for at most ``timeout_ms``; ``mark`` is its first line (how install knows it).

    The plugin folder's copy (``plugin_files.py``) also gives ``missing``, the
    line the session sees where the program is not on PATH, and ``servers``, the
    MCP entries (by name) its ``config`` hook adds where the configuration has none
    of that name.
    """
    failed = "`agent-mem-vault: the session-start hook failed: ${error.message}`"
    if missing is not None:
        failed = f'error.code === "ENOENT" ? MISSING : {failed}'
    consts = f"const MISSING = {json.dumps(missing)};\n" if missing is not None else ""
    config = ""
    kept = "Re-run install to update this file; uninstall removes it."
    if servers is not None:
        kept = "It is the agent-mem-vault package's (`agent-mem-vault plugin path opencode`)."
        consts += f"const SERVERS = {json.dumps(servers)};\n"
        config = """
    config: async (config) => {
      // A server `agent-mem-vault install opencode` registered stays the only one.
      config.mcp ??= {};
      for (const [name, entry] of Object.entries(SERVERS)) config.mcp[name] ??= entry;
    },"""
    return f"""{mark}
// Runs agent-mem-vault's session hooks in opencode. At each session's first
// model request, `hook session-start` registers the session (its id, this
// process) and prints the project brief, the pending handoffs and any automatic
// handoff from a session that stopped without one: that text goes into this
// session's system prompt, as Claude Code and Codex add a SessionStart hook's
// output. Each session gets its own text, once; opencode's title request gets
// none. When a session is deleted or opencode exits, `hook session-end` marks it
// ended. {kept}
import {{ execFile, execFileSync }} from "node:child_process";

const HOOK = {json.dumps(start)};
const END = {json.dumps(end)};
const SIDE_PROMPTS = {json.dumps(list(SIDE_PROMPTS))};
const TIMEOUT_MS = {timeout_ms};
{consts}
const hookInput = (directory, sessionID, event) =>
  JSON.stringify({{
    session_id: sessionID,
    cwd: directory,
    source: "startup",
    hook_event_name: event,
  }});

const sessionStart = (directory, sessionID) =>
  new Promise((resolve) => {{
    const child = execFile(
      HOOK[0],
      HOOK.slice(1),
      {{ encoding: "utf8", timeout: TIMEOUT_MS, maxBuffer: 1 << 20 }},
      (error, stdout) =>
        resolve(
          error
            ? {failed}
            : String(stdout).trim(),
        ),
    );
    child.stdin.on("error", () => {{}});
    child.stdin.end(hookInput(directory, sessionID, "SessionStart"));
  }});

const sideRequest = (system) =>
  SIDE_PROMPTS.some((prompt) => String(system[0] ?? "").trimStart().startsWith(prompt));

export const AgentMemVault = async ({{ directory }}) => {{
  const started = new Map(); // session id -> the hook's text (a promise)
  const end = (sessionID) => {{
    if (typeof sessionID !== "string" || !started.delete(sessionID)) return;
    try {{
      execFileSync(END[0], END.slice(1), {{
        input: hookInput(directory, sessionID, "SessionEnd"),
        timeout: TIMEOUT_MS,
        stdio: ["pipe", "ignore", "ignore"],
      }});
    }} catch {{
      // A hook that fails must not hold opencode up.
    }}
  }};
  process.once("exit", () => {{
    for (const sessionID of [...started.keys()]) end(sessionID);
  }});
  return {{{config}
    "experimental.chat.system.transform": async (input, output) => {{
      const sessionID = input?.sessionID;
      if (typeof sessionID !== "string" || sideRequest(output.system)) return;
      if (!started.has(sessionID)) started.set(sessionID, sessionStart(directory, sessionID));
      const text = await started.get(sessionID);
      if (text) output.system.push(text);
    }},
    event: async ({{ event }}) => {{
      if (event?.type === "session.deleted") end(event.properties?.info?.id);
    }},
  }};
}};
"""


NPMRC_MARK = "# agent-mem-vault: written by `agent-mem-vault install opencode`"
NPMRC = f"""{NPMRC_MARK}
# opencode installs its plugin SDK into this folder with npm at every start
# until that succeeds, and holds the first model request until it ends
# whenever a plugin is present. Without a registry (offline, air-gapped), npm's
# retries make that wait over a minute at every start. opencode tries again at
# the next start anyway, so one attempt per start loses nothing.
# `agent-mem-vault uninstall opencode` removes this file.
fetch-retries=0
"""
"""npm settings for opencode's config folders (npm reads a folder's ``.npmrc``)."""


def npmrc_change(folder: Path, *, remove: bool) -> FileChange:
    """``<folder>/.npmrc`` as install (or uninstall) leaves it; a file someone
    else wrote is left as it is."""
    path = folder / ".npmrc"
    before = read_text(path)
    if before is not None and NPMRC_MARK not in before:
        return FileChange(path, before, before)
    return FileChange(path, before, None if remove else NPMRC)
