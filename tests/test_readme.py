"""The README is the front door: the commands it shows must exist."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
CLI = [sys.executable, "-m", "agent_mem_vault.cli.main"]

# "agent-mem-vault memory save …" -> ("memory", "save"); flags and values end the path.
_COMMAND = re.compile(r"agent-mem-vault((?: [a-z][a-z-]*)+)")


def _mentioned_commands() -> list[tuple[str, ...]]:
    return sorted({tuple(m.group(1).split()[:2]) for m in _COMMAND.finditer(README)})


def _is_command(words: tuple[str, ...]) -> bool:
    proc = subprocess.run([*CLI, *words, "--help"], capture_output=True, text=True)
    return proc.returncode == 0


@pytest.mark.parametrize("words", _mentioned_commands(), ids=" ".join)
def test_every_command_the_readme_shows_exists(words: tuple[str, ...]) -> None:
    # The second word may be an argument ("runs start support-bot"), so accept
    # the shorter path when the longer one is not a command of its own.
    assert _is_command(words) or _is_command(words[:1]), f"README shows {words}"


def test_readme_gives_the_test_command_that_ci_runs() -> None:
    assert "scripts/test" in README
    assert "scripts/test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
