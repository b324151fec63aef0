"""``doctor`` never contradicts itself: any problem it prints, the warm process's
failure included, means no all-clear, a non-zero exit and ``ok: false``."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from tests.cli_process import CLI, Proc, cli_env, run_process


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    runtime = tmp_path / "rt"
    runtime.mkdir(mode=0o700)
    home = tmp_path / "home"
    home.mkdir()
    return cli_env(
        home, tmp_path / "vault", keep_settings=False, AGENT_MEM_VAULT_RUNTIME_DIR=str(runtime)
    )


def doctor(env: dict[str, str], cwd: Path, *args: str) -> Proc:
    return run_process([*CLI, "doctor", *args], env=env, cwd=cwd)


def _record_a_warm_failure(env: dict[str, str], cwd: Path) -> Path:
    """The record a warm process that failed to start leaves, where doctor looks for it."""
    status = json.loads(doctor(env, cwd, "--json").stdout)["fast_start"]
    failed = Path(status["socket"]).with_suffix(".failed")
    failed.write_text(
        json.dumps(
            {
                "at": time.time(),
                "reason": "ModuleNotFoundError: No module named 'mcp'",
                "fix": "reinstall agent-mem-vault in this environment",
            }
        )
    )
    return failed


def test_a_failed_warm_process_is_a_problem_not_an_all_clear(
    env: dict[str, str], tmp_path: Path
) -> None:
    subprocess.run([*CLI, "init"], env=env, check=True, capture_output=True)
    healthy = doctor(env, tmp_path)
    assert healthy.returncode == 0 and "No problems found." in healthy.stdout, healthy.stderr
    failed = _record_a_warm_failure(env, tmp_path)

    text = doctor(env, tmp_path)
    assert "fast start: the warm process failed" in text.stdout
    assert "No problems found." not in text.stdout
    assert text.returncode == 7
    assert text.stderr.strip().endswith("[fast_start_failed]"), text.stderr
    assert str(failed.name) in text.stdout

    data = doctor(env, tmp_path, "--json")
    assert data.returncode == 7
    body = json.loads(data.stdout)
    assert body["ok"] is False and body["fast_start"]["state"] == "failed"

    failed.unlink()  # the fix done, the record removed: all clear again
    assert doctor(env, tmp_path).returncode == 0
