"""``agent-mem-vault runs``, run as a real subprocess."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from agent_mem_vault.atproto import is_valid_tid, validate_record
from agent_mem_vault.vault import Vault
from agent_mem_vault.vault.folder.layout import is_vault
from tests.cli_process import CLI, Proc, cli_env, run_process, succeeded


def runs_env(vault: Path, **settings: str) -> dict[str, str]:
    """The environment of a ``runs`` command on ``vault``: the runs store is the vault's
    own (``.runs/`` inside it), never one the tester's environment names."""
    env = cli_env(vault=vault, **settings)
    env.pop("AGENT_MEM_VAULT_RUNS_STORE", None)
    return env


def runs_cli(*args: str, vault: Path, env: dict[str, str] | None = None) -> Proc:
    """``agent-mem-vault runs ARGS`` on ``vault``, made a vault first: the runs show their
    notes in a vault, which must be one (``init``)."""
    if not is_vault(vault):
        Vault(vault, durable=False).init()
    return run_process([*CLI, "runs", *args], env=runs_env(vault, **(env or {})))


def _cli(*args: str, vault: Path, ok: bool = True) -> Proc:
    proc = runs_cli(*args, vault=vault)
    return succeeded(proc) if ok else proc


def test_runs_start_prints_the_new_runs_tid(tmp_path: Path) -> None:
    out = _cli("start", "bot", vault=tmp_path).stdout.strip()
    assert is_valid_tid(out)
    assert (tmp_path / ".runs" / "runs.sqlite3").exists()


def test_runs_export_prints_the_records_as_json_lines(tmp_path: Path) -> None:
    first = _cli("start", "bot", "--lease", "0", vault=tmp_path).stdout.strip()
    second = _cli("start", "bot", "--lease", "0", vault=tmp_path).stdout.strip()
    third = _cli("start", "bot", vault=tmp_path).stdout.strip()
    lines = _cli("export", "bot", vault=tmp_path).stdout.splitlines()
    records = [json.loads(line) for line in lines]
    assert [(r["fromRun"], r["toRun"]) for r in records] == [(first, second), (second, third)]
    for record in records:
        validate_record(record, rkey=record["toRun"])


def test_each_handoff_record_is_also_a_note_under_the_agent_in_the_vault(tmp_path: Path) -> None:
    first = _cli("start", "bot", "--lease", "0", vault=tmp_path).stdout.strip()
    second = _cli("start", "bot", vault=tmp_path).stdout.strip()
    note = tmp_path / "agents" / "bot" / "runs" / f"{second}.md"
    text = note.read_text(encoding="utf-8")
    assert text.startswith("---\ntype: run-handoff\n")
    assert first in text and second in text
    # A note lost (deleted by hand, or a crash before it was written) comes back.
    note.unlink()
    _cli("handoffs", "bot", vault=tmp_path)
    assert note.read_text(encoding="utf-8") == text


def test_runs_status_list_and_handoffs_show_the_takeover(tmp_path: Path) -> None:
    first = _cli("start", "bot", "--lease", "60", vault=tmp_path).stdout.strip()
    second = _cli("start", "bot", "--lease", "60", vault=tmp_path).stdout.strip()
    [status] = json.loads(_cli("status", "--json", vault=tmp_path).stdout)
    assert status["current"] == second
    assert status["alive"] is True
    assert status["pending"] == [first]
    listed = json.loads(_cli("list", "bot", "--json", vault=tmp_path).stdout)
    assert [(r["run"], r["state"], r["takenOverBy"]) for r in listed] == [
        (first, "taken_over", second),
        (second, "current", None),
    ]
    assert json.loads(_cli("handoffs", "bot", "--json", vault=tmp_path).stdout) == []
    text = _cli("status", "bot", vault=tmp_path).stdout
    assert f"awaiting handoff from {first}" in text


def test_runs_store_option_puts_runs_in_another_file(tmp_path: Path) -> None:
    store = tmp_path / "elsewhere" / "runs.db"
    _cli("start", "bot", "--store", str(store), vault=tmp_path / "vault")
    assert store.exists()
    assert not (tmp_path / "vault" / ".runs" / "runs.sqlite3").exists()


def test_runs_start_with_a_generator_records_it(tmp_path: Path) -> None:
    args = ["--generator-name", "my-agent", "--generator-version", "2.0", "--lease", "0"]
    _cli("start", "bot", *args, vault=tmp_path)
    _cli("start", "bot", vault=tmp_path)
    [record] = [json.loads(x) for x in _cli("export", "bot", vault=tmp_path).stdout.splitlines()]
    assert record["generator"] == {"name": "my-agent", "version": "2.0"}


@pytest.mark.parametrize("agent", ["a/b", "white space", ".."])
def test_runs_start_with_a_bad_agent_name_exits_2_and_stores_nothing(
    tmp_path: Path, agent: str
) -> None:
    proc = _cli("start", agent, vault=tmp_path, ok=False)
    assert proc.returncode == 2
    assert "agent" in proc.stderr
    assert json.loads(_cli("status", "--json", vault=tmp_path).stdout) == []


def test_runs_help_lists_every_command(tmp_path: Path) -> None:
    text = _cli("--help", vault=tmp_path).stdout
    listed = {line.split()[0] for line in text.split("Commands:")[1].splitlines() if line.strip()}
    assert listed == {"start", "stop", "status", "list", "handoffs", "export", "publish"}


def test_runs_errors_with_json_are_json_on_stderr_with_the_exit_status(tmp_path: Path) -> None:
    proc = _cli("list", "a/b", "--json", vault=tmp_path, ok=False)
    assert proc.returncode == 2
    assert proc.stdout == ""
    error = json.loads(proc.stderr)["error"]
    assert error["code"] == "invalid_agent"  # the same code as the vault gives
    assert error["details"]["field"] == "agent"


def test_usage_errors_with_json_are_json_too(tmp_path: Path) -> None:
    proc = _cli("status", "--json", "--no-such-option", vault=tmp_path, ok=False)
    assert proc.returncode == 2
    error = json.loads(proc.stderr)["error"]
    assert error["code"] == "usage"
    assert "--no-such-option" in error["message"]


def test_runs_start_with_a_non_finite_lease_exits_2_naming_the_lease(tmp_path: Path) -> None:
    proc = _cli("start", "bot", "--lease", "inf", vault=tmp_path, ok=False)
    assert proc.returncode == 2
    assert "lease" in proc.stderr


# -- the entry point (cli/main.py) ---------------------------------------------------------

HEAVY = ("mcp", "starlette", "psycopg", "psycopg_pool", "openai", "httpx", "libipld", "uvicorn")


@pytest.mark.parametrize("argv", [["--help"], ["runs", "--help"], ["db", "--help"]])
def test_cli_help_imports_no_heavy_dependency(argv: list[str]) -> None:
    code = (
        "import sys\n"
        "from agent_mem_vault.cli.main import main\n"
        f"main({argv!r})\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}))\n"
    )
    proc = run_process([sys.executable, "-c", code])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "[]"


def test_runs_on_a_store_that_is_not_a_database_exits_7_without_a_traceback(
    tmp_path: Path,
) -> None:
    store = tmp_path / "runs.db"
    store.write_text("not a database\n" * 100)
    proc = _cli("start", "bot", "--store", str(store), vault=tmp_path, ok=False)
    assert proc.returncode == 7
    assert "store_unreadable" in proc.stderr
    assert "Traceback" not in proc.stderr
