"""The server as Claude Code and Codex run it: a real subprocess speaking stdio."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from agent_mem_vault.mcp import ERROR_META_KEY
from agent_mem_vault.vault import Vault
from mcp import Client, StdioServerParameters
from tests.cli_process import CLI, cli_env, run_process
from tests.mcp_wire import INIT, SERVE, message

from .conftest import NS, WARM_DIR, serve_params

SEED_CONTEXT = (
    "The backfill in migrations/0007 needs batching. Start with 1000 rows and measure lock time."
)


def text_of(result: Any) -> str:
    return "".join(block.text for block in result.content)


@pytest.mark.slow
async def test_the_seeds_typical_exchange_between_two_server_processes(vault_path: Path) -> None:
    claude = Client(serve_params(vault_path, "claude-code"))
    codex = Client(serve_params(vault_path, "codex"))
    async with claude, codex:
        # Claude Code finishes for the day.
        first = await claude.call_tool(
            "create_handoff",
            {
                "to": "codex",
                "summary": "Batch the orders backfill",
                "context": SEED_CONTEXT,
                "namespace": NS,
            },
        )
        assert not first.is_error, text_of(first)
        assert first.structured_content["handoff"]["from"] == "claude-code"
        # The plan changes before anyone reads it: a new handoff replaces it.
        second = await claude.call_tool(
            "create_handoff",
            {
                "to": "codex",
                "summary": "Batch the orders backfill in 500-row batches",
                "context": "1000 rows held the lock too long on staging. Use 500.",
                "namespace": NS,
                "supersedes": [first.structured_content["handoff"]["id"]],
            },
        )
        assert not second.is_error, text_of(second)
        # Next morning, Codex starts a session and checks for handoffs.
        pending = await codex.call_tool(
            "list_handoffs", {"namespace": NS, "status": "pending", "agent": "codex"}
        )
        read = await codex.call_tool("read_handoff", {"agent": "codex", "namespace": NS})
        after = await codex.call_tool("peek_handoff", {"agent": "codex", "namespace": NS})

    new_id = second.structured_content["handoff"]["id"]
    assert [h["id"] for h in pending.structured_content["handoffs"]] == [new_id]
    created_at = read.structured_content["handoff"]["created_at"]
    assert text_of(read) == (
        f"Handoff {new_id} from claude-code to codex, {created_at}\n\n"
        "## Summary\nBatch the orders backfill in 500-row batches\n\n"
        "## Full Context\n1000 rows held the lock too long on staging. Use 500."
    )
    assert read.structured_content["handoff"]["read"] is True
    assert after.structured_content["handoff"] is None
    old = Vault(vault_path).get_handoff(first.structured_content["handoff"]["id"])
    assert old.status == "read" and old.superseded_by == new_id


@pytest.mark.slow
async def test_four_servers_started_together_each_writing_100_handoffs_store_all_400(
    vault_path: Path,
) -> None:
    failures: list[str] = []
    created: list[str] = []

    async def writer(n: int) -> None:
        async with Client(serve_params(vault_path, f"agent-{n}")) as client:
            for i in range(100):
                result = await client.call_tool(
                    "create_handoff",
                    {"to": "codex", "summary": f"w{n} #{i}", "context": "x", "namespace": NS},
                )
                if result.is_error:
                    failures.append(text_of(result))
                else:
                    created.append(result.structured_content["handoff"]["id"])

    async with anyio.create_task_group() as group:
        for n in range(4):
            group.start_soon(writer, n)

    assert failures == []
    assert len(set(created)) == 400
    stored = Vault(vault_path).list_handoffs(namespace=NS, status="all", limit=1000)
    assert {h.id for h in stored} == set(created)
    notes = await anyio.to_thread.run_sync(lambda: list(vault_path.rglob("*.md")))
    assert len([p for p in notes if p.stem in set(created)]) == 400


def test_serve_rejects_a_bad_agent_name_with_the_cli_message(vault_path: Path) -> None:
    env = {"AGENT_MEM_VAULT": str(vault_path), "PATH": "/usr/bin:/bin", **WARM_DIR}
    proc = run_process([*CLI, "serve", "--agent", "bad name"], env=env, timeout=60)
    assert proc.returncode == 2
    assert "--agent 'bad name' is not a valid agent name" in proc.stderr


@pytest.mark.slow
async def test_serve_makes_the_default_vault_on_first_start(home: Path) -> None:
    params = StdioServerParameters(command=SERVE[0], args=list(SERVE[1:]), env=cli_env(home))
    async with Client(params) as client:
        result = await client.call_tool("list_handoffs", {"namespace": NS})
    assert not result.is_error, text_of(result)
    assert result.structured_content["count"] == 0
    assert await anyio.Path(home / "agent-mem-vault" / "_dashboards" / "memory.base").is_file()


INITIALIZE = message(1, "initialize", INIT).decode()


@pytest.mark.parametrize("warm", ["1", "0"], ids=["warm process", "no warm process"])
@pytest.mark.parametrize("exists", [False, True], ids=["missing", "a folder, not a vault"])
def test_serve_refuses_a_vault_that_is_not_one_with_one_line_the_client_shows(
    tmp_path: Path, warm: str, exists: bool
) -> None:
    """A typo in .mcp.json: the server exits before it answers, with the error on
    stderr (which the client shows), instead of sending handoffs nobody reads."""
    typo = tmp_path / "vaultt"
    if exists:
        typo.mkdir()
        (typo / "notes.md").write_text("mine\n")
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    env = {**os.environ, "AGENT_MEM_VAULT_WARM": warm}
    proc = run_process([*SERVE, "--vault", typo], input=INITIALIZE, env=env, timeout=60)
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout == ""  # no answer to initialize: the client reports the failed start
    [line] = proc.stderr.splitlines()
    assert line.startswith("error: ") and line.endswith("[vault_not_found]"), line
    assert f"agent-mem-vault init --vault {typo}" in line
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before
    assert not exists or (typo / "notes.md").read_text() == "mine\n"


@pytest.mark.slow
async def test_a_server_started_in_a_repository_defaults_to_its_namespace(
    tmp_path: Path, vault_path: Path
) -> None:
    repo = tmp_path / "harbor-api"
    await anyio.Path(repo / ".git").mkdir(parents=True)
    async with Client(serve_params(vault_path, "claude-code", cwd=repo)) as client:
        created = await client.call_tool(
            "create_handoff", {"to": "codex", "summary": "s", "context": "c"}
        )
    assert created.structured_content["handoff"]["namespace"] == "project/harbor-api"


def test_serve_rejects_an_invalid_namespace_at_start(vault_path: Path) -> None:
    env = {"AGENT_MEM_VAULT": str(vault_path), "PATH": "/usr/bin:/bin", **WARM_DIR}
    proc = run_process([*SERVE, "--namespace", "../etc"], env=env, timeout=60)
    assert proc.returncode == 2
    assert "--namespace '../etc' may not contain '.' or '..' segments" in proc.stderr
    assert "[invalid_namespace]" in proc.stderr


@pytest.mark.slow
async def test_tool_schemas_say_unknown_arguments_are_refused_over_stdio(vault_path: Path) -> None:
    async with Client(serve_params(vault_path, "claude-code")) as client:
        tools = (await client.list_tools()).tools
        # A schema that says so is honoured: a valid call still goes through.
        created = await client.call_tool(
            "create_handoff", {"to": "codex", "summary": "s", "context": "c", "namespace": NS}
        )
    assert {tool.name for tool in tools} >= {"create_handoff", "read_handoff", "search_memory"}
    for tool in tools:
        assert tool.input_schema["type"] == "object", tool.name
        assert tool.input_schema["additionalProperties"] is False, tool.name
    assert not created.is_error


@pytest.mark.slow
async def test_bad_tool_arguments_get_one_actionable_line_over_stdio(vault_path: Path) -> None:
    async with Client(serve_params(vault_path, "claude-code")) as client:
        unknown = await client.call_tool(
            "create_handoff",
            {"to": "codex", "summary": "s", "context": "c", "namespace": NS, "tags": ["x"]},
        )
        missing = await client.call_tool("create_handoff", {"to": "codex", "namespace": NS})
        listed = await client.call_tool("list_handoffs", {"namespace": NS, "status": "all"})
    assert unknown.is_error and missing.is_error
    assert text_of(unknown) == (
        "error: create_handoff: tags: unknown argument (this tool takes: to, summary, "
        "context, namespace, supersedes, private) [invalid_arguments]"
    )
    assert text_of(missing) == (
        "error: create_handoff: summary: missing, expected a string; "
        "context: missing, expected a string [invalid_arguments]"
    )
    for result in (unknown, missing):
        assert "\n" not in text_of(result) and "http" not in text_of(result)
        assert result.meta[ERROR_META_KEY]["code"] == "invalid_arguments"
    # Nothing was created by the refused calls.
    assert listed.structured_content["count"] == 0
