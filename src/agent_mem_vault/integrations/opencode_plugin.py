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

The plugin imports only Node's own modules. (opencode still installs its
plugin SDK into each config folder at every start until that succeeds, and
waits for it when any plugin is present: see the notes on a machine without a
registry.)
"""

from __future__ import annotations

import json

__all__ = ["SIDE_PROMPTS", "plugin_source"]

SIDE_PROMPTS = (
    "You are a title generator",
    "Summarize what was done in this conversation",
)
"""How opencode's own side requests (the title and summary agents) begin their
system prompt: requests that are not the session's turn."""


def plugin_source(mark: str, start: list[str], end: list[str], timeout_ms: int) -> str:
    """The plugin's JavaScript, running ``start`` and ``end`` (argument lists), each
    for at most ``timeout_ms``; ``mark`` is its first line (how install knows it)."""
    return f"""{mark}
// Runs agent-mem-vault's session hooks in opencode. At each session's first
// model request, `hook session-start` registers the session (its id, this
// process) and prints the project brief, the pending handoffs and any automatic
// handoff from a session that stopped without one: that text goes into this
// session's system prompt, as Claude Code and Codex add a SessionStart hook's
// output. Each session gets its own text, once; opencode's title request gets
// none. When a session is deleted or opencode exits, `hook session-end` marks it
// ended. Re-run install to update this file; uninstall removes it.
import {{ execFile, execFileSync }} from "node:child_process";

const HOOK = {json.dumps(start)};
const END = {json.dumps(end)};
const SIDE_PROMPTS = {json.dumps(list(SIDE_PROMPTS))};
const TIMEOUT_MS = {timeout_ms};

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
            ? `agent-mem-vault: the session-start hook failed: ${{error.message}}`
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
  return {{
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
