"""A folder becomes a vault only on purpose: ``init``, or the first write to the default vault.

Every command runs as a real subprocess against folders on ``tmp_path`` with a
HOME of its own (so the default vault, ``~/agent-mem-vault``, is a folder the
test owns). A command refused on a folder that is not a vault leaves that folder
byte for byte as it was.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from agent_mem_vault.cli.options import DEFAULT_VAULT as CLI_DEFAULT_VAULT
from agent_mem_vault.vault import Vault
from agent_mem_vault.vault.folder.layout import DEFAULT_VAULT, is_vault
from tests.cli_process import CLI, Proc, cli_env, run_process

NS = "project/harbor-api"
TID = "3l6qyvzp7ns2c"

Run = Callable[..., Proc]


def tree(root: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and folder (None) under ``root``, dot-folders included."""
    return {
        str(p.relative_to(root)): None if p.is_dir() else p.read_bytes()
        for p in sorted(root.rglob("*"))
    }


@pytest.fixture
def run(home: Path, tmp_path: Path) -> Run:
    """The CLI with HOME set to ``home`` and no AGENT_MEM_VAULT (the default vault is
    ``home/agent-mem-vault``); runs in ``tmp_path/work``."""
    work = tmp_path / "work"
    work.mkdir()

    def run_cli(*args: str, stdin: str = "", env: dict[str, str] | None = None) -> Proc:
        environ = cli_env(home, keep_settings=False, AGENT_MEM_VAULT_KEEPER="off", **(env or {}))
        return run_process([*CLI, *args], env=environ, cwd=work, input=stdin)

    return run_cli


# Commands that only read: on a folder that is not a vault each exits 3 with
# vault_not_found and the fix, and writes nothing there.
READ_ONLY = [
    ("handoffs",),
    ("handoffs", "--status", "all", "--json"),
    ("show", TID),
    ("peek", "--agent", "codex", "-n", NS),
    ("memory", "search", "backfill"),
    ("brief", "-n", NS),
    ("doctor",),
    ("keeper",),
    ("runs", "status"),
    ("runs", "list", "bot"),
    ("runs", "handoffs", "bot"),
    ("runs", "export", "bot"),
]
# Commands that write: on an explicit folder that is not a vault (nor the default
# vault) they are refused the same way; the folder is meant to be made with init.
WRITES = [
    ("create", "--to", "codex", "-s", "s", "-c", "c", "-n", NS),
    ("memory", "save", "-n", NS, "-t", "t", "-c", "c"),
    ("read", "--agent", "codex", "-n", NS),
    ("ack", TID),
    ("reopen", TID),
    ("reindex",),
    ("keeper", "--start"),
    ("runs", "start", "bot"),
    ("runs", "stop", "bot", TID),
]


def _refused(proc: Proc, root: Path) -> None:
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    if proc.stderr.startswith("{"):  # --json
        error = json.loads(proc.stderr)["error"]
        assert error["code"] == "vault_not_found"
        message = error["message"]
    else:
        assert proc.stderr.startswith("error: ") and "[vault_not_found]" in proc.stderr
        message = proc.stderr
    assert f"agent-mem-vault init --vault {root}" in message, message


@pytest.mark.parametrize("args", READ_ONLY + WRITES, ids=" ".join)
def test_a_command_on_a_folder_that_is_not_a_vault_changes_nothing_and_says_how_to_make_one(
    run: Run, tmp_path: Path, args: tuple[str, ...]
) -> None:
    folder = tmp_path / "notes"
    (folder / "project").mkdir(parents=True)
    (folder / "project" / "todo.md").write_text("# my own notes\n")
    (folder / ".obsidian").mkdir()
    before = tree(folder)
    proc = run(*args, "--vault", str(folder))
    _refused(proc, folder)
    assert tree(folder) == before
    assert not is_vault(folder)


@pytest.mark.parametrize("args", READ_ONLY + WRITES, ids=" ".join)
def test_a_command_on_a_vault_path_that_does_not_exist_creates_nothing(
    run: Run, tmp_path: Path, args: tuple[str, ...]
) -> None:
    before = tree(tmp_path)
    proc = run(*args, "--vault", str(tmp_path / "typo"))
    _refused(proc, tmp_path / "typo")
    assert "no vault at" in proc.stderr
    assert tree(tmp_path) == before


@pytest.mark.parametrize("args", READ_ONLY, ids=" ".join)
def test_a_read_of_the_default_vault_before_it_exists_does_not_make_it(
    run: Run, home: Path, args: tuple[str, ...]
) -> None:
    proc = run(*args)
    _refused(proc, home / "agent-mem-vault")
    assert list(home.iterdir()) == []


def test_json_errors_carry_the_code_on_stderr(run: Run, tmp_path: Path) -> None:
    proc = run("memory", "search", "x", "--json", "--vault", str(tmp_path))
    assert proc.returncode == 3
    assert json.loads(proc.stderr)["error"]["code"] == "vault_not_found"
    assert proc.stdout == ""


def test_the_first_write_to_the_default_vault_makes_it(run: Run, home: Path) -> None:
    created = run("create", "--to", "codex", "-s", "s", "-c", "c", "-n", NS)
    assert created.returncode == 0, created.stderr
    vault = home / "agent-mem-vault"
    assert is_vault(vault)
    assert (vault / "_dashboards" / "memory.base").is_file()
    listed = run("handoffs", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [h["id"] for h in json.loads(listed.stdout)["handoffs"]] == [created.stdout.strip()]


def test_the_default_vault_named_explicitly_is_still_the_default_vault(
    run: Run, home: Path
) -> None:
    proc = run("memory", "save", "-n", NS, "-t", "t", "-c", "c", "--vault", "~/agent-mem-vault")
    assert proc.returncode == 0, proc.stderr
    assert is_vault(home / "agent-mem-vault")


def test_init_makes_any_folder_a_vault_and_reads_then_work(run: Run, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "mine.md").write_text("kept\n")
    assert run("init", "--vault", str(folder)).returncode == 0
    assert is_vault(folder) and (folder / "mine.md").read_text() == "kept\n"
    proc = run("memory", "search", "backfill", "--vault", str(folder))
    assert proc.returncode == 0, proc.stderr
    assert "No memories match." in proc.stdout


def test_a_vault_whose_index_folder_was_deleted_is_still_a_vault(run: Run, tmp_path: Path) -> None:
    """The index folder is derived and safe to delete (a synced vault often leaves it
    out): the dashboard still marks the folder as a vault."""
    folder = tmp_path / "v"
    vault = Vault(folder, durable=False)
    vault.init()
    vault.create_handoff(to="codex", summary="s", context="c", namespace=NS, from_="cc")
    vault.close()
    for path in sorted((folder / ".agent-mem-vault").rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    (folder / ".agent-mem-vault").rmdir()
    proc = run("handoffs", "--json", "--vault", str(folder))
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)["handoffs"]) == 1


def test_doctor_reports_a_missing_dashboard_and_does_not_write_it(run: Run, tmp_path: Path) -> None:
    folder = tmp_path / "v"
    Vault(folder, durable=False).init()
    (folder / "_dashboards" / "memory.base").unlink()
    proc = run("doctor", "--vault", str(folder))
    assert proc.returncode == 7, proc.stderr
    assert "_dashboards/memory.base is missing" in proc.stdout
    assert not (folder / "_dashboards" / "memory.base").exists()


def test_the_session_hook_on_a_folder_that_is_not_a_vault_says_so_and_writes_nothing(
    run: Run, tmp_path: Path
) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    before = tree(folder)
    proc = run(
        "hook", "session-start", "--agent", "codex", "--namespace", NS, "--vault", str(folder)
    )
    assert proc.returncode == 0  # a hook never blocks a session
    assert "[vault_not_found]" in proc.stdout and "agent-mem-vault init" in proc.stdout
    assert tree(folder) == before


def test_the_cli_and_the_vault_name_the_same_default_vault() -> None:
    assert CLI_DEFAULT_VAULT == DEFAULT_VAULT
