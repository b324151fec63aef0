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


def _help(words: tuple[str, ...]) -> str | None:
    proc = subprocess.run([*CLI, *words, "--help"], capture_output=True, text=True)
    return proc.stdout if proc.returncode == 0 else None


@pytest.mark.parametrize("words", _mentioned_commands(), ids=" ".join)
def test_every_command_the_readme_shows_exists(words: tuple[str, ...]) -> None:
    first = _help(words[:1])
    assert first is not None, f"README shows a command that does not exist: {words[0]}"
    if len(words) == 2 and "Commands:" in first:
        # Under a group the second word must be one of its commands; under a
        # plain command it is an argument ("install claude-code").
        assert _help(words) is not None, f"README shows {' '.join(words)}"


def test_readme_gives_the_test_command_that_ci_runs() -> None:
    assert "scripts/test" in README
    assert "scripts/test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
