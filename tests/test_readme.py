"""The README is the front door: the commands it and the manual show must exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.cli_process import CLI, run_process

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
MANUAL = "".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").rglob("*.md")))

# "agent-mem-vault memory save …" -> ("memory", "save"); flags and values end the path.
_COMMAND = re.compile(r"agent-mem-vault((?: [a-z][a-z-]*)+)")


# Code is what a reader types: fenced blocks and `inline code`, not the prose around them.
_CODE = re.compile(r"^```[^\n]*\n(?P<block>.*?)^```|`(?P<span>[^`\n]+)`", re.M | re.S)


def _mentioned_commands() -> list[tuple[str, ...]]:
    code = "\n".join(m["block"] or m["span"] for m in _CODE.finditer(README + MANUAL))
    return sorted({tuple(m.group(1).split()[:2]) for m in _COMMAND.finditer(code)})


def _help(words: tuple[str, ...]) -> str | None:
    proc = run_process([*CLI, *words, "--help"])
    return proc.stdout if proc.returncode == 0 else None


@pytest.mark.parametrize("words", _mentioned_commands(), ids=" ".join)
def test_every_command_the_readme_shows_exists(words: tuple[str, ...]) -> None:
    first = _help(words[:1])
    assert first is not None, f"the README or docs/ show a command that does not exist: {words[0]}"
    if len(words) == 2 and "Commands:" in first:
        # Under a group the second word must be one of its commands; under a
        # plain command it is an argument ("install claude-code").
        assert _help(words) is not None, f"the README or docs/ show {' '.join(words)}"


def test_readme_gives_the_test_command_that_ci_runs() -> None:
    assert "scripts/test" in README
    assert "scripts/test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_readme_tells_to_activate_the_virtual_environment() -> None:
    """The commands after the install are bare ``agent-mem-vault``: found only once activated."""
    assert "source .venv/bin/activate" in README


def test_readme_stays_a_front_door() -> None:
    lines = README.count("\n")
    assert lines <= 250, f"README.md has {lines} lines; move detail to a page under docs/"


def test_every_page_of_the_manual_is_linked_from_the_readme() -> None:
    for page in sorted((ROOT / "docs").glob("*.md")):
        assert f"docs/{page.name}" in README, f"README.md does not link docs/{page.name}"


def test_every_link_between_pages_leads_to_a_file() -> None:
    link = re.compile(r"\]\((?!https?:|#|mailto:)(?P<target>[^)#\s]+)(?:#[^)]*)?\)")
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for m in link.finditer(page.read_text(encoding="utf-8")):
            target = (page.parent / m["target"]).resolve()
            where = page.relative_to(ROOT)
            assert target.exists(), f"{where} links {m['target']}, which is missing"


# Words that only this project's history explains; a page says what the behaviour is.
_HISTORY = re.compile(
    r"\b(?:issues? #?\d+|the seeds?(?:'s)?|seed §|this round|the lead|previous run)\b", re.I
)


def test_the_readme_manual_and_changelog_speak_of_the_product_not_its_history() -> None:
    pages = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]
    found = [
        f"{page.relative_to(ROOT)}:{number}: {line.strip()}"
        for page in pages
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if _HISTORY.search(line)
    ]
    assert not found, "say what the behaviour is instead:\n" + "\n".join(found)
