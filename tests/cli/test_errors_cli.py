"""Every failure of a command is one line with a code and an exit status, never a traceback.

Run as a real ``agent-mem-vault`` process: what a person at a terminal sees.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.cli_process import BIN, Proc, cli_env, run_process

NS = "project/harbor-api"


def run(*args: str, vault: Path | None = None) -> Proc:
    return run_process([BIN, *args], env=cli_env(vault=vault), timeout=60)


def one_line_error(proc: Proc, status: int, code: str) -> str:
    """The error line of ``proc``, after checking it is the only output and has ``code``."""
    assert proc.returncode == status, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: ") and lines[0].endswith(f"[{code}]"), lines[0]
    return lines[0]


def test_a_vault_inside_proc_is_a_bad_path_not_a_traceback(tmp_path: Path) -> None:
    line = one_line_error(run("init", "--vault", "/proc/agent-mem-vault"), 2, "bad_path")
    assert "/proc/agent-mem-vault" in line


def test_a_vault_below_a_file_is_a_bad_path_naming_the_file_in_the_way(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("a file, not a folder\n")
    proc = run("init", "--vault", str(tmp_path / "notes.txt" / "vault"))
    line = one_line_error(proc, 2, "bad_path")
    assert "a file stands where the path needs a folder" in line
    # Nothing changed: the file in the way is untouched, and nothing was made beside it.
    assert (tmp_path / "notes.txt").read_text() == "a file, not a folder\n"
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_a_vault_where_the_os_forbids_folders_is_permission_denied_exit_5() -> None:
    # sysfs refuses new folders with EPERM, to root as well: a refusal by the
    # operating system that does not depend on who runs the test.
    target = Path("/sys/agent-mem-vault")
    if not Path("/sys/kernel").is_dir():
        pytest.skip("no sysfs mounted at /sys on this machine")
    proc = run("init", "--vault", str(target), "--json")
    assert proc.returncode == 5, proc.stderr
    error = json.loads(proc.stderr)["error"]
    assert error["code"] == "permission_denied"
    assert error["details"] == {"path": str(target), "errno": "EPERM"}


@pytest.mark.skipif(
    hasattr(os, "geteuid") and os.geteuid() == 0,
    reason="root may write in a read-only folder; run as another user to see the refusal",
)
def test_a_vault_whose_folder_may_not_be_written_is_permission_denied(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    assert run("init", vault=vault).returncode == 0
    vault.chmod(0o555)  # the namespace's folder cannot be made
    try:
        proc = run("create", "--to", "codex", "-s", "s", "-c", "c", "-n", NS, vault=vault)
        line = one_line_error(proc, 5, "permission_denied")
        assert str(vault) in line
    finally:
        vault.chmod(0o755)


@pytest.mark.parametrize("command", [["handoffs"], ["memory", "search", "batch"]])
def test_an_offset_beyond_a_64_bit_integer_is_invalid_offset(
    tmp_path: Path, command: list[str]
) -> None:
    vault = tmp_path / "vault"
    assert run("init", vault=vault).returncode == 0
    for offset in (str(2**63), str(2**70)):
        proc = run(*command, "-n", NS, "--offset", offset, vault=vault)
        line = one_line_error(proc, 2, "invalid_offset")
        assert str(2**63 - 1) in line
    largest = run(*command, "-n", NS, "--offset", str(2**63 - 1), vault=vault)
    assert largest.returncode == 0, largest.stderr


@pytest.mark.parametrize(
    "dsn",
    ["postgresql://app:s3cret-pw@[db.internal/agents", "s3cret-pw", "host=db password=s3cret-pw x"],
)
@pytest.mark.parametrize("subcommand", ["status", "upgrade"])
def test_a_malformed_dsn_is_invalid_dsn_and_never_echoes_the_password(
    dsn: str, subcommand: str
) -> None:
    line = one_line_error(run("db", subcommand, "--dsn", dsn), 2, "invalid_dsn")
    assert "postgresql://USER@HOST:5432/DBNAME" in line
    assert "s3cret" not in line


def test_a_100_kb_value_is_quoted_by_its_first_200_characters(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    assert run("init", vault=vault).returncode == 0
    name = "x" * 100_000
    proc = run("create", "--to", name, "-s", "s", "-c", "c", "-n", NS, "--json", vault=vault)
    assert proc.returncode == 2
    error = json.loads(proc.stderr)["error"]
    assert error["code"] == "invalid_agent"
    assert "x" * 200 + "… (100000 characters)" in error["message"]
    assert len(proc.stderr) < 1_000
