"""The layers of ``src/`` are a contract (``pyproject.toml``, ``[tool.importlinter]``)
that ``scripts/test`` checks with import-linter. These tests hold the contract to
what it promises: it is kept by the code as it is, and it breaks on a copy of the
package given a cycle or an import that runs up a layer, counting an import made
inside a function, but not one under ``if TYPE_CHECKING:``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT = Path(sys.executable).parent / "lint-imports"

pytestmark = pytest.mark.skipif(not LINT.exists(), reason="import-linter is not installed")


def lint(src: Path) -> subprocess.CompletedProcess[str]:
    """import-linter with the project's contract, on the package found in ``src``."""
    return subprocess.run(
        [str(LINT), "--no-cache", "--config", str(ROOT / "pyproject.toml")],
        cwd=src,
        env={**os.environ, "PYTHONPATH": str(src)},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """A copy of ``src/`` that a test may break."""
    shutil.copytree(
        ROOT / "src", tmp_path / "src", ignore=shutil.ignore_patterns("__pycache__", "console")
    )
    return tmp_path / "src"


def append(module: Path, code: str) -> None:
    module.write_text(module.read_text(encoding="utf-8") + "\n\n" + code, encoding="utf-8")


def import_late(module: Path, what: str) -> None:
    """Give ``module`` a function that imports ``what`` when called, as code does to
    put an import off (a cycle hidden that way is still a cycle)."""
    append(module, f"def _late() -> object:\n    from {what}\n\n    return None\n")


def test_the_package_keeps_its_layers_and_has_no_import_cycle() -> None:
    done = lint(ROOT / "src")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def test_a_note_format_module_that_imports_the_operations_breaks_the_vault_layers(
    copy: Path,
) -> None:
    import_late(copy / "agent_mem_vault/vault/format/links.py", "..ops import handoffs")
    done = lint(copy)
    assert done.returncode != 0
    assert "agent_mem_vault.vault.format.links -> agent_mem_vault.vault.ops" in done.stdout


def test_an_import_inside_a_function_that_closes_a_cycle_breaks_the_contract(copy: Path) -> None:
    # core/clock.py is imported by the harness; an import back, even a late one, is a cycle.
    import_late(copy / "agent_mem_vault/core/clock.py", "..harness import turn")
    done = lint(copy)
    assert done.returncode != 0
    assert "No import cycle anywhere in agent_mem_vault BROKEN" in done.stdout


def test_an_import_only_for_type_checking_is_not_counted(copy: Path) -> None:
    append(
        copy / "agent_mem_vault/vault/format/links.py",
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
        "    from ..ops.handoffs import HandoffOps  # noqa: F401\n",
    )
    done = lint(copy)
    assert done.returncode == 0, done.stdout
