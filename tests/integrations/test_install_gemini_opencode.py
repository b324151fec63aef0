"""``install gemini`` / ``install opencode`` and the hand-written brief, via the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import Run


@pytest.fixture(autouse=True)
def _no_gemini_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    """The person's own Gemini CLI switches must not decide these tests."""
    for name in (
        "GEMINI_CLI_TRUST_WORKSPACE",
        "GEMINI_CLI_HOME",
        "GEMINI_CLI_TRUSTED_FOLDERS_PATH",
    ):
        monkeypatch.delenv(name, raising=False)


NOW = "agent-mem-vault hook session-start --agent gemini --client gemini-cli --format json"
THEIRS = {"type": "command", "command": "notify-send started", "timeout": 5000}
"""Another tool's SessionStart hook, which install leaves where it is."""
EARLIER = {
    "type": "command",
    "command": "agent-mem-vault hook session-start --agent gemini --format json",
    "timeout": 10_000,
}
"""Our SessionStart hook as an earlier install wrote it."""


def test_install_gemini_writes_server_and_hook_and_uninstall_restores(run: Run, repo: Path) -> None:
    settings = repo / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"theme": "dark"}\n')
    run("install", "gemini")
    data = json.loads(settings.read_text())
    assert data["theme"] == "dark"
    assert data["mcpServers"]["agent-mem-vault"] == {
        "command": "agent-mem-vault",
        "args": ["serve", "--agent", "gemini"],
    }
    group = data["hooks"]["SessionStart"][0]
    # Gemini CLI compares a SessionStart matcher with the source as a plain string.
    assert group["matcher"] == "*"
    hook = group["hooks"][0]
    assert hook["command"] == NOW
    assert hook["timeout"] == 10_000  # Gemini CLI counts milliseconds
    (end,) = data["hooks"]["SessionEnd"][0]["hooks"]
    assert end["command"] == "agent-mem-vault hook session-end --agent gemini --client gemini-cli"
    assert all(
        line.startswith("unchanged") for line in run("install", "gemini").stdout.splitlines()
    )
    run("uninstall", "gemini")
    assert json.loads(settings.read_text()) == {"theme": "dark"}


def test_install_gemini_repairs_the_matcher_an_earlier_install_wrote(run: Run, repo: Path) -> None:
    """0.x wrote "startup|resume|clear", which Gemini CLI never matches: the hook never ran."""
    settings = repo / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(
        json.dumps(
            {
                "hooks": {
                    "SessionStart": [
                        {"matcher": "startup|resume|clear", "hooks": [EARLIER]},
                        {"matcher": "startup", "hooks": [THEIRS]},
                    ]
                }
            }
        )
    )
    run("install", "gemini")
    groups = json.loads(settings.read_text())["hooks"]["SessionStart"]
    now = {**EARLIER, "command": NOW}
    assert groups == [{"matcher": "*", "hooks": [now]}, {"matcher": "startup", "hooks": [THEIRS]}]


def test_install_gemini_moves_our_hook_out_of_a_group_it_shares_under_another_matcher(
    run: Run, repo: Path
) -> None:
    settings = repo / ".gemini" / "settings.json"
    settings.parent.mkdir()
    shared = {"matcher": "startup", "hooks": [THEIRS, EARLIER]}
    settings.write_text(json.dumps({"hooks": {"SessionStart": [shared]}}))
    run("install", "gemini")
    groups = json.loads(settings.read_text())["hooks"]["SessionStart"]
    now = {**EARLIER, "command": NOW}
    assert groups == [{"matcher": "startup", "hooks": [THEIRS]}, {"matcher": "*", "hooks": [now]}]
    run("uninstall", "gemini")
    groups = json.loads(settings.read_text())["hooks"]["SessionStart"]
    assert groups == [{"matcher": "startup", "hooks": [THEIRS]}]


def _trust(home: Path, rules: dict[str, str]) -> None:
    folder = home / ".gemini"
    folder.mkdir(exist_ok=True)
    (folder / "trustedFolders.json").write_text(json.dumps(rules))


def test_install_gemini_says_what_to_do_in_a_folder_gemini_has_not_trusted(
    run: Run, repo: Path
) -> None:
    out = run("install", "gemini")
    assert f"note: {repo} is a folder Gemini CLI has not trusted yet" in out.stderr
    assert "GEMINI_CLI_TRUST_WORKSPACE=true" in out.stderr
    assert (repo / ".gemini" / "settings.json").exists()  # the note changes nothing


@pytest.mark.parametrize(
    ("rules", "note"),
    [
        ({"{repo}": "TRUST_FOLDER"}, None),
        ({"{parent}": "TRUST_FOLDER"}, None),
        ({"{repo}/src": "TRUST_PARENT"}, None),  # the rule's parent: the repository
        ({"{parent}": "TRUST_FOLDER", "{repo}": "DO_NOT_TRUST"}, "you chose not to trust"),
        ({"{repo}": "TRUST_FOLDER", "{parent}": "DO_NOT_TRUST"}, None),  # longest rule wins
        ({"{repo}-other": "TRUST_FOLDER"}, "has not trusted yet"),  # a prefix is not a parent
    ],
)
def test_install_gemini_reads_folder_trust_as_gemini_cli_does(
    run: Run, repo: Path, home: Path, rules: dict[str, str], note: str | None
) -> None:
    _trust(
        home,
        {k.format(repo=repo, parent=repo.parent): v for k, v in rules.items()},
    )
    out = run("install", "gemini")
    if note is None:
        assert "note:" not in out.stderr, out.stderr
    else:
        assert note in out.stderr, out.stderr


def test_install_gemini_says_nothing_about_trust_where_folder_trust_is_off(
    run: Run, repo: Path, home: Path
) -> None:
    (home / ".gemini").mkdir()
    (home / ".gemini" / "settings.json").write_text(
        json.dumps({"security": {"folderTrust": {"enabled": False}}})
    )
    assert "note:" not in run("install", "gemini").stderr


def test_install_gemini_user_scope_follows_gemini_cli_home(
    run: Run, repo: Path, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "gemini-home"))
    run("install", "gemini", "--scope", "user")
    data = json.loads((tmp_path / "gemini-home" / ".gemini" / "settings.json").read_text())
    assert "agent-mem-vault" in data["mcpServers"]
    assert not (home / ".gemini" / "settings.json").exists()


def test_install_gemini_dry_run_writes_nothing(run: Run, repo: Path) -> None:
    out = run("install", "gemini", "--dry-run")
    assert '"agent-mem-vault"' in out.stdout and "nothing was written" in out.stderr
    assert not (repo / ".gemini").exists()


def test_install_opencode_writes_the_server_and_the_session_plugin(run: Run, repo: Path) -> None:
    run("install", "opencode")
    config = json.loads((repo / "opencode.json").read_text())
    assert config["mcp"]["agent-mem-vault"]["command"] == [
        "agent-mem-vault",
        "serve",
        "--agent",
        "opencode",
    ]
    assert config["mcp"]["agent-mem-vault"]["type"] == "local"
    plugin = (repo / ".opencode" / "plugin" / "agent-mem-vault.js").read_text()
    assert "experimental.chat.system.transform" in plugin
    assert '"session-start", "--agent", "opencode", "--client", "opencode", "--format"' in plugin
    run("uninstall", "opencode")
    assert not (repo / "opencode.json").exists()
    assert not (repo / ".opencode" / "plugin" / "agent-mem-vault.js").exists()


def test_install_opencode_refuses_to_overwrite_a_plugin_it_did_not_write(
    run: Run, repo: Path
) -> None:
    plugin = repo / ".opencode" / "plugin" / "agent-mem-vault.js"
    plugin.parent.mkdir(parents=True)
    plugin.write_text("export const Mine = 1;\n")
    proc = run("install", "opencode", check=False)
    assert proc.returncode != 0 and "was not written by agent-mem-vault" in proc.stderr
    assert plugin.read_text() == "export const Mine = 1;\n"
    assert not (repo / "opencode.json").exists()


def test_a_brief_written_by_hand_without_frontmatter_is_used_by_the_hook(
    run: Run, repo: Path, tmp_path: Path
) -> None:
    run("init")
    brief = tmp_path / "vault" / "project" / "harbor-api" / "_brief.md"
    brief.parent.mkdir(parents=True)
    brief.write_text("Deploys go through CI only.\n")
    out = run("hook", "session-start", "--agent", "codex", stdin=json.dumps({"cwd": str(repo)}))
    assert "Deploys go through CI only." in out.stdout
