"""What a user gets from a plain ``pip install .``: no extras, no test tools.

The rest of the suite runs in the dev environment, whose extras (rich, the
embedding model, OpenTelemetry, ...) can hide an import that a plain install
lacks. ``scripts/test`` builds ``.venv-plain`` with ``pip install .`` and
names its interpreter in ``AMV_PLAIN_PYTHON``; these tests drive the
user-facing path through that environment's own ``agent-mem-vault``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.cli_process import Proc, run_process, succeeded
from tests.mcp_wire import INIT, message
from tests.server.support import ADA, REFUND, running_demo
from tests.warm_process import handed_over_commands, warm_listening

PLAIN_ENV = "AMV_PLAIN_PYTHON"
NS = "project/harbor-api"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def plain_python() -> Path:
    given = os.environ.get(PLAIN_ENV)
    if not given:
        pytest.skip(f"{PLAIN_ENV} is not set: scripts/test builds the plain install and sets it")
    path = Path(given)
    assert path.exists(), f"{PLAIN_ENV}={given} does not exist"
    return path


@pytest.fixture
def amv(plain_python: Path, tmp_path: Path) -> Callable[..., Proc]:
    """``agent-mem-vault`` of the plain install, in a home and runtime folder of its own."""
    cli = plain_python.parent / "agent-mem-vault"
    env = _plain_environment(tmp_path)
    env["PATH"] = f"{cli.parent}{os.pathsep}{env.get('PATH', '')}"  # as once activated

    def run(*args: str, stdin: str = "", cwd: Path | None = None) -> Any:
        return run_process([cli, *args], input=stdin, env=env, cwd=cwd or tmp_path)

    return run


def _plain_environment(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    keep = ("PATH", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")
    env = {name: os.environ[name] for name in keep if name in os.environ}
    env.update(
        HOME=str(home),
        AGENT_MEM_VAULT=str(tmp_path / "vault"),
        AGENT_MEM_VAULT_RUNTIME_DIR=str(tmp_path / "rt"),
        AGENT_MEM_VAULT_WARM_IDLE="30",
    )
    return env


def test_the_plain_install_has_none_of_the_extras(plain_python: Path) -> None:
    probe = (
        "import importlib.util, json; "
        "print(json.dumps({m: importlib.util.find_spec(m) is not None for m in "
        "['agent_mem_vault', 'rich', 'pytest', 'onnxruntime', 'opentelemetry.sdk', "
        "'openai', 'psycopg']}))"
    )
    out = succeeded(run_process([plain_python, "-c", probe]))
    assert json.loads(out.stdout) == {
        "agent_mem_vault": True,
        "rich": False,
        "pytest": False,
        "onnxruntime": False,
        "opentelemetry.sdk": False,
        "openai": False,
        "psycopg": False,
    }


INSTALL_STEP = "python3 -m venv .venv && source .venv/bin/activate && pip install -e . &&"


def readme_first_script(*, activating: Path) -> str:
    """The README's first bash block (install, then the main job), its install step
    replaced by activating the environment whose scripts are in ``activating``."""
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    block = readme.split("```bash\n", 1)[1].split("```", 1)[0]
    assert block.startswith(INSTALL_STEP), "the README's first command changed: update this test"
    return block.replace(INSTALL_STEP, f"source {activating}/activate &&", 1)


def test_the_readme_first_command_runs_in_a_plain_install(
    plain_python: Path, tmp_path: Path
) -> None:
    # scripts/test made the plain environment as that step does (without -e): activate it.
    script = readme_first_script(activating=plain_python.parent)
    env = _plain_environment(tmp_path)
    del env["AGENT_MEM_VAULT"]  # the block chooses its own vault
    out = run_process(["bash", "-c", script], env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "needs batching" in out.stdout
    assert "Traceback" not in out.stderr


def test_the_main_job_runs_in_a_plain_install(amv: Any) -> None:
    assert amv("init").returncode == 0
    created = amv(
        "create", "--from", "claude-code", "--to", "codex", "-n", NS,
        "-s", "Batch the orders backfill",
        "-c", "The backfill in migrations/0007 needs batching.",
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    pending = amv("handoffs", "--namespace", NS, "--status", "pending", "--json")
    assert pending.returncode == 0, pending.stderr
    assert [h["summary"] for h in json.loads(pending.stdout)["handoffs"]] == [
        "Batch the orders backfill"
    ]
    read = amv("read", "--agent", "codex", "-n", NS)
    assert read.returncode == 0, read.stderr
    assert "needs batching" in read.stdout


def _initialize(plain_python: Path, env: dict[str, str]) -> dict[str, Any]:
    cli = plain_python.parent / "agent-mem-vault"
    proc = run_process(
        [cli, "serve", "--agent", "codex"], input=message(1, "initialize", INIT).decode(), env=env
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    answer: dict[str, Any] = json.loads(proc.stdout.splitlines()[0])
    return answer


def test_serve_started_twice_in_a_plain_install_hands_the_second_start_to_the_warm_process(
    plain_python: Path, tmp_path: Path, amv: Any
) -> None:
    assert amv("init").returncode == 0
    env = _plain_environment(tmp_path)
    folder = Path(env["AGENT_MEM_VAULT_RUNTIME_DIR"])
    first = _initialize(plain_python, env)
    assert first["result"]["serverInfo"]["name"] == "agent-mem-vault"
    deadline = time.monotonic() + 60
    while not warm_listening(folder) and time.monotonic() < deadline:
        time.sleep(0.1)
    logs = "\n".join(log.read_text() for log in folder.glob("*.log"))
    assert warm_listening(folder), f"no warm process in the plain install:\n{logs}"
    assert not list(folder.glob("*.failed")), logs

    second = _initialize(plain_python, env)
    assert second["result"]["serverInfo"]["name"] == "agent-mem-vault"
    assert handed_over_commands(folder) == ["serve --agent"]
    doctor = amv("doctor", "--json")
    assert json.loads(doctor.stdout)["fast_start"]["state"] == "running"
    for sock in folder.glob("*.sock"):
        sock.unlink()  # the warm process leaves with its socket


def test_the_session_hook_runs_in_a_plain_install(amv: Any, tmp_path: Path) -> None:
    repo = tmp_path / "harbor-api"
    (repo / ".git").mkdir(parents=True)
    assert amv("init").returncode == 0
    amv("create", "--from", "claude-code", "--to", "codex", "-n", NS, "-s", "Resume", "-c", "x")
    out = amv(
        "hook", "session-start", "--agent", "codex", "--namespace", NS,
        stdin=json.dumps({"cwd": str(repo), "source": "startup"}), cwd=repo,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "Resume" in out.stdout
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize("client", ["claude-code", "codex", "gemini", "opencode"])
def test_install_dry_run_in_a_plain_install(amv: Any, tmp_path: Path, client: str) -> None:
    repo = tmp_path / "harbor-api"
    (repo / ".git").mkdir(parents=True)
    out = amv("install", client, "--dry-run", cwd=repo)
    assert out.returncode == 0, out.stderr
    assert "serve" in out.stdout
    assert not (repo / ".mcp.json").exists() and not (repo / "opencode.json").exists()


def test_demo_support_answers_one_message_in_a_plain_install(
    plain_python: Path, tmp_path: Path
) -> None:
    env: dict[str, str | None] = {
        "AGENT_MEM_VAULT_MODEL": None,
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
        "OPENAI_API_KEY": None,
    }
    cli = plain_python.parent / "agent-mem-vault"
    with running_demo(tmp_path / "desk.db", env=env, cli=cli) as demo:
        r = httpx.post(
            f"{demo.url}/api/desk/threads/case-1/messages",
            json={"text": REFUND},
            headers=ADA,
            timeout=60,
        )
    assert r.status_code == 200, r.text
    assert r.json()["text"]
