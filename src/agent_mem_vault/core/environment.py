"""Every ``AGENT_MEM_VAULT_*`` environment variable, its default and what it changes.

One list, so that the manual's table (``docs/configuration.md``) and the
table ``agent-mem-vault --help-env`` prints are the same text and cannot
drift: a test compares the two, and another checks that every variable named
in the package's source is listed here. The modules that read a variable keep
reading it themselves; this is where a person finds them all.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["VARIABLES", "Variable", "markdown_table"]


@dataclass(frozen=True)
class Variable:
    name: str
    default: str
    """What applies when the variable is unset, as a person would say it."""
    effect: str
    """What it changes, in one line (Markdown: backticks for names and values)."""
    area: str
    """The part of the product that reads it: vault, sync, search, agents, runs, harness."""


VARIABLES: tuple[Variable, ...] = (
    Variable(
        "AGENT_MEM_VAULT",
        "`~/agent-mem-vault`",
        "The vault folder every command opens when `--vault` is not given.",
        "vault",
    ),
    Variable(
        "AGENT_MEM_VAULT_DEBUG",
        "off",
        "`1`: an unexpected failure prints its whole traceback instead of one line "
        "(`internal_error`); for a bug report.",
        "vault",
    ),
    Variable(
        "AGENT_MEM_VAULT_KEEPER",
        "on",
        "`0`, `off`, `no` or `false`: never ask or start the vault's keeper; "
        "every call checks its namespace by `stat`. `always`: ask it at every check, "
        "not only where that is cheaper than 1,000 `stat` calls. Any other value but "
        "`1`, `on`, `yes` or `true` is an error (`invalid_setting`).",
        "vault",
    ),
    Variable(
        "AGENT_MEM_VAULT_KEEPER_IDLE",
        "`1800`",
        "Seconds the keeper waits for a question before it leaves.",
        "vault",
    ),
    Variable(
        "AGENT_MEM_VAULT_LOCK_TIMEOUT",
        "`5`",
        "Seconds a write waits for another writer's vault lock before it fails "
        "(`lock_timeout`); a number above 0, at most 3600.",
        "vault",
    ),
    Variable(
        "AGENT_MEM_VAULT_RUNTIME_DIR",
        "`$XDG_RUNTIME_DIR/agent-mem-vault-<uid>`, else the temp folder",
        "The private folder where the warm process and the keeper keep their sockets "
        "and the warm process its log.",
        "vault",
    ),
    Variable(
        "AGENT_MEM_VAULT_SYNC_AUTO",
        "on",
        "`0`, `off`, `no` or `false`: no background syncer; a synced vault's writes go out "
        "only with `agent-mem-vault sync` (a read's claim still asks the remote).",
        "sync",
    ),
    Variable(
        "AGENT_MEM_VAULT_SIGN_WAIT",
        "`5`",
        "Seconds signing a commit a synced vault sends may take (its key signs as your git "
        "signs your commits); past it the signing program is killed, and what the route would "
        "send waits here (never sent unsigned) until the key can sign.",
        "sync",
    ),
    Variable(
        "AGENT_MEM_VAULT_SYNC_BUDGET",
        "`2`",
        "Seconds a session start (and `handoffs`, `peek`, the MCP listing) waits for a synced "
        "vault's remote, when the syncer did not fetch moments ago, before it goes on with the "
        "notes on this machine (and says so in one line); a remote that did not answer lately "
        "gets 0.3 s once its back-off has passed.",
        "sync",
    ),
    Variable(
        "AGENT_MEM_VAULT_SYNC_TIMEOUT",
        "`20`",
        "Seconds a read's claim waits for a fetch or a push before it is refused "
        "(`claim_unconfirmed`); `sync`, joining and the background syncer allow at least 300.",
        "sync",
    ),
    Variable(
        "AGENT_MEM_VAULT_SYNC_LAYOUT",
        "`2`",
        "The refs a route is made with on a remote that has none yet: `2`, a log per "
        "machine and a ref per claim; `1`, one log for every machine, for a team with "
        'machines on a release that knows only that one (docs/sync.md, "How the notes '
        'are kept on a remote"). A remote that has either keeps it.',
        "sync",
    ),
    Variable(
        "AGENT_MEM_VAULT_SYNC_IDLE",
        "`600`",
        "Seconds the background syncer stays with nothing to push and no agent of the machine "
        "in use before it leaves; while an agent was in use within that time, it fetches "
        "every 2 s.",
        "sync",
    ),
    Variable(
        "AGENT_MEM_VAULT_EMBEDDINGS",
        "`auto`",
        "Search by meaning: `auto` (the local model when the embeddings extra is "
        "installed), `local`, `openai` (an OpenAI-compatible endpoint) or `off` (words only).",
        "search",
    ),
    Variable(
        "AGENT_MEM_VAULT_EMBEDDING_MODEL_DIR",
        "`$XDG_CACHE_HOME/agent-mem-vault/models/all-MiniLM-L6-v2`",
        "A folder with `model.onnx` (or `onnx/model.onnx`) and `tokenizer.json` to read "
        "the local model from; nothing is downloaded when it is set.",
        "search",
    ),
    Variable(
        "AGENT_MEM_VAULT_EMBEDDING_URL",
        "none",
        "With `AGENT_MEM_VAULT_EMBEDDINGS=openai`: the endpoint's base URL, "
        "e.g. `http://127.0.0.1:11434/v1`.",
        "search",
    ),
    Variable(
        "AGENT_MEM_VAULT_EMBEDDING_MODEL",
        "none",
        "With `AGENT_MEM_VAULT_EMBEDDINGS=openai`: the embedding model's name, e.g. `all-minilm`.",
        "search",
    ),
    Variable(
        "AGENT_MEM_VAULT_EMBEDDING_API_KEY",
        "none",
        "With `AGENT_MEM_VAULT_EMBEDDINGS=openai`: the key sent to the endpoint, if it wants one.",
        "search",
    ),
    Variable(
        "AGENT_MEM_VAULT_EMBEDDING_MIN_SIMILARITY",
        "`0.15`",
        "How close (cosine, -1 to 1) a memory found by meaning alone must be to the question.",
        "search",
    ),
    Variable(
        "AGENT_MEM_VAULT_AGENT",
        "none (required)",
        "`serve --agent`: the server's agent name, the sender of its handoffs "
        "and their default reader.",
        "agents",
    ),
    Variable(
        "AGENT_MEM_VAULT_TOKEN",
        "none",
        "`serve --http --token`: the bearer token clients must send; required when "
        "listening beyond loopback.",
        "agents",
    ),
    Variable(
        "AGENT_MEM_VAULT_WARM",
        "on",
        "`0`, `off`, `no` or `false`: `serve` and the session hook always run in their "
        "own process instead of the warm process.",
        "agents",
    ),
    Variable(
        "AGENT_MEM_VAULT_WARM_IDLE",
        "`1800`",
        "Seconds the warm process waits for a next command before it leaves.",
        "agents",
    ),
    Variable(
        "AGENT_MEM_VAULT_AUTO_HANDOFF",
        "on",
        "`0`, `off`, `no` or `false`: the session-start hook neither registers sessions "
        "nor writes automatic handoffs for sessions that died.",
        "agents",
    ),
    Variable(
        "AGENT_MEM_VAULT_AUTO_HANDOFF_BYTES",
        "`6144`",
        "The most context an automatic handoff carries (at least `1024`); the newest is "
        "kept and a line says what was cut.",
        "agents",
    ),
    Variable(
        "AGENT_MEM_VAULT_CALLER_PID",
        "set by the fast start",
        "Internal: the pid of the command a client spawned, passed to a command the warm "
        "process runs for it, so the session hook finds the client. Never set it by hand.",
        "agents",
    ),
    Variable(
        "AGENT_MEM_VAULT_CODEX",
        "`codex` on `PATH`",
        "The Codex executable `install codex` and `doctor` ask which hooks Codex trusts.",
        "agents",
    ),
    Variable(
        "AGENT_MEM_VAULT_RUNS_STORE",
        "`<vault>/.runs/runs.sqlite3`",
        "`runs --store`: the SQLite file that holds the runs.",
        "runs",
    ),
    Variable(
        "AGENT_MEM_VAULT_PDS",
        "none",
        "`runs publish --pds`: the base URL of the PDS to publish handoff records to.",
        "runs",
    ),
    Variable(
        "AGENT_MEM_VAULT_PDS_IDENTIFIER",
        "none",
        "`runs publish --identifier`: the handle (or DID) to log in to the PDS as.",
        "runs",
    ),
    Variable(
        "AGENT_MEM_VAULT_PDS_PASSWORD",
        "none",
        "`runs publish --password`: an app password for that account.",
        "runs",
    ),
    Variable(
        "AGENT_MEM_VAULT_DSN",
        "none",
        "`db --dsn`: the PostgreSQL connection string, e.g. `postgresql://app@db.internal/agents`.",
        "harness",
    ),
    Variable(
        "AGENT_MEM_VAULT_MODEL",
        "the offline rule-based model",
        "`demo support`: a model name for an OpenAI-compatible endpoint (`OPENAI_BASE_URL`, "
        "`OPENAI_API_KEY`), or a `claude-…` name for Anthropic's API (`ANTHROPIC_API_KEY`).",
        "harness",
    ),
)
"""In the order the manual lists them: by area, then as a person meets them."""


def markdown_table() -> str:
    """The table, as Markdown: what ``--help-env`` prints and the manual holds verbatim."""
    lines = ["| variable | default | what it changes |", "|---|---|---|"]
    for var in VARIABLES:
        lines.append(f"| `{var.name}` | {var.default} | {var.effect} |")
    return "\n".join(lines) + "\n"
