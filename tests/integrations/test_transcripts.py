"""Transcript readers on damaged and changed input: what can be read, never an error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_mem_vault.integrations.transcripts import (
    READERS,
    AssistantMessage,
    TodoItem,
    TodoList,
    ToolCall,
    UserMessage,
    is_vault_handoff_tool,
    locate_transcript,
    opencode,
    read_transcript,
)
from agent_mem_vault.integrations.transcripts.codex import patch_paths
from agent_mem_vault.integrations.transcripts.jsonl import read_jsonl


def write_lines(path: Path, records: list[object], tail: str = "") -> Path:
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n" + tail)
    return path


def claude(kind: str, content: object, **extra: object) -> dict[str, object]:
    return {"type": kind, "message": {"role": kind, "content": content}, **extra}


def codex(kind: str, payload: dict[str, object]) -> dict[str, object]:
    return {"timestamp": "2026-12-01T00:00:00Z", "type": kind, "payload": payload}


def test_claude_code_unknown_records_and_a_cut_last_line_leave_the_rest(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "s.jsonl",
        [
            {"type": "some-future-record", "data": [1, 2]},
            claude("user", "Fix it", sessionId="abc"),
            claude("user", "<command-name>/clear</command-name>"),
            claude("user", "injected", isMeta=True),
            claude(
                "assistant",
                [
                    {"type": "thinking", "thinking": "hidden"},
                    {"type": "text", "text": "On it."},
                    {
                        "type": "tool_use",
                        "id": "t0",
                        "name": "TodoWrite",
                        "input": {"todos": [{"content": "fix", "status": "in_progress"}]},
                    },
                    {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "false"}},
                ],
            ),
            claude(
                "user",
                [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "is_error": True,
                        "content": "Exit code 2\nboom",
                    }
                ],
            ),
            claude("assistant", [{"type": "tool_use", "id": "t2", "name": "Edit", "input": {}}]),
            ["not", "an", "object"],
        ],
        tail='{"type": "assistant", "message": {"role": "assis',
    )
    t = read_transcript("claude-code", str(path), None)
    assert t.session_id == "abc"
    assert t.entries[0] == UserMessage("Fix it")
    assert t.entries[1] == AssistantMessage("On it.")
    assert isinstance(t.entries[2], TodoList) and t.entries[2].items[0].status == "in_progress"
    assert t.entries[3] == ToolCall("Bash", "command", (), "false", 2, True)
    assert t.entries[4] == ToolCall("Edit", "edit", (), None, None, False)
    assert len(t.entries) == 5
    assert t.problems == (f"1 line(s) of {path} are not JSON objects (cut by a kill?)",)


@pytest.mark.parametrize("client", ["claude-code", "codex"])
def test_a_missing_file_is_an_empty_transcript_with_the_reason(client: str, tmp_path: Path) -> None:
    t = read_transcript(client, str(tmp_path / "gone.jsonl"), "s1")
    assert t.entries == () and t.session_id == "s1"
    assert t.problems and "cannot read" in t.problems[0]


def test_an_empty_or_binary_file_reads_as_nothing(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "bin.jsonl").write_bytes(b"\x00\xff\xfe garbage\n\x89PNG\n")
    assert read_transcript("claude-code", str(tmp_path / "empty.jsonl"), None).entries == ()
    t = read_transcript("codex", str(tmp_path / "bin.jsonl"), None)
    assert t.entries == () and "not JSON objects" in t.problems[0]


def test_codex_rollout_items_events_and_outputs(tmp_path: Path) -> None:
    patch = "*** Begin Patch\n*** Update File: a.py\n@@\n-x\n+y\n*** End Patch\n"
    path = write_lines(
        tmp_path / "r.jsonl",
        [
            codex("session_meta", {"id": "0199-abc"}),
            codex("some_new_kind", {"type": "whatever"}),
            codex(
                "event_msg",
                {
                    "type": "item_completed",
                    "item": {"type": "UserMessage", "content": [{"type": "text", "text": "Go"}]},
                },
            ),
            codex(
                "response_item",
                {
                    "type": "custom_tool_call",
                    "name": "apply_patch",
                    "call_id": "c1",
                    "input": patch,
                },
            ),
            codex("response_item", {"type": "custom_tool_call_output", "call_id": "c1"}),
            codex(
                "response_item",
                {
                    "type": "function_call",
                    "name": "update_plan",
                    "call_id": "p",
                    "arguments": json.dumps({"plan": [{"step": "a", "status": "completed"}]}),
                },
            ),
            codex(
                "response_item",
                {
                    "type": "function_call",
                    "name": "exec_command",
                    "call_id": "c2",
                    "arguments": json.dumps({"cmd": "make test"}),
                },
            ),
            codex(
                "response_item",
                {
                    "type": "function_call_output",
                    "call_id": "c2",
                    "output": "Process exited with code 3",
                },
            ),
            codex(
                "response_item",
                {
                    "type": "function_call",
                    "name": "create_handoff",
                    "namespace": "mcp__agent_mem_vault",
                    "call_id": "c3",
                    "arguments": "{}",
                },
            ),
            codex(
                "response_item",
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "Done."}],
                },
            ),
            codex(
                "response_item",
                {
                    "type": "function_call",
                    "name": "shell",
                    "call_id": "c4",
                    "arguments": json.dumps({"command": ["bash", "-lc", "sleep 9"]}),
                },
            ),
        ],
        tail='{"timestamp": "2026-12-01T00:00:01Z", "type": "resp',
    )
    t = read_transcript("codex", str(path), None)
    assert t.session_id == "0199-abc"
    assert t.entries == (
        UserMessage("Go"),
        ToolCall("apply_patch", "edit", ("a.py",), None, None, True),
        TodoList((TodoItem("a", "completed"),)),
        ToolCall("exec_command", "command", (), "make test", 3, True),
        ToolCall("create_handoff", "handoff", (), None, None, False),
        AssistantMessage("Done."),
        ToolCall("shell", "command", (), "sleep 9", None, False),
    )
    assert len(t.problems) == 1


def test_apply_patch_paths_are_every_file_a_patch_touches() -> None:
    assert patch_paths("*** Add File: n.py\n*** Delete File: o.py\n*** Move to: p.py\n") == (
        "n.py",
        "o.py",
        "p.py",
    )


def test_codex_user_message_events(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "r.jsonl",
        [codex("event_msg", {"type": "user_message", "message": "Older codex"})],
    )
    assert read_transcript("codex", str(path), None).entries == (UserMessage("Older codex"),)


def test_only_the_end_of_a_huge_transcript_is_read(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    line = json.dumps(claude("user", "x" * 900)) + "\n"
    path.write_text(line * 3000 + json.dumps(claude("user", "the last request")) + "\n")
    problems: list[str] = []
    records = list(read_jsonl(str(path), problems, max_bytes=100_000))
    assert len(records) < 200 and records[-1]["message"]["content"] == "the last request"
    assert problems and problems[0].startswith("only the last 0.1 MB of 2.")


def test_a_client_without_a_reader_gives_an_empty_transcript_with_a_problem(
    tmp_path: Path,
) -> None:
    unknown = read_transcript("vim", str(tmp_path / "x"), None)
    assert unknown.entries == () and "no transcript reader for client 'vim'" in unknown.problems[0]
    nowhere = read_transcript("claude-code", None, "s")
    assert "no transcript location" in nowhere.problems[0]
    assert set(READERS) == {"claude-code", "codex", "gemini-cli", "opencode"}


def test_claude_code_transcripts_are_found_by_the_clients_layout(tmp_path: Path) -> None:
    cwd = tmp_path / "src" / "my_app"
    cwd.mkdir(parents=True)
    folder = str(cwd.resolve()).replace("/", "-").replace("_", "-")
    where = tmp_path / "home" / ".claude" / "projects" / folder / "s1.jsonl"
    where.parent.mkdir(parents=True)
    where.write_text("")
    assert locate_transcript("claude-code", str(cwd), "s1", tmp_path / "home") == str(where)
    assert locate_transcript("claude-code", str(cwd), "s2", tmp_path / "home") is None


def test_the_vaults_create_handoff_is_known_under_every_clients_name() -> None:
    assert is_vault_handoff_tool("mcp__agent-mem-vault__create_handoff")
    assert is_vault_handoff_tool("agent-mem-vault_create_handoff")
    assert is_vault_handoff_tool("create_handoff", "mcp__agent_mem_vault")
    assert is_vault_handoff_tool("create_handoff")
    assert not is_vault_handoff_tool("mcp__other__create_handoff")
    assert not is_vault_handoff_tool("Bash")


def test_opencode_apply_patch_edits_every_file_the_patch_touches_moves_included() -> None:
    patch = (
        "*** Begin Patch\n*** Update File: old.py\n*** Move to: new.py\n@@\n-x\n+y\n"
        "*** Add File: added.py\n+z\n*** End Patch\n"
    )
    part = {
        "tool": "apply_patch",
        "state": {"status": "completed", "input": {"patchText": patch}},
    }
    (call,) = opencode._tool(part)
    assert call == ToolCall("apply_patch", "edit", ("old.py", "new.py", "added.py"))


def test_every_reader_sorts_tool_calls_and_todo_lists_in_one_place() -> None:
    from agent_mem_vault.integrations.transcripts import claude_code, codex, gemini_cli, opencode
    from agent_mem_vault.integrations.transcripts.tools import ToolNames, todo_list

    readers = {"Edit": claude_code, "apply_patch": codex, "replace": gemini_cli, "write": opencode}
    for edit, reader in readers.items():
        assert isinstance(reader.TOOLS, ToolNames)
        assert reader.TOOLS.kind(edit) == "edit"
        assert reader.TOOLS.kind("agent_mem_vault__create_handoff") == "handoff"
        assert reader.TOOLS.kind("read_file") == "other"
    assert codex.TOOLS.kind("create_handoff", "mcp__agent_mem_vault") == "handoff"
    items = [{"content": "a", "status": "completed"}, {"content": 3}, "junk", {"status": "x"}]
    # Claude Code and Codex leave out items without text, and default to pending.
    strict = todo_list(items, ("content",), default_status="pending", need_text=True)
    assert strict == TodoList((TodoItem("a", "completed"),))
    # Gemini CLI and opencode keep every object, text or not.
    loose = todo_list(
        [{"description": "", "content": "b"}, {"status": "x"}], ("description", "content")
    )
    assert loose == TodoList((TodoItem("b", ""), TodoItem("", "x")))
    assert todo_list({"content": "a"}, ("content",)) is None
