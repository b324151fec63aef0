"""One word for one thing: what the CLI says agrees with itself and with the numbers."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from agent_mem_vault.cli.demo import support
from agent_mem_vault.cli.serve import serve
from agent_mem_vault.core.words import counted
from tests.cli_process import CLI, Proc, cli_env, run_process

NS = "project/harbor-api"

Run = Callable[..., Proc]


@pytest.fixture
def run(tmp_path: Path) -> Run:
    """The CLI on the vault ``tmp_path/vault`` (made with init), HOME at ``tmp_path/home``."""
    (tmp_path / "home").mkdir()
    env = cli_env(
        tmp_path / "home",
        tmp_path / "vault",
        keep_settings=False,
        AGENT_MEM_VAULT_EMBEDDINGS="off",
        AGENT_MEM_VAULT_KEEPER="off",
    )

    def run_cli(*args: str, stdin: str = "", extra: dict[str, str] | None = None) -> Proc:
        proc = run_process([*CLI, *args], input=stdin, env={**env, **(extra or {})}, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        return proc

    run_cli("init")
    return run_cli


def _one_handoff_and_one_memory(run: Run) -> str:
    handoff = run("create", "--from", "cc", "--to", "codex", "-n", NS, "-s", "Batch", "-c", "c")
    run("memory", "save", "-n", NS, "-k", "decision", "-t", "Batches of 1000", "-c", "Decided.")
    return handoff.stdout.strip()


def test_counted_takes_the_singular_for_exactly_one() -> None:
    assert counted(1, "handoff") == "1 handoff"
    assert counted(0, "handoff") == "0 handoffs"
    assert counted(1, "memory") == "1 memory"
    assert counted(3, "memory") == "3 memories"
    assert counted(1, "broken note") == "1 broken note"
    assert counted(2, "broken note") == "2 broken notes"


def test_a_count_of_one_reads_one_handoff_not_one_handoffs(run: Run) -> None:
    _one_handoff_and_one_memory(run)
    said = "\n".join(
        [
            run("init").stdout,
            run("reindex").stdout,
            run("doctor").stdout,
            run("runs", "start", "bot").stdout,
            run("runs", "status").stdout,
        ]
    )
    assert "(1 handoff, 1 memory)" in said
    assert "Indexed 1 handoff and 1 memory; 0 broken notes." in said
    assert "1 handoff (1 pending), 1 memory." in said
    assert "current" in said and "1 run, 0 handoffs" in said
    assert not re.search(r"\b1 (handoffs|memories|runs|notes|problems|vectors|questions)\b", said)
    assert "(s)" not in said


def test_the_briefs_heading_appears_once(run: Run) -> None:
    _one_handoff_and_one_memory(run)
    text = run("brief", "-n", NS).stdout
    headings = [line for line in text.splitlines() if line.startswith("# ")]
    assert headings == [f"# Project brief: {NS}"]
    assert "What an agent should know" in text  # the note itself is still there


def test_a_heading_written_by_hand_in_the_brief_note_is_kept(run: Run, tmp_path: Path) -> None:
    brief = tmp_path / "vault" / "project" / "harbor-api" / "_brief.md"
    brief.parent.mkdir(parents=True)
    brief.write_text("# Orders service\n\nDeploys go through CI only.\n")
    text = run("brief", "-n", NS).stdout
    assert text.startswith(f"# Project brief: {NS}\n\n# Orders service\n")


def test_the_session_hook_lists_pending_handoffs_once(run: Run, tmp_path: Path) -> None:
    handoff = _one_handoff_and_one_memory(run)
    other = run("create", "--from", "cc", "--to", "gemini", "-n", NS, "-s", "Not yours", "-c", "c")
    text = run("hook", "session-start", "--agent", "codex", "--namespace", NS, stdin="{}").stdout
    assert text.count(handoff) == 1
    assert text.count("Pending handoffs") == 1
    assert "## Pending handoffs for codex" in text
    assert other.stdout.strip() not in text  # another agent's handoff is not codex's to take
    assert text.count(f"# Project brief: {NS}") == 1 and f"# {NS}\n" not in text


def test_top_level_help_names_all_four_clients(run: Run) -> None:
    text = " ".join(run("--help").stdout.split())
    for client in ("Claude Code", "Codex", "Gemini CLI", "opencode"):
        assert client in text, client


def test_serve_http_and_the_demo_default_to_different_ports(run: Run) -> None:
    def default_port(command: object) -> object:
        return next(p.default for p in command.params if p.name == "port")  # type: ignore[attr-defined]

    assert default_port(serve) != default_port(support)
    serve_help = " ".join(run("serve", "--help").stdout.split())
    demo_help = " ".join(run("demo", "support", "--help").stdout.split())
    assert f"[default: {default_port(serve)}]" in serve_help
    assert f"[default: {default_port(support)};" in demo_help


def test_runs_publish_help_names_the_pds_variable(run: Run) -> None:
    text = run("runs", "publish", "--help").stdout
    assert "AGENT_MEM_VAULT_PDS)" in text or "AGENT_MEM_VAULT_PDS " in text
    for variable in ("AGENT_MEM_VAULT_PDS_IDENTIFIER", "AGENT_MEM_VAULT_PDS_PASSWORD"):
        assert variable in text


def test_doctor_says_search_is_full_text_while_the_model_is_absent(
    run: Run, tmp_path: Path
) -> None:
    absent = {"AGENT_MEM_VAULT_EMBEDDINGS": "auto", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    [line] = [
        line
        for line in run("doctor", extra=absent).stdout.splitlines()
        if line.startswith("search")
    ]
    assert line.startswith("search: full-text ("), line
    assert "hybrid," not in line
    status = json.loads(run("doctor", "--json", extra=absent).stdout)["search"]
    assert status["mode"] == "fts"
    found = json.loads(run("memory", "search", "backfill", "--json", extra=absent).stdout)
    assert found["mode"] == status["mode"]  # what doctor says is what a search does
