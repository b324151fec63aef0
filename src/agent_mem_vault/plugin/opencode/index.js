// agent-mem-vault: the opencode plugin of the agent-mem-vault package
// Runs agent-mem-vault's session hooks in opencode. At each session's first
// model request, `hook session-start` registers the session (its id, this
// process) and prints the project brief, the pending handoffs and any automatic
// handoff from a session that stopped without one: that text goes into this
// session's system prompt, as Claude Code and Codex add a SessionStart hook's
// output. Each session gets its own text, once; opencode's title request gets
// none. When a session is deleted or opencode exits, `hook session-end` marks it
// ended. It is the agent-mem-vault package's (`agent-mem-vault plugin path opencode`).
import { execFile, execFileSync } from "node:child_process";

const HOOK = ["agent-mem-vault", "plugin", "hook", "opencode"];
const END = ["agent-mem-vault", "hook", "session-end", "--agent", "opencode", "--client", "opencode"];
const SIDE_PROMPTS = ["You are a title generator", "Summarize what was done in this conversation"];
const TIMEOUT_MS = 10000;
const MISSING = "agent-mem-vault is not installed (not on PATH), so the vault tools and the session brief are missing: install it with `uv tool install agent-mem-vault` or `pipx install agent-mem-vault`, then start a new session.";
const SERVERS = {"agent-mem-vault": {"type": "local", "command": ["agent-mem-vault", "serve", "--agent", "opencode"], "enabled": true, "timeout": 30000}};

const hookInput = (directory, sessionID, event) =>
  JSON.stringify({
    session_id: sessionID,
    cwd: directory,
    source: "startup",
    hook_event_name: event,
  });

const sessionStart = (directory, sessionID) =>
  new Promise((resolve) => {
    const child = execFile(
      HOOK[0],
      HOOK.slice(1),
      { encoding: "utf8", timeout: TIMEOUT_MS, maxBuffer: 1 << 20 },
      (error, stdout) =>
        resolve(
          error
            ? error.code === "ENOENT" ? MISSING : `agent-mem-vault: the session-start hook failed: ${error.message}`
            : String(stdout).trim(),
        ),
    );
    child.stdin.on("error", () => {});
    child.stdin.end(hookInput(directory, sessionID, "SessionStart"));
  });

const sideRequest = (system) =>
  SIDE_PROMPTS.some((prompt) => String(system[0] ?? "").trimStart().startsWith(prompt));

export const AgentMemVault = async ({ directory }) => {
  const started = new Map(); // session id -> the hook's text (a promise)
  const end = (sessionID) => {
    if (typeof sessionID !== "string" || !started.delete(sessionID)) return;
    try {
      execFileSync(END[0], END.slice(1), {
        input: hookInput(directory, sessionID, "SessionEnd"),
        timeout: TIMEOUT_MS,
        stdio: ["pipe", "ignore", "ignore"],
      });
    } catch {
      // A hook that fails must not hold opencode up.
    }
  };
  process.once("exit", () => {
    for (const sessionID of [...started.keys()]) end(sessionID);
  });
  return {
    config: async (config) => {
      // A server `agent-mem-vault install opencode` registered stays the only one.
      config.mcp ??= {};
      for (const [name, entry] of Object.entries(SERVERS)) config.mcp[name] ??= entry;
    },
    "experimental.chat.system.transform": async (input, output) => {
      const sessionID = input?.sessionID;
      if (typeof sessionID !== "string" || sideRequest(output.system)) return;
      if (!started.has(sessionID)) started.set(sessionID, sessionStart(directory, sessionID));
      const text = await started.get(sessionID);
      if (text) output.system.push(text);
    },
    event: async ({ event }) => {
      if (event?.type === "session.deleted") end(event.properties?.info?.id);
    },
  };
};
