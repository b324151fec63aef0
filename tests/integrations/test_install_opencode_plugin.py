"""``install opencode``: the session plugin and the ``.npmrc`` in opencode's config folders."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_mem_vault.integrations.opencode_plugin import NPMRC

from .conftest import Run


@pytest.fixture(autouse=True)
def _default_config_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)


def test_install_opencode_turns_npm_retries_off_in_both_config_folders_and_uninstall_removes_it(
    run: Run, repo: Path, home: Path
) -> None:
    project, user = repo / ".opencode" / ".npmrc", home / ".config" / "opencode" / ".npmrc"
    run("install", "opencode")
    assert project.read_text() == NPMRC and user.read_text() == NPMRC
    assert "fetch-retries=0" in NPMRC.splitlines()
    run("uninstall", "opencode")
    assert not project.exists() and not user.exists()


def test_install_opencode_leaves_an_npmrc_someone_else_wrote(
    run: Run, repo: Path, home: Path
) -> None:
    mine = home / ".config" / "opencode" / ".npmrc"
    mine.parent.mkdir(parents=True)
    mine.write_text("registry=http://127.0.0.1:4873/\n")
    run("install", "opencode")
    run("uninstall", "opencode")
    assert mine.read_text() == "registry=http://127.0.0.1:4873/\n"


def test_uninstalling_a_project_keeps_the_user_npmrc_a_user_wide_plugin_needs(
    run: Run, repo: Path, home: Path
) -> None:
    user = home / ".config" / "opencode" / ".npmrc"
    run("install", "opencode", "--scope", "user")
    run("install", "opencode")
    run("uninstall", "opencode")
    assert not (repo / ".opencode" / ".npmrc").exists()
    assert user.read_text() == NPMRC
    run("uninstall", "opencode", "--scope", "user")
    assert not user.exists()


def test_the_plugin_runs_each_hook_with_the_session_id_and_skips_side_requests(
    run: Run, repo: Path
) -> None:
    run("install", "opencode")
    plugin = (repo / ".opencode" / "plugin" / "agent-mem-vault.js").read_text()
    assert '"hook", "session-start", "--agent", "opencode", "--client", "opencode"' in plugin
    assert '"hook", "session-end", "--agent", "opencode", "--client", "opencode"' in plugin
    assert "session_id: sessionID" in plugin and "You are a title generator" in plugin
    assert "@opencode-ai/plugin" not in plugin  # nothing to install for it
