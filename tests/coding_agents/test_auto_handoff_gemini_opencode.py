"""A Gemini CLI session killed mid-work is handed to the next opencode session.

Gemini CLI (installed with ``agent-mem-vault install gemini``) writes orders.py
with its own edit tool, runs a command that fails, starts a long one, and its
whole process group is killed with SIGKILL: no handoff was written. opencode
then starts in the same repository; its plugin's session-start hook finds the
dead Gemini CLI session, builds the automatic handoff from its chat file, and
the text is in opencode's first model request, as the scripted model sees it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import CLI, NAMESPACE, World, client
from .killed_session import (
    EDITED,
    FAILING,
    REQUEST,
    gemini_recorded,
    running_until_long_command,
    script,
)
from .model_server import Reply, ScriptedModel, Seen
from .no_registry import NoRegistry
from .test_gemini_opencode import (
    OPENCODE_QUIET,
    _chat_tools,
    _system_text,
    gemini_env,
    gemini_signs_in_with_a_key,
)
from .test_transcripts_gemini_opencode import (
    _gemini_steps,
    _opencode_config,
    gemini_until_killed,
    gemini_working,
)

pytestmark = pytest.mark.slow


def test_gemini_cli_killed_mid_session_is_handed_to_the_next_opencode_session(
    world: World,
) -> None:
    opencode = client("opencode")
    world.amv("install", "gemini")
    world.amv("install", "opencode")

    said, _ = gemini_until_killed(world)
    assert world.handoffs() == [], "the killed session wrote no handoff of its own"
    [dead] = world.sessions()
    assert (dead["client"], dead["agent"], dead["state"]) == ("gemini-cli", "gemini", "dead"), (
        f"{dead}\n{said}"
    )

    first: list[Seen] = []
    side: list[Seen] = []

    def opencode_answers(seen: Seen) -> Reply:
        if not _chat_tools(seen.body):
            side.append(seen)
            return Reply(text="Orders rounding")  # the session's title
        first.append(seen)
        return Reply(text="I will pick up the orders rounding.")

    # No registry answers here: opencode's own install of its plugin SDK into
    # each config folder fails, once per folder (the .npmrc install wrote turns
    # npm's retries off), instead of holding the first request for a minute.
    with ScriptedModel("chat", opencode_answers) as model, NoRegistry() as registry:
        _opencode_config(world, model)
        env = {**OPENCODE_QUIET, "npm_config_registry": registry.url}
        proc = world.run(opencode, "run", "Continue the work.", timeout=240, env=env)
        transcript = model.transcript()
    assert registry.paths == ["/@opencode-ai%2fplugin"] * 2, registry.paths
    assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}\n{transcript}"
    assert first, transcript
    system = json.loads(_system_text(first[0].body))
    text = "\n".join(str(m.get("content")) for m in system)
    assert "Automatic handoff" in text and "from gemini" in text, text
    assert EDITED in text, text  # the file the dead session wrote
    assert REQUEST in text, text  # the person's last request, in full
    assert "Interrupted while running" in text, text  # what it was doing when killed
    assert FAILING in text and "exit 3" in text, text  # the command that failed, with its status
    # The title request is not the session's turn: it carries no project memory.
    assert all("agent-mem-vault" not in s.text for s in side), transcript

    [auto] = world.handoffs()
    assert (auto["from"], auto["to"], auto["status"]) == ("gemini", "opencode", "pending"), auto
    sessions = {s["client"]: s for s in world.sessions()}
    assert sessions["gemini-cli"]["handoff"] == auto["id"], sessions
    # opencode's plugin passed its session id, and its exit marked the session ended.
    assert sessions["opencode"]["sessionId"].startswith("ses_"), sessions
    assert sessions["opencode"]["state"] == "ended", sessions


def test_each_session_of_one_opencode_server_gets_the_handoffs_pending_at_its_own_start(
    world: World,
) -> None:
    """One ``opencode serve`` holds many sessions: a handoff left after the first
    session started is in the second session's first request, and in no title request."""
    opencode = client("opencode")
    world.amv("install", "opencode")
    firsts: dict[str, Seen] = {}
    side: list[Seen] = []

    def answers(seen: Seen) -> Reply:
        if not _chat_tools(seen.body):
            side.append(seen)
            return Reply(text="A title")
        asked = json.dumps(seen.body.get("messages", [])[-1:])
        firsts.setdefault("second" if "Second task" in asked else "first", seen)
        return Reply(text="Done.")

    with ScriptedModel("chat", answers) as model, NoRegistry() as registry:
        _opencode_config(world, model)
        with _server(world, opencode, registry) as url:
            ask: list[str | Path] = [opencode, "run", "--attach", url]
            proc = world.run(*ask, "First task.", timeout=240, env=OPENCODE_QUIET)
            assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}\n{model.transcript()}"
            world.amv(
                "create", "--from", "codex", "--to", "opencode", "-n", NAMESPACE,
                "-s", SERVE_SUMMARY, "-c", "Left while the first session ran.",
            )  # fmt: skip
            proc = world.run(*ask, "Second task.", timeout=240, env=OPENCODE_QUIET)
            assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}\n{model.transcript()}"
            alive = world.sessions()
        transcript = model.transcript()
    assert set(firsts) == {"first", "second"}, transcript
    one, two = (_system_text(firsts[k].body) for k in ("first", "second"))
    assert "Pending handoffs for opencode" in one and SERVE_SUMMARY not in one, one
    assert SERVE_SUMMARY in two, two
    assert side and all("agent-mem-vault" not in s.text for s in side), transcript
    # Both sessions registered with their own ids, alive while the server runs.
    assert [(s["client"], s["state"]) for s in alive] == [("opencode", "alive")] * 2, alive
    assert len({s["sessionId"] for s in alive}) == 2, alive


SERVE_SUMMARY = "Check the refund rounding"


@contextlib.contextmanager
def _server(world: World, opencode: Path, registry: NoRegistry) -> Iterator[str]:
    """``opencode serve`` in the repository, in its own process group; its address."""
    log = world.root / "serve.log"
    with log.open("w") as sink:
        proc = subprocess.Popen(
            [str(opencode), "serve", "--port", "0"],
            cwd=world.repo,
            env={**world.env, **OPENCODE_QUIET, "npm_config_registry": registry.url},
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 120
        found = None
        while found is None and proc.poll() is None and time.monotonic() < deadline:
            found = re.search(r"http://127\.0\.0\.1:\d+", log.read_text(errors="replace"))
            time.sleep(0.1)
        assert found, f"opencode serve printed no address:\n{log.read_text(errors='replace')}"
        yield found.group(0)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_a_gemini_cli_session_whose_launcher_alone_was_killed_is_alive_and_not_handed_off(
    world: World,
) -> None:
    """Gemini CLI relaunches itself: the session runs in the inner Node process.
    With only the first process killed, the session works on: no automatic handoff."""
    gemini = client("gemini")
    world.amv("install", "gemini")
    gemini_signs_in_with_a_key(world)
    with ScriptedModel("gemini", script(world, _gemini_steps())) as model:
        env = gemini_env(model)
        argv = gemini_working(gemini)
        with running_until_long_command(world, argv, env, gemini_recorded(world)) as launcher:
            os.kill(launcher.pid, signal.SIGKILL)
            launcher.wait()
            [session] = world.sessions()
            assert session["state"] == "alive", session
            # Another session starting now leaves the working one alone.
            hook = subprocess.run(
                [*CLI, "hook", "session-start", "--agent", "codex", "--client", "codex"],
                input=json.dumps({"session_id": "next-1", "cwd": str(world.repo)}),
                cwd=world.repo,
                env=world.env,
                capture_output=True,
                text=True,
                timeout=60,
                check=True,
            )
            assert "Automatic handoff" not in hook.stdout, hook.stdout
            assert world.handoffs() == [], "a session still working was handed off"
            states = sorted((s["client"], s["state"]) for s in world.sessions())
            assert states == [("codex", "alive"), ("gemini-cli", "alive")], states
