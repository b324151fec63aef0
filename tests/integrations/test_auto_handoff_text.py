"""The automatic handoff's text: what it says, that it is redacted, and its bound.

The shapes of secrets it redacts are tested in tests/core/test_secrets.py."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from agent_mem_vault.core.secrets import redact
from agent_mem_vault.integrations.auto_handoff import (
    Stopped,
    build_auto_handoff,
    work_after_last_handoff,
)
from agent_mem_vault.integrations.transcripts import (
    AssistantMessage,
    TodoItem,
    TodoList,
    ToolCall,
    Transcript,
    UserMessage,
)

STOPPED = Stopped("claude-code", "s-1", "claude-code", "died", "2026-12-01T10:00:00Z", "/src/app")


def transcript(*entries: object) -> Transcript:
    return Transcript("claude-code", "/t.jsonl", "s-1", tuple(entries))  # type: ignore[arg-type]


def test_the_context_names_the_work_and_what_was_running() -> None:
    t = transcript(
        UserMessage("First, look around"),
        UserMessage("Now fix the health check\nand run the tests"),
        TodoList((TodoItem("fix", "completed"), TodoItem("test", "in_progress"))),
        ToolCall("Edit", "edit", ("app.py",)),
        ToolCall("Bash", "command", (), "make lint", 0),
        AssistantMessage("Running the tests now."),
        ToolCall("Bash", "command", (), "pytest -x", finished=False),
    )
    out = build_auto_handoff(t, STOPPED, git_status=[" M app.py"])
    assert "Interrupted while running Bash `pytest -x`" in out.context
    assert "### Last request\nNow fix the health check\nand run the tests" in out.context
    assert "- First, look around" in out.context
    assert "- [x] fix" in out.context and "- [~] test" in out.context
    assert "- app.py" in out.context and "     M app.py" in out.context
    assert "`make lint` → exit 0" in out.context and "`pytest -x` → did not finish" in out.context
    assert "### Last assistant message\nRunning the tests now." in out.context
    assert "Now fix the health check and run the tests" in out.summary
    assert out == build_auto_handoff(t, STOPPED, git_status=[" M app.py"])  # deterministic


def test_only_work_after_the_last_explicit_handoff_counts() -> None:
    handed = transcript(
        UserMessage("Do it"),
        ToolCall("Edit", "edit", ("a.py",)),
        ToolCall("mcp__agent-mem-vault__create_handoff", "handoff"),
        AssistantMessage("Handed off."),
    )
    assert work_after_last_handoff(handed) == ()
    more = transcript(*handed.entries, ToolCall("Edit", "edit", ("b.py",)))
    assert work_after_last_handoff(more) == more.entries[3:]
    out = build_auto_handoff(more, STOPPED)
    assert "- b.py" in out.context and "a.py" not in out.context
    assert "### Last request\nDo it" in out.context  # still what it was working on
    unanswered = transcript(*handed.entries, UserMessage("And the docs?"))
    assert work_after_last_handoff(unanswered)
    assert work_after_last_handoff(transcript(UserMessage("hi"), AssistantMessage("hello"))) == ()


def test_the_context_is_bounded_keeping_the_newest_and_saying_what_was_cut() -> None:
    entries: list[object] = []
    for i in range(300):
        entries += [
            UserMessage(f"request {i} " + "word " * 40),
            ToolCall("Edit", "edit", (f"src/module_{i}.py",)),
            ToolCall("Bash", "command", (), f"pytest tests/test_{i}.py", i % 2),
        ]
    # A call cut short by the stop: what the next session must know first.
    entries.append(ToolCall("WebFetch", "other", (), None, None, False))
    entries.append(AssistantMessage("final words " * 400))
    out = build_auto_handoff(transcript(*entries), STOPPED, git_status=[" M x"] * 100)
    size = len(out.context.encode("utf-8"))
    assert 5_000 < size <= 6 * 1024
    assert "request 299" in out.context and "src/module_299.py" in out.context
    assert "pytest tests/test_299.py" in out.context
    assert "request 0 " not in out.context
    cut = out.context.splitlines()[-1]
    assert cut.startswith("[cut to fit: ") and "earlier requests" in cut and "older commands" in cut
    small = build_auto_handoff(transcript(*entries), STOPPED, max_bytes=2000)
    assert len(small.context.encode("utf-8")) <= 2000
    # The tightest budget still keeps the interruption.
    assert "Interrupted while running WebFetch: it never returned." in small.context
    assert "### When it stopped" in small.context


def test_secrets_in_the_transcript_never_reach_the_note() -> None:
    t = transcript(
        UserMessage("deploy with ANTHROPIC_API_KEY=sk-ant-api03-AAAABBBBCCCC"),
        ToolCall("Bash", "command", (), "curl -H 'Authorization: Bearer zzzzzzzzzzzzzzzz' x"),
    )
    out = build_auto_handoff(t, STOPPED)
    assert "AAAABBBBCCCC" not in out.context + out.summary
    assert "zzzzzzzzzzzzzzzz" not in out.context


def test_changed_files_are_named_from_the_repository_folder() -> None:
    t = transcript(
        UserMessage("Fix it"),
        ToolCall("Edit", "edit", ("/src/app/api/health.py",)),
        ToolCall("Write", "edit", ("/src/app/README.md",)),
        ToolCall("Edit", "edit", ("/etc/hosts",)),  # outside the repository: as it was
    )
    sub = Stopped("codex", "s-2", "codex", "died", "2026-12-01T10:00:00Z", "/src/app/api")
    out = build_auto_handoff(t, sub, root="/src/app")
    files = out.context.split("### Files changed\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert files == ["- api/health.py", "- README.md", "- /etc/hosts"]
    # Without a repository folder, the session's own folder is the root.
    assert "- api/health.py" in build_auto_handoff(t, STOPPED).context


def test_the_summary_is_cut_at_a_word_and_never_inside_a_redaction() -> None:
    words = "please rotate the deploy key " * 4
    secret = "sk-proj-" + "A1b2C3d4" * 4
    for pad in range(0, 40):
        request = "x" * pad + " " + words + f"export OPENAI_API_KEY={secret} then redeploy the api"
        out = build_auto_handoff(transcript(UserMessage(request)), STOPPED)
        summary = out.summary
        assert secret[8:20] not in summary
        last = summary.rsplit("Last request: ", 1)[1]
        if last.endswith("…"):
            body = last[:-1]
            assert "[redacted" not in body or body.count("[") == body.count("]"), summary
            assert request.startswith(body) or "[redacted" in body, summary
            # cut between words: what remains ends a whole word of the request
            assert body.split()[-1] in redact(request).split(), summary


def test_git_status_in_the_handoff_leaves_out_the_files_install_wrote(run: Any, repo: Path) -> None:
    import subprocess

    from agent_mem_vault.integrations.sessions import _git_status

    shutil.rmtree(repo / ".git")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "app.py").write_text("print('hi')\n")
    run("install", "claude-code")
    run("install", "opencode")
    # A settings file the person had and install then edited stays listed only if
    # it is not ours: here everything in .claude/ and .opencode/ is install's.
    lines = _git_status(str(repo))
    assert lines == ["?? app.py"], lines
    (repo / ".claude" / "notes.md").write_text("mine\n")
    assert "?? .claude/" in _git_status(str(repo))
