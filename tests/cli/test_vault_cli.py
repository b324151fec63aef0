"""The vault commands, run as a real ``agent-mem-vault`` process."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from tests.cli_process import BIN, Proc, cli_env, run_process, succeeded

NS = "project/harbor-api"
VAULT_COMMANDS = [
    "init",
    "create",
    "read",
    "peek",
    "handoffs",
    "show",
    "ack",
    "reopen",
    "memory",
    "brief",
    "reindex",
    "doctor",
    "keeper",
]


def run(vault: Path | None, *args: str, check: bool = True, input: str | None = None) -> Proc:
    # Outside any repository (the vault's parent folder): a namespace is found from
    # git only where a test makes a repository for it.
    cwd = vault.parent if vault is not None and vault.parent.is_dir() else None
    proc = run_process([BIN, *args], env=cli_env(vault=vault), input=input, timeout=60, cwd=cwd)
    return succeeded(proc) if check else proc


def run_json(vault: Path, *args: str) -> Any:
    return json.loads(run(vault, *args, "--json").stdout)


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    path = tmp_path / "vault"
    run(path, "init")
    return path


def test_the_seeds_typical_exchange_runs_end_to_end_from_the_cli(vault: Path) -> None:
    # Claude Code finishes for the day.
    context = (
        "The backfill in migrations/0007 needs batching. "
        "Start with 1000 rows and measure lock time."
    )
    first = run(
        vault, "create", "--from", "claude-code", "--to", "codex",
        "--summary", "Batch the orders backfill", "--context", context, "--namespace", NS,
    ).stdout.strip()  # fmt: skip
    assert re.fullmatch(r"[2-7a-z]{13}", first)
    # The plan changes before anyone reads it: the author sends one that replaces it.
    second = run(
        vault, "create", "--from", "claude-code", "--to", "codex",
        "--summary", "Batch the orders backfill, 500 rows",
        "--context", context.replace("1000", "500"), "--namespace", NS, "--supersedes", first,
    ).stdout.strip()  # fmt: skip
    pending = run(vault, "handoffs", "--namespace", NS, "--status", "pending").stdout
    assert second in pending and first not in pending
    # Next morning Codex loads the brief and checks for handoffs.
    brief = run(vault, "brief", "--namespace", NS).stdout
    assert second in brief
    out = run(vault, "read", "--agent", "codex", "--namespace", NS).stdout
    heading, _, out = out.partition("\n\n")  # who left it, for whom, when, its id
    assert heading.startswith(f"Handoff {second} from claude-code to codex, 20")
    assert out == (
        "## Summary\nBatch the orders backfill, 500 rows\n\n## Full Context\n"
        + context.replace("1000", "500")
        + "\n"
    )
    # The handoff is now read.
    shown = run_json(vault, "show", second)
    assert shown["read"] is True and shown["read_at"]
    older = run_json(vault, "show", first)
    assert older["status"] == "read" and older["superseded_by"] == second
    empty = run(vault, "read", "--agent", "codex", "--namespace", NS)
    assert empty.stdout == "" and "No pending handoff" in empty.stderr


def test_handoffs_prints_a_readable_table(vault: Path) -> None:
    ids = [
        run(
            vault, "create", "--from", "claude-code", "--to", "codex", "-n", NS, "-s", s, "-c", "c"
        ).stdout.strip()
        for s in ("first summary", "second summary")
    ]
    out = run(vault, "handoffs", "--namespace", NS, "--status", "pending").stdout
    lines = out.splitlines()
    assert re.split(r"\s{2,}", lines[0]) == ["ID", "CREATED", "FROM", "TO", "STATUS", "SUMMARY"]
    assert len(lines) == 3
    cells = re.split(r"\s{2,}", lines[1])
    assert cells[0] == ids[1] and cells[2:] == ["claude-code", "codex", "pending", "second summary"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d", cells[1])
    # Columns line up.
    assert {line.index("claude-code") for line in lines[1:]} == {lines[0].index("FROM")}


def test_handoffs_json_is_for_scripts(vault: Path) -> None:
    run(vault, "create", "--to", "codex", "-n", NS, "-s", "s", "-c", "c")
    page = run_json(vault, "handoffs", "--namespace", NS, "--status", "all")
    data = page["handoffs"]
    assert [h["summary"] for h in data] == ["s"]
    assert set(data[0]) >= {"id", "from", "to", "status", "read", "created_at", "namespace"}
    assert (page["total"], page["more"], page["next_offset"]) == (1, False, None)
    assert run(vault, "handoffs", "-n", NS, "--status", "read").stdout.strip() == (
        f"No read handoffs in {NS}."
    )


def test_peek_ack_and_reopen_from_the_cli(vault: Path) -> None:
    hid = run(vault, "create", "--to", "codex", "-n", NS, "-s", "s", "-c", "c").stdout.strip()
    peeked = run(vault, "peek", "-a", "codex", "-n", NS).stdout
    assert peeked.startswith(f"Handoff {hid} from unknown to codex, ")
    assert "\n\n## Summary\ns" in peeked
    assert run_json(vault, "show", hid)["status"] == "pending"
    assert "is read" in run(vault, "ack", hid).stdout
    assert run_json(vault, "show", hid)["status"] == "read"
    assert "pending again" in run(vault, "reopen", hid).stdout
    assert run_json(vault, "peek", "-a", "codex", "-n", NS)["id"] == hid


def test_context_can_come_from_standard_input(vault: Path) -> None:
    hid = run(
        vault, "create", "--to", "codex", "-n", NS, "-s", "s", "-c", "-", input="long\ncontext\n"
    ).stdout.strip()
    assert run_json(vault, "show", hid)["context"] == "long\ncontext"


def test_memory_save_search_and_brief_from_the_cli(vault: Path) -> None:
    mid = run(
        vault, "memory", "save", "-n", NS, "-k", "decision",
        "-t", "Backfill in batches of 1000", "-c", "Lock time stayed under 50 ms.", "--tag", "db",
    ).stdout.strip()  # fmt: skip
    found = run_json(vault, "memory", "search", "lock time", "-n", NS)
    assert [h["memory"]["id"] for h in found["hits"]] == [mid]
    assert (found["total"], found["more"]) == (1, False)
    assert found["mode"] == "fts"  # the tests run with AGENT_MEM_VAULT_EMBEDDINGS=off
    text = run(vault, "memory", "search", "lock").stdout
    assert "Backfill in batches of 1000" in text
    assert "search mode: fts" in text
    assert "Backfill in batches of 1000" in run(vault, "brief", "-n", NS).stdout


@pytest.mark.parametrize(
    ("args", "status", "code"),
    [
        (["create", "--to", "codex", "-n", "../x", "-s", "s", "-c", "c"], 2, "invalid_namespace"),
        (["create", "--to", "co dex", "-n", NS, "-s", "s", "-c", "c"], 2, "invalid_agent"),
        (["ack", "3kzzzzzzzzzz2"], 3, "handoff_not_found"),
        (["show", "nope"], 2, "invalid_id"),
        (["memory", "search", "!!"], 2, "missing_field"),
    ],
)
def test_errors_give_a_documented_exit_status_and_a_clear_message(
    vault: Path, args: list[str], status: int, code: str
) -> None:
    proc = run(vault, *args, check=False)
    assert proc.returncode == status
    assert f"[{code}]" in proc.stderr and proc.stderr.startswith("error: ")
    as_json = run(vault, *args, "--json", check=False)
    assert json.loads(as_json.stderr)["error"]["code"] == code


def test_reopen_of_a_superseded_handoff_exits_4(vault: Path) -> None:
    first = run(vault, "create", "--to", "codex", "-n", NS, "-s", "s", "-c", "c").stdout.strip()
    run(vault, "create", "--to", "codex", "-n", NS, "-s", "t", "-c", "c", "--supersedes", first)
    proc = run(vault, "reopen", first, check=False)
    assert proc.returncode == 4 and "handoff_superseded" in proc.stderr


def test_a_missing_vault_says_how_to_make_one(tmp_path: Path) -> None:
    proc = run(None, "handoffs", "--vault", str(tmp_path / "none"), check=False)
    assert proc.returncode == 3 and "agent-mem-vault init" in proc.stderr


def test_vault_option_overrides_the_environment(vault: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    run(None, "init", "--vault", str(other))
    run(vault, "create", "--vault", str(other), "--to", "codex", "-n", NS, "-s", "s", "-c", "c")
    assert run_json(vault, "handoffs", "--status", "all")["handoffs"] == []
    assert run_json(vault, "handoffs", "--status", "all", "--vault", str(other))["total"] == 1


def test_doctor_and_reindex(vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A home of its own: `doctor` also judges the agents' settings under HOME.
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home" / ".config"))
    for name in ("CODEX_HOME", "GEMINI_CLI_HOME", "CLAUDE_CONFIG_DIR"):
        monkeypatch.delenv(name, raising=False)
    hid = run(vault, "create", "--to", "codex", "-n", NS, "-s", "s", "-c", "c").stdout.strip()
    assert "No problems found." in run(vault, "doctor").stdout
    assert "Indexed 1 handoff and 0 memories" in run(vault, "reindex").stdout
    note = vault / NS / "handoffs" / f"{hid}.md"
    note.write_text(note.read_text().replace("status: pending", "status: [x"))
    proc = run(vault, "doctor", check=False)
    assert proc.returncode == 7
    assert f"broken: {NS}/handoffs/{hid}.md" in proc.stdout


def test_a_cut_handoff_listing_says_how_many_and_how_to_get_the_next_page(vault: Path) -> None:
    for i in range(5):
        run(vault, "create", "--to", "codex", "-n", NS, "-s", f"s{i}", "-c", "c")
    first = run_json(vault, "handoffs", "--limit", "2")
    assert [h["summary"] for h in first["handoffs"]] == ["s4", "s3"]
    assert (first["total"], first["more"], first["next_offset"]) == (5, True, 2)
    last = run_json(vault, "handoffs", "--limit", "2", "--offset", "4")
    assert [h["summary"] for h in last["handoffs"]] == ["s0"]
    assert (last["more"], last["next_offset"]) == (False, None)
    text = run(vault, "handoffs", "--limit", "2").stdout
    assert text.rstrip().endswith("Showing 1-2 of 5 handoffs; the next page: --offset 2")
    text = run(vault, "handoffs", "--limit", "2", "--offset", "4").stdout
    assert text.rstrip().endswith("Showing 5-5 of 5 handoffs.")
    assert "Showing" not in run(vault, "handoffs", "--limit", "5").stdout
    bad = run(vault, "handoffs", "--offset", "-1", check=False)
    assert bad.returncode == 2 and "--offset" in bad.stderr


def test_a_cut_memory_search_says_how_many_and_how_to_get_the_next_page(vault: Path) -> None:
    for i in range(3):
        run(vault, "memory", "save", "-n", NS, "-t", f"deploy {i}", "-c", "deploy step")
    first = run_json(vault, "memory", "search", "deploy", "--limit", "2")
    assert (len(first["hits"]), first["total"], first["next_offset"]) == (2, 3, 2)
    rest = run_json(vault, "memory", "search", "deploy", "--limit", "2", "--offset", "2")
    seen = {h["memory"]["id"] for h in first["hits"] + rest["hits"]}
    assert len(seen) == 3 and rest["more"] is False
    text = run(vault, "memory", "search", "deploy", "--limit", "2").stdout
    assert text.rstrip().endswith("Showing 1-2 of 3 memories; the next page: --offset 2")


@pytest.mark.parametrize("command", VAULT_COMMANDS)
def test_every_vault_command_has_help_with_vault_and_json(command: str) -> None:
    args = [command, "--help"] if command != "memory" else ["memory", "save", "--help"]
    out = run(None, *args).stdout
    assert "--vault PATH" in out and "--json" in out
    assert "Example" in out


def test_help_lists_the_vault_commands() -> None:
    out = run(None, "--help").stdout
    for command in VAULT_COMMANDS:
        assert re.search(rf"^\s+{command}\s", out, re.MULTILINE), command


@pytest.mark.slow
def test_a_lock_held_longer_than_five_seconds_exits_6_with_what_to_do(vault: Path) -> None:
    import fcntl

    fd = os.open(vault / ".agent-mem-vault" / "lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        proc = run(vault, "create", "--to", "codex", "-n", NS, "-s", "s", "-c", "c", check=False)
    finally:
        os.close(fd)
    assert proc.returncode == 6
    assert "did not come within 5 s" in proc.stderr and "retry" in proc.stderr
    assert "[lock_timeout]" in proc.stderr
    assert run_json(vault, "handoffs", "--status", "all")["total"] == 0


def test_a_vault_path_that_is_a_file_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "file"
    path.write_text("x")
    proc = run(None, "handoffs", "--vault", str(path), check=False)
    assert proc.returncode == 2 and "is a file" in proc.stderr
