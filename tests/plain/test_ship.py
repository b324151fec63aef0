"""The package a user installs: the wheel and sdist built as a release would build
them, installed the three ways the README gives, each in a home of its own.

The build tool, uv and pipx are the dev extras' (pinned, with their hashes, in
requirements/dev.lock); the package caches the installs fill are kept under
``.cache/ship/`` at the repository's root, which every run reuses.
"""

from __future__ import annotations

import email.parser
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.cli_process import Proc, home_env, run_process
from tests.plain.test_plain_install import readme_first_script

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "ship"
NS = "project/harbor-api"

pytestmark = pytest.mark.slow


def _run(
    args: list[str | Path], *, env: dict[str, str] | None = None, cwd: Path | None = None
) -> Proc:
    """A build or install step: minutes on a cold package cache."""
    return run_process(args, env=env, cwd=cwd, timeout=900)


@pytest.fixture(scope="session")
def tools() -> Path:
    """The folder of this environment's build tool, uv and pipx (dev extras, locked)."""
    bin_dir = Path(sys.executable).parent
    missing = [tool for tool in ("uv", "pipx") if not (bin_dir / tool).exists()]
    if missing or subprocess.run([sys.executable, "-c", "import build"], check=False).returncode:
        pytest.skip(f"the dev extras' build, uv and pipx are not all installed in {bin_dir}")
    return bin_dir


@pytest.fixture(scope="session")
def dists(tools: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The sdist, and the wheel built from it, as ``python -m build`` makes a release."""
    out = tmp_path_factory.mktemp("dist")
    built = _run([tools / "python", "-m", "build", "--outdir", out, ROOT], env=_tool_env())
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (wheel,) = out.glob("*.whl")
    (sdist,) = out.glob("*.tar.gz")
    return {"wheel": wheel, "sdist": sdist}


def _tool_env(home: Path | None = None) -> dict[str, str]:
    """This machine's environment with the package caches under CACHE (and a HOME)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_MEM_VAULT", "AMV_"))}
    env.update(
        PIP_CACHE_DIR=str(CACHE / "pip-cache"),
        UV_CACHE_DIR=str(CACHE / "uv-cache"),
        PYTHONDONTWRITEBYTECODE="1",
    )
    env.pop("VIRTUAL_ENV", None)
    if home is not None:
        env.update(home_env(home), AGENT_MEM_VAULT_WARM="0")
    return env


def _metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        return email.parser.Parser().parsestr(zf.read(name).decode())


def test_the_wheel_carries_complete_metadata(dists: dict[str, Path]) -> None:
    meta = _metadata(dists["wheel"])
    from agent_mem_vault import __version__

    assert meta["Name"] == "agent-mem-vault" and meta["Version"] == __version__
    assert meta["License-Expression"] == "MIT" and "LICENSE" in meta.get_all("License-File", [])
    assert meta["Requires-Python"] == ">=3.11"
    classifiers = meta.get_all("Classifier", [])
    assert "Typing :: Typed" in classifiers
    assert any(c.startswith("Programming Language :: Python :: 3.11") for c in classifiers)
    assert "# agent-mem-vault" in (meta.get_payload() or "")  # the README is the description
    # A plain install carries the vault and the hooks; the OpenAI SDK and psycopg are extras.
    requires = [r.replace("'", '"') for r in meta.get_all("Requires-Dist", [])]
    plain = [r for r in requires if "extra ==" not in r]
    assert not any(r.startswith(("openai", "psycopg")) for r in plain), plain
    assert any(r.startswith("openai") and 'extra == "openai"' in r for r in requires)
    assert any(r.startswith("psycopg") and 'extra == "postgres"' in r for r in requires)
    with zipfile.ZipFile(dists["wheel"]) as zf:
        names = zf.namelist()
    assert "agent_mem_vault/py.typed" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert any(n.startswith("agent_mem_vault/server/console/") for n in names)
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    with zipfile.ZipFile(dists["wheel"]) as zf:
        assert "agent-mem-vault = agent_mem_vault.cli.main:main" in zf.read(entry).decode()


def test_the_sdist_holds_what_a_build_from_it_needs(dists: dict[str, Path]) -> None:
    with tarfile.open(dists["sdist"]) as tf:
        names = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
    for needed in ("pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md"):
        assert needed in names, needed
    assert "src/agent_mem_vault/__init__.py" in names
    assert not any("node_modules" in n for n in names)


@pytest.fixture(scope="session")
def clean_venv(dists: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new virtual environment with nothing but the wheel and what it requires."""
    venv = tmp_path_factory.mktemp("clean") / "venv"
    made = _run([sys.executable, "-m", "venv", venv])
    assert made.returncode == 0, made.stderr
    got = _run([venv / "bin" / "python", "-m", "pip", "install", dists["wheel"]], env=_tool_env())
    assert got.returncode == 0, got.stderr[-3000:]
    return venv / "bin"


def test_version_matches_the_wheel_metadata(clean_venv: Path, dists: dict[str, Path]) -> None:
    shown = _run([clean_venv / "agent-mem-vault", "--version"])
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.split()[-1] == _metadata(dists["wheel"])["Version"]


def test_the_readme_first_block_runs_against_the_wheel_in_a_clean_venv(
    clean_venv: Path, home: Path, tmp_path: Path
) -> None:
    script = readme_first_script(activating=clean_venv)
    out = _run(["bash", "-e", "-c", script], env=_tool_env(home), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "needs batching" in out.stdout and "Traceback" not in out.stderr


def test_a_plain_install_leaves_out_the_openai_sdk_and_psycopg(clean_venv: Path) -> None:
    probe = (
        "import importlib.util, json; print(json.dumps({m: importlib.util.find_spec(m) "
        "is not None for m in ['agent_mem_vault', 'mcp', 'openai', 'psycopg', 'psycopg_pool']}))"
    )
    out = _run([clean_venv / "python", "-c", probe])
    assert json.loads(out.stdout) == {
        "agent_mem_vault": True,
        "mcp": True,
        "openai": False,
        "psycopg": False,
        "psycopg_pool": False,
    }


def test_a_harness_user_without_the_extras_gets_one_clear_error_naming_them(
    clean_venv: Path, tmp_path: Path
) -> None:
    model = _run(
        [
            clean_venv / "python",
            "-c",
            "from agent_mem_vault.harness.openai_model import OpenAIChatModel\n"
            "from agent_mem_vault.core.errors import AgentMemVaultError\n"
            "try:\n    OpenAIChatModel('gpt-4o-mini')\n"
            "except AgentMemVaultError as e:\n    print(e.code, e.message)\n",
        ]
    )
    assert model.returncode == 0, model.stderr
    assert model.stdout.startswith("model_unavailable OpenAIChatModel needs the openai extra")
    assert "pip install 'agent-mem-vault[openai]'" in model.stdout
    db = _run(
        [clean_venv / "agent-mem-vault", "db", "status", "--dsn", "postgresql://app@127.0.0.1/x"],
        env=_tool_env(tmp_path),
    )
    assert db.returncode == 2
    assert db.stderr == (
        "error: PostgreSQL storage needs the postgres extra, which a plain install leaves "
        "out: pip install 'agent-mem-vault[postgres]' [missing_extra]\n"
    )


def _installed_command(home: Path, env: dict[str, str], wheel: Path) -> Path:
    """The command a tool installed on the user's PATH, after checking it is the wheel's."""
    exe = home / ".local" / "bin" / "agent-mem-vault"
    shown = _run([exe, "--version"], env=env)
    assert shown.stdout.split()[-1] == _metadata(wheel)["Version"]
    return exe


def _main_job(exe: Path, home: Path) -> None:
    env = {**_tool_env(home), "AGENT_MEM_VAULT": str(home / "vault")}
    for args in (
        ["init"],
        ["create", "--from", "claude-code", "--to", "codex", "-n", NS, "-s", "S", "-c", "ctx"],
    ):
        done = _run([exe, *args], env=env)
        assert done.returncode == 0, done.stderr
    read = _run([exe, "read", "--agent", "codex", "-n", NS], env=env)
    assert read.returncode == 0 and "ctx" in read.stdout, read.stderr


def _uv_tool_env(home: Path) -> dict[str, str]:
    """The tool environment (:func:`_tool_env`) with uv's tool folders inside ``home``."""
    bin_dir = str(home / ".local" / "bin")
    return {**_tool_env(home), "UV_TOOL_DIR": str(home / "uv-tools"), "UV_TOOL_BIN_DIR": bin_dir}


def test_uv_tool_install_from_the_wheel_gives_a_working_command(
    tools: Path, dists: dict[str, Path], home: Path
) -> None:
    env = _uv_tool_env(home)
    got = _run([tools / "uv", "tool", "install", dists["wheel"]], env=env)
    assert got.returncode == 0, got.stderr[-3000:]
    _main_job(_installed_command(home, env, dists["wheel"]), home)


def test_pipx_install_from_the_wheel_gives_a_working_command(
    tools: Path, dists: dict[str, Path], home: Path
) -> None:
    env = {
        **_tool_env(home),
        "PIPX_HOME": str(home / "pipx"),
        "PIPX_BIN_DIR": str(home / ".local" / "bin"),
        "PIPX_MAN_DIR": str(home / ".local" / "share" / "man"),
    }
    got = _run([tools / "pipx", "install", dists["wheel"]], env=env)
    assert got.returncode == 0, got.stdout[-2000:] + got.stderr[-2000:]
    _main_job(_installed_command(home, env, dists["wheel"]), home)


def test_the_readme_install_lines_work_as_written_from_the_clone(
    tools: Path, home: Path, tmp_path: Path
) -> None:
    """``uv tool install .`` in the clone: true before the package is published."""
    readme = (ROOT / "README.md").read_text()
    assert "`uv tool install .`" in readme and "`pipx install .`" in readme
    clone = tmp_path / "clone"
    shutil.copytree(
        ROOT,
        clone,
        ignore=shutil.ignore_patterns(".venv*", ".cache", ".git", ".benchmarks", "node_modules"),
    )
    env = {**_uv_tool_env(home), "PATH": f"{tools}{os.pathsep}{os.environ.get('PATH', '')}"}
    got = _run(["uv", "tool", "install", "."], env=env, cwd=clone)
    assert got.returncode == 0, got.stderr[-3000:]
    _main_job(home / ".local" / "bin" / "agent-mem-vault", home)
