"""One list of the environment variables: the manual's table and ``--help-env`` are the same."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import agent_mem_vault
from agent_mem_vault.core.environment import VARIABLES, markdown_table

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(agent_mem_vault.__file__).parent
LISTED = {v.name for v in VARIABLES}
# A name, not a prefix such as the "AGENT_MEM_VAULT_EMBEDDING*" of a docstring.
_NAME = re.compile(r"\bAGENT_MEM_VAULT(?:_[A-Z0-9]+)*\b(?!\*)")


def _named_in_source() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "environment.py" and path.parent.name == "core":
            continue
        for name in _NAME.findall(path.read_text(encoding="utf-8")):
            found.setdefault(name, path)
    return found


def test_every_variable_the_code_names_is_listed() -> None:
    missing = {name: str(path.relative_to(PACKAGE)) for name, path in _named_in_source().items()}
    for name in LISTED:
        missing.pop(name, None)
    assert not missing, (
        f"add these to VARIABLES in agent_mem_vault/core/environment.py: {missing}, then "
        "paste 'agent-mem-vault --help-env' into docs/configuration.md"
    )


def test_every_listed_variable_is_read_somewhere() -> None:
    stale = LISTED - set(_named_in_source())
    assert not stale, f"listed in core/environment.py but named nowhere in the code: {stale}"


def test_each_variable_is_listed_once_with_a_default_and_an_effect() -> None:
    assert len(LISTED) == len(VARIABLES)
    for var in VARIABLES:
        assert var.default and var.effect and "|" not in var.default + var.effect, var.name


def test_help_env_prints_the_table() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "agent_mem_vault.cli.main", "--help-env"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert proc.stdout == markdown_table()


def test_the_manual_holds_the_table_that_help_env_prints() -> None:
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    header = markdown_table().splitlines()[0]
    assert header in page, "docs/configuration.md has no table of the variables"
    start = page.index(header)
    end = page.find("\n\n", start)
    in_page = page[start : end if end != -1 else len(page)].rstrip("\n") + "\n"
    assert in_page == markdown_table(), (
        "docs/configuration.md's table differs from 'agent-mem-vault --help-env'; "
        "paste the command's output into the page"
    )
