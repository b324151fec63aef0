"""The plugin folder: one source for the repository and the package, the package's version,
shipped in the wheel, and `plugin path` printing where each client adds it from."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from agent_mem_vault import __version__
from agent_mem_vault.integrations.codex_trust import CodexHook
from agent_mem_vault.integrations.plugin_files import (
    REPO_SOURCE,
    expected_files,
    marketplace,
    plugin_root,
)

from .conftest import Run

REPO = Path(__file__).resolve().parents[2]
WRITE = "python -m agent_mem_vault.integrations.plugin_files --write"


def test_the_package_folder_holds_exactly_the_files_the_generator_writes() -> None:
    root = plugin_root()
    on_disk = {
        p.relative_to(root).as_posix(): p.read_text(encoding="utf-8")
        for p in root.rglob("*")
        if p.is_file()
    }
    assert on_disk == expected_files(), f"run `{WRITE}` and commit the result"


def test_the_repository_root_is_a_marketplace_of_the_same_plugin() -> None:
    text = (REPO / ".claude-plugin" / "marketplace.json").read_text(encoding="utf-8")
    assert text == marketplace(REPO_SOURCE), f"run `{WRITE}` and commit the result"
    source = json.loads(text)["plugins"][0]["source"]
    assert (REPO / source).resolve() == plugin_root()
    ours = json.loads(expected_files()[".claude-plugin/marketplace.json"])
    theirs = json.loads(text)
    for plugin in (ours["plugins"][0], theirs["plugins"][0]):
        plugin.pop("source")
    assert ours == theirs


def test_every_manifest_carries_the_package_version() -> None:
    files = expected_files()
    manifests = [
        ".claude-plugin/plugin.json",
        ".codex-plugin/plugin.json",
        "gemini/gemini-extension.json",
        "opencode/package.json",
    ]
    for name in manifests:
        assert json.loads(files[name])["version"] == __version__, name
    market = json.loads(files[".claude-plugin/marketplace.json"])
    assert market["plugins"][0]["version"] == __version__
    assert market["metadata"]["version"] == __version__


def test_no_file_names_a_root_variable_that_codex_would_not_expand() -> None:
    for name, text in expected_files().items():
        assert "${" not in text or name == "opencode/index.js", name
        assert "CLAUDE_PLUGIN_ROOT" not in text and "extensionPath" not in text, name


def test_each_client_reads_its_own_servers_and_hooks_with_its_own_agent_name() -> None:
    files = expected_files()
    for client, agent in (("claude-code", "claude-code"), ("codex", "codex")):
        manifest = json.loads(files[f".{client.split('-')[0]}-plugin/plugin.json"])
        servers = json.loads(files[manifest["mcpServers"][2:]])["mcpServers"]
        assert servers["agent-mem-vault"]["args"] == ["serve", "--agent", agent]
        hooks = json.loads(files[manifest["hooks"][2:]])["hooks"]
        assert f"plugin hook {agent}" in hooks["SessionStart"][0]["hooks"][0]["command"]
        assert f"--agent {agent}" in hooks["SessionEnd"][0]["hooks"][0]["command"]
    gemini = json.loads(files["gemini/gemini-extension.json"])
    assert gemini["mcpServers"]["agent-mem-vault"]["args"] == ["serve", "--agent", "gemini"]


@pytest.mark.slow
def test_the_wheel_ships_the_plugin_folder(tmp_path: Path) -> None:
    from hatchling.builders.wheel import WheelBuilder

    builder = WheelBuilder(str(REPO))
    wheel = Path(next(iter(builder.build(directory=str(tmp_path), versions=["standard"]))))
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    for name in expected_files():
        assert f"agent_mem_vault/plugin/{name}" in names, name


def test_plugin_path_prints_the_folder_and_each_clients_commands(run: Run) -> None:
    assert run("plugin", "path", "gemini").stdout.strip() == str(plugin_root() / "gemini")
    data = json.loads(run("plugin", "path", "codex", "--json").stdout)
    assert data["path"] == str(plugin_root())
    assert data["commands"][-1] == "agent-mem-vault plugin trust codex"
    every = json.loads(run("plugin", "path", "--json").stdout)
    assert [c["client"] for c in every] == ["claude-code", "codex", "gemini", "opencode"]
    text = run("plugin", "path").stdout
    assert "claude plugin install agent-mem-vault@agent-mem-vault" in text


def test_a_plugin_hooks_trust_is_recorded_as_codex_records_it() -> None:
    hook = CodexHook(
        key="agent-mem-vault@agent-mem-vault:codex/hooks.json:session_start:0:0",
        command="command -v agent-mem-vault ...",
        current_hash="sha256:aa/sha256:bb",
        trust_status="untrusted",
        plugin_id="agent-mem-vault@agent-mem-vault",
    )
    assert hook.ours
    assert hook.trust() == {"trusted_hash": "sha256:aa", "trusted_content_hash": "sha256:bb"}
    plain = CodexHook("k", "agent-mem-vault hook session-start --agent codex", "sha256:cc", "")
    assert plain.trust() == {"trusted_hash": "sha256:cc"}


def test_install_beside_the_plugin_writes_nothing_and_says_why(
    run: Run, home: Path, repo: Path
) -> None:
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"enabledPlugins": {"agent-mem-vault@agent-mem-vault": True}}))
    proc = run("install", "claude-code", "--scope", "user")
    assert "already registers the server and the session hook in Claude Code" in proc.stderr
    assert "claude plugin uninstall agent-mem-vault@agent-mem-vault" in proc.stderr
    assert not (home / ".claude.json").exists()
    assert json.loads(settings.read_text()) == {
        "enabledPlugins": {"agent-mem-vault@agent-mem-vault": True}
    }
    assert not (repo / ".mcp.json").exists()


def test_the_plugin_hook_beside_install_prints_one_line_instead_of_a_second_brief(
    run: Run, home: Path
) -> None:
    run("install", "codex")
    out = run("plugin", "hook", "codex", stdin=json.dumps({"cwd": "."})).stdout
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("agent-mem-vault is registered twice in Codex"), context
    assert "run 'agent-mem-vault uninstall codex'" in context
    assert "Project brief" not in context


def test_the_plugin_hook_alone_prints_the_brief(run: Run, tmp_path: Path) -> None:
    run("init")
    out = run("plugin", "hook", "claude-code", stdin=json.dumps({"cwd": "."})).stdout
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert "project memory for namespace project/harbor-api (you are claude-code)" in context
    text = run("plugin", "hook", "opencode", stdin=json.dumps({"cwd": "."})).stdout
    assert "(you are opencode)" in text and not text.startswith("{")


def test_doctor_names_the_plugin_and_a_double_registration(run: Run, home: Path) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[plugins."agent-mem-vault@agent-mem-vault"]\nenabled = true\n')
    run("init")
    doctor = run("doctor", check=False)
    assert "information: Codex has the agent-mem-vault plugin" in doctor.stdout, doctor.stdout
    assert "registered twice" not in doctor.stdout
    said = run("install", "codex").stderr
    assert "already registers" in said
    assert not (home / ".codex" / "hooks.json").exists()
