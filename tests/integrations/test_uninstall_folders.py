"""``uninstall`` leaves what it found: the folders install made go once empty, and
no folder it did not make does, however empty."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from .conftest import Run

EXE = str(Path(sys.executable).parent / "agent-mem-vault")


def tree(*roots: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and folder (None) under ``roots``."""
    return {
        str(p): (p.read_bytes() if p.is_file() else None)
        for root in roots
        for p in sorted(root.rglob("*"))
    }


@pytest.mark.parametrize(
    ("tool", "scope"),
    [
        ("claude-code", "project"),
        ("claude-code", "user"),
        ("codex", "user"),
        ("gemini", "project"),
        ("gemini", "user"),
        ("opencode", "project"),
        ("opencode", "user"),
    ],
)
def test_uninstall_removes_the_folders_install_made_and_leaves_everything_as_it_was(
    run: Run, home: Path, repo: Path, tmp_path: Path, tool: str, scope: str
) -> None:
    run("init")  # the vault install would make is not a client's folder: made first
    before = tree(home, repo)
    run("install", tool, "--scope", scope, "--command", EXE)
    assert tree(home, repo) != before
    out = run("uninstall", tool, "--scope", scope).stdout
    assert tree(home, repo) == before, out
    assert "removed" in out


def test_an_empty_folder_that_was_there_before_install_stays(
    run: Run, home: Path, repo: Path
) -> None:
    (repo / ".claude").mkdir()
    (home / ".codex").mkdir()
    run("install", "claude-code", "--command", EXE)
    run("install", "codex", "--command", EXE)
    run("uninstall", "claude-code")
    run("uninstall", "codex")
    assert (repo / ".claude").is_dir() and list((repo / ".claude").iterdir()) == []
    assert (home / ".codex").is_dir() and list((home / ".codex").iterdir()) == []


def test_a_folder_install_made_stays_while_it_holds_something_else(run: Run, repo: Path) -> None:
    run("install", "opencode", "--command", EXE)
    (repo / ".opencode" / "node_modules").mkdir()  # opencode's own install, since
    run("uninstall", "opencode")
    assert (repo / ".opencode" / "node_modules").is_dir()
    assert not (repo / ".opencode" / "plugin").exists()
