"""Each client's settings are read in its own format and written back byte for byte
outside what install changes: comments, trailing commas where the client takes
them, odd indentation, one-line objects. Install then uninstall gives back the file."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from agent_mem_vault.integrations.jsonc import GEMINI, LENIENT, STRICT

from .conftest import Run

EXE = str(Path(sys.executable).parent / "agent-mem-vault")

GEMINI_SETTINGS = """\
// Gemini CLI settings: mine
{
   "theme": "GitHub", // the light one
   /* tools I allow */
   "tools": {"allowed": ["run_shell_command(git status)"]},
   "mcpServers": {
      "github": { "command": "gh-mcp" }
   }
}
"""

OPENCODE_JSON = """\
{
\t// my provider
\t"$schema": "https://opencode.ai/config.json",
\t"model": "anthropic/claude-sonnet-4-5",
\t"mcp": {
\t\t"github": {"type": "local", "command": ["gh-mcp"],},
\t},
}
"""

CLAUDE_MCP_JSON = '{"mcpServers": {"github": {"command": "gh"}},   "x": [1,2]}\n'
CLAUDE_SETTINGS = '{\n    "model": "opus",\n    "permissions": {"allow": ["Bash(ls)"]}\n}'
CODEX_HOOKS = (
    '{\n\t"hooks": {\n\t\t"Stop": [{"hooks": [{"type": "command", "command": "x"}]}]\n\t}\n}\n'
)


def test_gemini_settings_with_comments_are_read_and_kept(run: Run, repo: Path) -> None:
    settings = repo / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(GEMINI_SETTINGS)
    run("install", "gemini", "--command", EXE)
    after = settings.read_text()
    for kept in ("// Gemini CLI settings: mine", "// the light one", "/* tools I allow */",
                 '"tools": {"allowed": ["run_shell_command(git status)"]},',
                 '"github": { "command": "gh-mcp" }'):  # fmt: skip
        assert kept in after, kept
    data = GEMINI.load(after)
    assert data["mcpServers"]["agent-mem-vault"]["args"][:3] == ["serve", "--agent", "gemini"]
    assert data["hooks"]["SessionStart"][0]["matcher"] == "*"
    run("uninstall", "gemini")
    assert settings.read_text() == GEMINI_SETTINGS


def test_gemini_settings_with_a_trailing_comma_are_refused_as_gemini_refuses_them(
    run: Run, repo: Path
) -> None:
    settings = repo / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{\n  "theme": "GitHub",\n}\n')
    proc = run("install", "gemini", "--command", EXE, check=False)
    assert proc.returncode == 7 and "trailing comma" in proc.stderr and "line 3" in proc.stderr
    assert settings.read_text() == '{\n  "theme": "GitHub",\n}\n'


def test_opencode_config_with_comments_and_trailing_commas_is_kept(run: Run, repo: Path) -> None:
    config = repo / "opencode.json"
    config.write_text(OPENCODE_JSON)
    run("install", "opencode", "--command", EXE)
    after = config.read_text()
    assert after.startswith('{\n\t// my provider\n\t"$schema"')
    assert '\t\t"github": {"type": "local", "command": ["gh-mcp"],},\n' in after
    assert LENIENT.load(after)["mcp"]["agent-mem-vault"]["type"] == "local"
    run("uninstall", "opencode")
    assert config.read_text() == OPENCODE_JSON


@pytest.mark.parametrize("tool", ["claude-code", "codex"])
def test_plain_json_files_keep_their_own_layout_byte_for_byte(
    run: Run, home: Path, repo: Path, tool: str
) -> None:
    files = {
        repo / ".mcp.json": CLAUDE_MCP_JSON,
        repo / ".claude" / "settings.json": CLAUDE_SETTINGS,
        home / ".codex" / "hooks.json": CODEX_HOOKS,
    }
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    run("install", tool, "--command", EXE)
    if tool == "claude-code":
        mcp = (repo / ".mcp.json").read_text()
        assert mcp.startswith('{"mcpServers": {"github": {"command": "gh"}, "agent-mem-vault": ')
        assert mcp.endswith('},   "x": [1,2]}\n')
        assert (
            '    "permissions": {"allow": ["Bash(ls)"]},\n'
            in (repo / ".claude" / "settings.json").read_text()
        )
    else:
        hooks = (home / ".codex" / "hooks.json").read_text()
        assert '\t\t"Stop": [{"hooks": [{"type": "command", "command": "x"}]}],\n' in hooks
        assert '\t\t"SessionStart": [\n\t\t\t{\n' in hooks  # ours, in the file's own tabs
    run("uninstall", tool)
    for path, text in files.items():
        assert path.read_text() == text, path


def test_claude_and_codex_files_with_comments_are_refused_as_those_clients_refuse_them(
    run: Run, repo: Path
) -> None:
    (repo / ".mcp.json").write_text('{\n  // mine\n  "mcpServers": {}\n}\n')
    proc = run("install", "claude-code", "--command", EXE, check=False)
    assert proc.returncode == 7 and "a comment" in proc.stderr
    assert STRICT is not GEMINI
    assert json.loads('{"a": 1}') == STRICT.load('{"a": 1}')


def test_a_settings_file_with_an_invalid_escape_is_refused_as_not_valid_json(
    run: Run, repo: Path
) -> None:
    settings = repo / ".gemini" / "settings.json"
    settings.parent.mkdir()
    text = '{\n  "theme": "GitHub",\n  "path": "C:\\x"\n}\n'
    settings.write_text(text)
    proc = run("install", "gemini", "--command", EXE, check=False)
    assert proc.returncode == 7, proc.stderr
    assert "is not valid JSON (a string with an invalid escape at line 3)" in proc.stderr
    assert "bug" not in proc.stderr.lower()
    assert settings.read_text() == text
