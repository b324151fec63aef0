"""A session that dies still hands off: the real clients, killed with SIGKILL.

Claude Code and Codex edit a file with their own edit tool and start a shell
command that waits; the test kills the client's whole process group once the
command has started (it touches a flag file first), the way a closed terminal
or a crash ends a session. Their transcripts are read as the clients left
them, and the next session's start hands the work over.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest
import yaml

from agent_mem_vault.integrations.transcripts import ToolCall, UserMessage, read_transcript

from .conftest import NAMESPACE, World, client, codex_config
from .model_server import Reply, ScriptedModel, Seen

pytestmark = pytest.mark.slow

REQUEST = "Add the orders health check in app.py, then run the slow integration check."
SLOT = "sessions~" + NAMESPACE.replace("/", "~")
FLAG_WAIT_SECONDS = 240
CLAUDE_ENV = {
    "ANTHROPIC_API_KEY": "sk-ant-scripted",
    "DISABLE_AUTOUPDATER": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "ENABLE_TOOL_SEARCH": "false",
}


@contextmanager
def running(
    world: World, args: list[str | Path], env: dict[str, str]
) -> Iterator[subprocess.Popen[str]]:
    """A client in its own process group; SIGKILLed with all its children on the way out."""
    proc = subprocess.Popen(
        [str(a) for a in args],
        cwd=world.repo,
        env={**world.env, **env},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        yield proc
    finally:
        kill_group(proc)


def kill_group(proc: subprocess.Popen[str]) -> None:
    with suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()


def wait_for(
    flag: Path,
    proc: subprocess.Popen[str],
    model: ScriptedModel,
    transcripts: Callable[[], list[Path]],
) -> None:
    """Until the shell command has started (its flag file exists) and the client wrote it down.

    A client writes its transcript from a queue of its own, so the command can be
    running before its line reaches the file; a terminal closed after that moment
    is the case under test. The deadline only bounds a failure: the test goes on
    the moment both hold.
    """
    deadline = time.monotonic() + FLAG_WAIT_SECONDS
    while not (flag.exists() and command_recorded(transcripts())):
        if proc.poll() is not None or time.monotonic() > deadline:
            kill_group(proc)
            pytest.fail(
                f"the client never ran the command ({proc.returncode})\n{model.transcript()}"
            )
        time.sleep(0.1)


def command_recorded(paths: list[Path]) -> bool:
    """Whether a transcript holds a shell command that has not finished."""
    for path in paths:
        client_name = "codex" if path.name.startswith("rollout-") else "claude-code"
        read = read_transcript(client_name, str(path), None)
        if any(
            isinstance(e, ToolCall) and e.kind == "command" and not e.finished for e in read.entries
        ):
            return True
    return False


def claude_transcripts(world: World) -> Callable[[], list[Path]]:
    return lambda: sorted((world.home / ".claude" / "projects").glob("*/*.jsonl"))


def codex_rollouts(world: World) -> Callable[[], list[Path]]:
    return lambda: sorted((world.home / ".codex" / "sessions").rglob("rollout-*.jsonl"))


def outputs_in(seen: Seen, kind: str) -> int:
    """How many tool results a request carries (``tool_result`` blocks, ``…_output`` items)."""
    if kind == "anthropic":
        messages = seen.body.get("messages", []) if isinstance(seen.body, dict) else []
        return sum(
            1
            for m in messages
            if isinstance(m, dict) and isinstance(m.get("content"), list)
            for block in m["content"]
            if isinstance(block, dict) and block.get("type") == "tool_result"
        )
    items = seen.body.get("input", []) if isinstance(seen.body, dict) else []
    return sum(
        1 for i in items if isinstance(i, dict) and str(i.get("type", "")).endswith("_output")
    )


def claude_until_killed(world: World) -> Path:
    """Claude Code writes app.py with Write, starts a slow Bash command, and is killed."""
    flag = world.root / "check-started"
    app = world.repo / "app.py"

    def script(seen: Seen) -> Reply:
        names = [t.get("name") for t in seen.body.get("tools", []) if isinstance(t, dict)]
        if "Write" not in names:
            return Reply(text="ok")  # a side request (title, summary): not the session
        done = outputs_in(seen, "anthropic")
        if done == 0:
            return Reply(
                tool="Write",
                args={"file_path": str(app), "content": "def health():\n    return 'ok'\n"},
            )
        return Reply(
            tool="Bash",
            args={"command": f"touch {flag} && sleep 600", "description": "slow check"},
        )

    world.amv("install", "claude-code", "--scope", "user")
    with ScriptedModel("anthropic", script) as model:
        args: list[str | Path] = [client("claude"), "-p", REQUEST, "--allowedTools", "Write,Bash"]
        with running(world, args, {**CLAUDE_ENV, "ANTHROPIC_BASE_URL": model.url}) as proc:
            wait_for(flag, proc, model, claude_transcripts(world))
    assert app.exists()
    (transcript,) = (world.home / ".claude" / "projects").glob("*/*.jsonl")
    return transcript


def codex_first_request(world: World) -> tuple[str, ScriptedModel]:
    """Start Codex in the repository; the text of its first model request."""
    first: list[Seen] = []

    def script(seen: Seen) -> Reply:
        if not seen.body.get("tools"):
            return Reply(text="ok")
        first.append(seen)
        return Reply(text="Picked it up.")

    with ScriptedModel("responses", script) as model:
        codex_config(world, model.url)
        world.amv("install", "codex")
        proc = world.exec_codex("Continue the work.")
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}\n{model.transcript()}"
    assert first, model.transcript()
    return first[0].text, model


def test_claude_code_killed_mid_command_hands_off_to_codex_at_its_first_request(
    world: World,
) -> None:
    transcript = claude_until_killed(world)
    read = read_transcript("claude-code", str(transcript), None)
    users = [e.text for e in read.entries if isinstance(e, UserMessage)]
    calls = [e for e in read.entries if isinstance(e, ToolCall)]
    assert users == [REQUEST], read
    assert [(c.tool, c.kind, c.finished) for c in calls] == [
        ("Write", "edit", True),
        ("Bash", "command", False),
    ], read
    assert calls[0].paths == (str(world.repo / "app.py"),)
    (dead,) = world.sessions()
    assert (dead["client"], dead["state"], dead["outcome"]) == ("claude-code", "dead", None)

    text, _ = codex_first_request(world)
    assert "## Automatic handoff" in text  # shown whole to the session it was written for
    assert "app.py" in text and REQUEST in text
    assert "Interrupted while running Bash" in text and "sleep 600" in text

    handoffs = world.handoffs()
    assert [(h["from"], h["to"], h["status"]) for h in handoffs] == [
        ("claude-code", "codex", "pending")
    ], handoffs
    dead, new = world.sessions()
    assert dead["outcome"] == "handed_off" and dead["handoff"] == handoffs[0]["id"]
    assert dead["toRun"] == new["run"] and new["client"] == "codex"
    assert new["state"] == "ended"  # codex exec exited: its SessionEnd hook ran
    note = (world.vault / handoffs[0]["path"]).read_text()
    meta = yaml.safe_load(note.split("---\n")[1])
    assert meta["origin"] == "auto" and meta["client"] == "claude-code"
    assert meta["source_session"] == dead["sessionId"] and meta["transcript"] == str(transcript)
    assert (meta["from_run"], meta["to_run"]) == (dead["run"], new["run"])

    # The runs face's record of the takeover: from the dead session's run to the new one's.
    lines = world.amv("runs", "export", SLOT).stdout.splitlines()
    records = [json.loads(line) for line in lines if line.strip()]
    assert [(r["fromRun"], r["toRun"]) for r in records] == [(dead["run"], new["run"])], records

    # Codex starting again: the dead session was handed off once, and stays so.
    text, _ = codex_first_request(world)
    assert "## Automatic handoff" not in text  # at most its one line among the pending
    assert len(world.handoffs()) == 1


PATCH = "*** Begin Patch\n*** Add File: app.py\n+def health():\n+    return 'ok'\n*** End Patch\n"


def test_codex_rollout_is_read_as_codex_left_it_when_killed(world: World) -> None:
    """apply_patch (Codex's own edit tool) then a command that never returns, then SIGKILL."""
    flag = world.root / "check-started"

    def script(seen: Seen) -> Reply:
        if not seen.body.get("tools"):
            return Reply(text="ok")
        if outputs_in(seen, "responses") == 0:
            return Reply(tool="apply_patch", custom=True, args={"input": PATCH})
        return Reply(tool="exec_command", args={"cmd": f"touch {flag} && sleep 600"})

    with ScriptedModel("responses", script) as model:
        # A model Codex knows, so that it offers its apply_patch tool.
        codex_config(world, model.url, model="gpt-5.5")
        world.amv("install", "codex")
        args: list[str | Path] = [
            client("codex"),
            "exec",
            "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox",
            REQUEST,
        ]
        with running(world, args, {}) as proc:
            wait_for(flag, proc, model, codex_rollouts(world))
    assert (world.repo / "app.py").read_text() == "def health():\n    return 'ok'\n"
    (rollout,) = (world.home / ".codex" / "sessions").rglob("rollout-*.jsonl")
    read = read_transcript("codex", str(rollout), None)
    users = [e.text for e in read.entries if isinstance(e, UserMessage)]
    calls = [e for e in read.entries if isinstance(e, ToolCall)]
    assert users == [REQUEST], read
    assert [(c.tool, c.kind, c.paths, c.finished) for c in calls] == [
        ("apply_patch", "edit", ("app.py",), True),
        ("exec_command", "command", (), False),
    ], read
    assert calls[1].command == f"touch {flag} && sleep 600"
    (dead,) = world.sessions()
    assert (dead["client"], dead["state"]) == ("codex", "dead")
    assert dead["sessionId"] in rollout.name and dead["transcript"] == str(rollout)


def test_a_clean_exit_right_after_an_explicit_handoff_leaves_nothing_automatic(
    world: World,
) -> None:
    app = world.repo / "app.py"

    def script(seen: Seen) -> Reply:
        tools = seen.body.get("tools", [])
        handoff = next(
            (t["name"] for t in tools if str(t.get("name", "")).endswith("create_handoff")), None
        )
        if handoff is None:
            return Reply(text="ok")
        done = outputs_in(seen, "anthropic")
        if done == 0:
            return Reply(tool="Write", args={"file_path": str(app), "content": "x = 1\n"})
        if done == 1:
            args = {"to": "codex", "summary": "Check app.py", "context": "Wrote x = 1."}
            return Reply(tool=handoff, args={**args, "namespace": NAMESPACE})
        return Reply(text="Handed off to codex.")

    world.amv("install", "claude-code", "--scope", "user")
    with ScriptedModel("anthropic", script) as model:
        proc = world.run(
            client("claude"),
            "-p",
            REQUEST,
            "--allowedTools",
            "Write,mcp__agent-mem-vault__create_handoff",
            env={**CLAUDE_ENV, "ANTHROPIC_BASE_URL": model.url},
        )
        assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}\n{model.transcript()}"
        said = model.transcript()
    assert [h["summary"] for h in world.handoffs()] == ["Check app.py"], said
    (ended,) = world.sessions()
    assert ended["state"] == "ended"  # its SessionEnd hook ran
    text, _ = codex_first_request(world)
    assert "Check app.py" in text
    assert "## Automatic handoff" not in text
    assert [h["summary"] for h in world.handoffs()] == ["Check app.py"]
    ended, _new = world.sessions()
    assert ended["outcome"] == "nothing"


def test_a_session_alive_in_another_terminal_is_never_handed_off(world: World) -> None:
    flag = world.root / "check-started"

    def script(seen: Seen) -> Reply:
        names = [t.get("name") for t in seen.body.get("tools", []) if isinstance(t, dict)]
        if "Bash" not in names:
            return Reply(text="ok")
        return Reply(tool="Bash", args={"command": f"touch {flag} && sleep 600"})

    world.amv("install", "claude-code", "--scope", "user")
    with ScriptedModel("anthropic", script) as model:
        args: list[str | Path] = [client("claude"), "-p", REQUEST, "--allowedTools", "Bash"]
        with running(world, args, {**CLAUDE_ENV, "ANTHROPIC_BASE_URL": model.url}) as proc:
            wait_for(flag, proc, model, claude_transcripts(world))
            text, _ = codex_first_request(world)
            assert "## Automatic handoff" not in text
            assert world.handoffs() == []
            alive, _codex = world.sessions()
            assert (alive["client"], alive["state"], alive["outcome"]) == (
                "claude-code",
                "alive",
                None,
            )
    # Once it is gone, the next session to start gets its work.
    text, _ = codex_first_request(world)
    assert "## Automatic handoff" in text and "sleep 600" in text
    assert len(world.handoffs()) == 1
