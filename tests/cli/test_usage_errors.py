"""Every usage error is one line, ``error: … [usage]``, exit 2, and changes nothing.

Click's own errors (an unknown command or option, a bad value) included: no
usage block, a "did you mean" wherever a close name exists, and the help to
read. ``--vault`` before the command works as the help says; an empty vault,
given or from the environment, is refused rather than read as the current folder.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_process import CLI, Proc, cli_env, run_process

NS = "project/harbor-api"


def run(*args: str, cwd: Path, vault: str | None = None, env: dict[str, str] | None = None) -> Proc:
    base = cli_env(cwd, vault, keep_settings=False, AGENT_MEM_VAULT_WARM="0")
    return run_process([*CLI, *args], cwd=cwd, env={**base, **(env or {})}, timeout=60)


def one_usage_line(proc: Proc) -> str:
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1, proc.stderr
    line = proc.stderr.rstrip("\n")
    assert line.startswith("error: ") and line.endswith(" [usage]"), line
    assert "Usage:" not in line and "Try '" not in line
    return line


@pytest.mark.parametrize(
    ("args", "suggested"),
    [
        (["craete"], "Did you mean 'create'?"),
        (["handoff"], "Did you mean 'handoffs'?"),
        (["memory", "serch", "x"], "Did you mean 'search'?"),
        (["runs", "strat", "bot"], "'start'"),
        (["hook", "session-strat"], "'session-start'"),
        (["handoffs", "--stauts", "pending"], "'--status'"),
        (["install", "claud-code"], "Did you mean 'claude-code'?"),
    ],
)
def test_a_mistyped_command_option_or_choice_is_one_line_with_did_you_mean(
    tmp_path: Path, args: list[str], suggested: str
) -> None:
    line = one_usage_line(run(*args, cwd=tmp_path, vault=str(tmp_path / "v")))
    assert "Did you mean" in line and suggested in line, line
    assert "--help'" in line  # the help to read


def test_a_vault_path_naming_a_file_is_one_usage_line(tmp_path: Path) -> None:
    file = tmp_path / "notes.txt"
    file.write_text("x")
    line = one_usage_line(run("handoffs", "--vault", str(file), cwd=tmp_path))
    assert "is a file" in line


def test_usage_errors_with_json_have_the_usage_code(tmp_path: Path) -> None:
    proc = run("handoffs", "--json", "--stauts", "x", cwd=tmp_path, vault=str(tmp_path / "v"))
    assert proc.returncode == 2
    error = json.loads(proc.stderr)["error"]
    assert error["code"] == "usage" and "'--status'" in error["message"]


def test_vault_before_the_command_works_as_the_help_says(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    assert run("--vault", str(vault), "init", cwd=tmp_path).returncode == 0
    made = run(
        "--vault", str(vault), "create", "--to", "codex", "-n", NS, "-s", "S", "-c", "C",
        cwd=tmp_path, vault=str(tmp_path / "elsewhere"),
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    listed = run("--vault", str(vault), "handoffs", "--json", cwd=tmp_path)
    assert [h["summary"] for h in json.loads(listed.stdout)["handoffs"]] == ["S"]
    assert not (tmp_path / "elsewhere").exists()
    # The command's own --vault wins over the one before it.
    other = tmp_path / "other"
    run("init", "--vault", str(other), cwd=tmp_path)
    own = run("--vault", str(vault), "handoffs", "--vault", str(other), "--json", cwd=tmp_path)
    assert json.loads(own.stdout)["handoffs"] == []


@pytest.mark.parametrize("args", [["init", "--vault", ""], ["--vault", "", "init"]])
def test_an_empty_vault_option_is_refused_and_the_current_folder_stays_as_it_was(
    tmp_path: Path, args: list[str]
) -> None:
    work = tmp_path / "repo"
    work.mkdir()
    line = one_usage_line(run(*args, cwd=work))
    assert "--vault" in line and "is empty" in line
    assert list(work.iterdir()) == []


@pytest.mark.parametrize("command", [["init"], ["handoffs"], ["install", "codex"]])
def test_an_empty_agent_mem_vault_variable_is_refused(tmp_path: Path, command: list[str]) -> None:
    work = tmp_path / "repo"
    work.mkdir()
    line = one_usage_line(run(*command, cwd=work, vault=""))
    assert "AGENT_MEM_VAULT is set but empty" in line
    assert list(work.iterdir()) == [] and not (tmp_path / "agent-mem-vault").exists()
