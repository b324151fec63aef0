"""Sessions as runs and the automatic handoff, with real processes standing in for clients.

A session's process is the hook's nearest ancestor that is not a shell; here
that is a small Python process (``session``) that runs the hook and then either
exits (the session is dead) or stays until the test ends it (alive). The
transcripts are Claude Code JSONL files written the way the real client writes
them (``tests/coding_agents`` reads ones the real clients wrote).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_mem_vault.integrations.session_hook import MAX_HOOK_CHARS
from agent_mem_vault.integrations.sessions import slot_agent
from agent_mem_vault.vault import Vault

from .conftest import CLI, Run

NS = "project/harbor-api"
SLOT = slot_agent(NS)
# Runs the hook as a child and exits, or lingers until its stdin closes (the session lives).
SESSION = """
import subprocess, sys
args, stdin, linger = sys.argv[2:], sys.argv[1], sys.stdin
done = subprocess.run(args, input=stdin, capture_output=True, text=True)
sys.stdout.write(done.stdout)
sys.stdout.flush()
if linger.readline().strip() == "linger":
    linger.read()
"""


def record(kind: str, content: Any) -> str:
    return json.dumps({"type": kind, "message": {"role": kind, "content": content}})


def claude_transcript(path: Path, *, handoff_last: bool = False) -> Path:
    """A session that wrote app.py and was running pytest when it stopped."""
    lines = [
        record("user", "Fix the orders health check; the key is sk-ant-api03-SECRETSECRET"),
        record(
            "assistant",
            [
                {"type": "text", "text": "Editing app.py."},
                {"type": "tool_use", "id": "t1", "name": "Edit", "input": {"file_path": "app.py"}},
            ],
        ),
        record("user", [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]),
        record(
            "assistant",
            [{"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "pytest -x"}}],
        ),
    ]
    if handoff_last:
        lines += [
            record("user", [{"type": "tool_result", "tool_use_id": "t2", "content": "1 passed"}]),
            record(
                "assistant",
                [
                    {
                        "type": "tool_use",
                        "id": "t3",
                        "name": "mcp__agent-mem-vault__create_handoff",
                        "input": {"to": "codex", "summary": "s", "context": "c"},
                    }
                ],
            ),
            record("user", [{"type": "tool_result", "tool_use_id": "t3", "content": "{}"}]),
            record("assistant", [{"type": "text", "text": "Handed off."}]),
        ]
    path.write_text("\n".join(lines) + '\n{"type": "assistant", "mess')
    return path


def hook_input(repo: Path, session: str, transcript: Path | None = None) -> str:
    data = {"cwd": str(repo), "session_id": session, "source": "startup"}
    if transcript is not None:
        data["transcript_path"] = str(transcript)
    return json.dumps(data)


class Sessions:
    """Starts sessions (processes that run the hook), and ends the lingering ones."""

    def __init__(self, env: dict[str, str], repo: Path) -> None:
        self.env, self.repo = env, repo
        self.alive: list[subprocess.Popen[str]] = []

    def spawn(
        self, agent: str, session: str, transcript: Path | None = None, *, linger: bool = False
    ) -> subprocess.Popen[str]:
        hook = [*CLI, "hook", "session-start", "--agent", agent, "--client", "claude-code"]
        proc = subprocess.Popen(
            [sys.executable, "-c", SESSION, hook_input(self.repo, session, transcript), *hook],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=self.repo,
            env=self.env,
        )
        assert proc.stdin is not None
        proc.stdin.write("linger\n" if linger else "exit\n")
        proc.stdin.flush()
        if linger:
            self.alive.append(proc)
        else:
            proc.stdin.close()
        return proc

    def start(self, agent: str, session: str, transcript: Path | None = None) -> str:
        """A session that starts and is gone at once; what its hook printed."""
        return self.output(self.spawn(agent, session, transcript))

    @staticmethod
    def output(proc: subprocess.Popen[str]) -> str:
        """What a session that does not linger printed, once it has exited."""
        assert proc.stdout is not None
        out = proc.stdout.read()
        proc.stdout.close()
        assert proc.wait(timeout=120) == 0
        return out

    def close(self) -> None:
        for proc in self.alive:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.close()
            proc.stdout.close()
            proc.wait(timeout=60)


@pytest.fixture
def sessions(home: Path, repo: Path, tmp_path: Path, run: Run) -> Iterator[Sessions]:
    run("init")
    env = {k: v for k, v in os.environ.items() if k not in ("CODEX_HOME", "AGENT_MEM_VAULT")}
    env.update(HOME=str(home), AGENT_MEM_VAULT=str(tmp_path / "vault"))
    env.pop("AGENT_MEM_VAULT_AUTO_HANDOFF", None)
    book = Sessions(env, repo)
    yield book
    book.close()


def listed(run: Run) -> list[dict[str, Any]]:
    found = json.loads(run("sessions", "--namespace", NS, "--json").stdout)["sessions"]
    assert isinstance(found, list)
    return found


def handoffs(run: Run) -> list[dict[str, Any]]:
    data = json.loads(run("handoffs", "--status", "all", "--json", "--namespace", NS).stdout)
    items = data["handoffs"] if isinstance(data, dict) else data
    assert isinstance(items, list)
    return items


def test_a_dead_session_with_work_is_handed_to_the_next_session_at_its_start(
    sessions: Sessions, run: Run, tmp_path: Path
) -> None:
    transcript = claude_transcript(tmp_path / "a.jsonl")
    sessions.start("claude-code", "A", transcript)
    out = sessions.start("codex", "B")
    assert "## Automatic handoff" in out
    assert "Interrupted while running Bash `pytest -x`" in out
    assert "- app.py" in out and "Fix the orders health check" in out
    assert "SECRETSECRET" not in out and "[redacted Anthropic key]" in out
    (auto,) = handoffs(run)
    assert (auto["from"], auto["to"]) == ("claude-code", "codex")
    dead, new = listed(run)
    assert (dead["state"], dead["outcome"], dead["handoff"]) == ("dead", "handed_off", auto["id"])
    assert new["state"] == "dead" and new["outcome"] is None
    # The runs face's record of the takeover, listed and exported like any run handoff.
    records = [json.loads(x) for x in run("runs", "export", SLOT).stdout.splitlines()]
    assert [(r["fromRun"], r["toRun"]) for r in records] == [(dead["run"], new["run"])]
    assert (tmp_path / "vault" / "agents" / SLOT / "runs" / f"{new['run']}.md").exists()
    # The next start finds nothing more to hand off.
    assert "## Automatic handoff" not in sessions.start("codex", "C")
    assert len(handoffs(run)) == 1


def test_many_sessions_starting_at_once_give_one_automatic_handoff(
    sessions: Sessions, run: Run, tmp_path: Path
) -> None:
    sessions.start("claude-code", "A", claude_transcript(tmp_path / "a.jsonl"))
    procs = [sessions.spawn("codex", f"S{i % 4}") for i in range(8)]  # ids repeat: hook twice
    outs = [sessions.output(p) for p in procs]
    # Exactly one session gets it (a session whose hook ran twice while it lived
    # is shown it by both runs of its hook).
    shown = {f"S{i % 4}" for i, out in enumerate(outs) if "## Automatic handoff" in out}
    assert len(shown) == 1, shown
    assert len(handoffs(run)) == 1
    (dead, *_rest) = listed(run)
    assert dead["outcome"] == "handed_off"


def big_transcript(path: Path, tag: str) -> Path:
    """A session with a long request that edited many files: a handoff near its byte budget."""
    edits = [
        {"type": "tool_use", "id": f"e{i}", "name": "Edit", "input": {"file_path": name}}
        for i, name in enumerate(
            f"src/{tag}/module_{i:02d}/{'deeply_nested_directory_' * 3}file_{i:02d}.py"
            for i in range(40)
        )
    ]
    lines = [
        record("user", f"Migrate the {tag} service: " + f"{tag} step, " * 400),
        record("assistant", [{"type": "text", "text": "Editing."}, *edits]),
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_large_automatic_handoffs_keep_the_hook_output_bounded_and_fenced(
    sessions: Sessions, run: Run, tmp_path: Path
) -> None:
    Vault(tmp_path / "vault").save_memory(
        namespace=NS, title="Batches of 1000", content="Decided.", kind="decision"
    )
    # Both alive while the other starts, so neither hands the other off; then both die.
    for session, tag in (("A", "orders"), ("B", "billing")):
        proc = sessions.spawn(
            "claude-code", session, big_transcript(tmp_path / f"{tag}.jsonl", tag), linger=True
        )
        assert proc.stdout is not None
        proc.stdout.readline()  # its hook has run
    sessions.close()
    sessions.alive.clear()
    out = sessions.start("codex", "C")
    autos = handoffs(run)
    assert len(autos) == 2
    contexts = [Vault(tmp_path / "vault").get_handoff(h["id"]).context for h in autos]
    assert all(len(c) > 4000 for c in contexts)  # two of them cannot both fit in the budget
    assert len(out.rstrip("\n")) <= MAX_HOOK_CHARS
    # The fence opened is the fence that closes the output.
    assert "\n```text\n" in out and out.rstrip().endswith("\n```")
    assert out.count("```") == 2
    assert "Batches of 1000" in out  # the brief survives
    # One shown whole; the other as one line naming read_handoff; each named once.
    assert out.count("## Automatic handoff ") == 1
    (line,) = [x for x in out.splitlines() if "automatic (too long to show here" in x]
    assert "read_handoff(" in line
    for h in autos:
        assert out.count(h["id"]) == 1
    pending = out.split("## Pending handoffs for codex", 1)[1].split("\n\n", 1)[0]
    assert not any(h["id"] in pending for h in autos)


def test_the_hook_run_twice_for_a_live_session_registers_one_run(
    sessions: Sessions, run: Run, tmp_path: Path
) -> None:
    sessions.start("claude-code", "A", claude_transcript(tmp_path / "a.jsonl"))
    live = sessions.spawn("codex", "B", linger=True)
    assert live.stdout is not None
    live.stdout.readline()  # its hook has run
    before = listed(run)
    assert [s["sessionId"] for s in before] == ["A", "B"]
    # The same session's hook again (a client that runs it twice), while the session lives.
    hook = ["hook", "session-start", "--agent", "codex", "--client", "claude-code"]
    out = run(*hook, stdin=hook_input(sessions.repo, "B")).stdout
    assert "## Automatic handoff" in out  # still shown to the session it was written for
    assert listed(run) == before
    assert len(handoffs(run)) == 1


def test_a_session_whose_last_act_was_an_explicit_handoff_gets_none(
    sessions: Sessions, run: Run, tmp_path: Path
) -> None:
    sessions.start("claude-code", "A", claude_transcript(tmp_path / "a.jsonl", handoff_last=True))
    assert "## Automatic handoff" not in sessions.start("codex", "B")
    assert handoffs(run) == []
    assert listed(run)[0]["outcome"] == "nothing"


def test_a_live_session_is_never_handed_off(sessions: Sessions, run: Run, tmp_path: Path) -> None:
    live = sessions.spawn("claude-code", "A", claude_transcript(tmp_path / "a.jsonl"), linger=True)
    assert live.stdout is not None
    live.stdout.readline()
    assert "## Automatic handoff" not in sessions.start("codex", "B")
    assert handoffs(run) == []
    assert listed(run)[0]["state"] == "alive"


def test_turned_off_nothing_is_registered_or_written(
    sessions: Sessions, run: Run, tmp_path: Path
) -> None:
    sessions.env["AGENT_MEM_VAULT_AUTO_HANDOFF"] = "0"
    sessions.start("claude-code", "A", claude_transcript(tmp_path / "a.jsonl"))
    assert "## Automatic handoff" not in sessions.start("codex", "B")
    assert listed(run) == [] and handoffs(run) == []


def test_a_clean_end_is_recorded_by_the_session_end_hook(
    sessions: Sessions, run: Run, tmp_path: Path
) -> None:
    live = sessions.spawn("claude-code", "A", claude_transcript(tmp_path / "a.jsonl"), linger=True)
    assert live.stdout is not None
    live.stdout.readline()
    end = ["hook", "session-end", "--agent", "claude-code", "--client", "claude-code"]
    run(*end, stdin=hook_input(sessions.repo, "A"))
    assert listed(run)[0]["state"] == "ended"
    out = sessions.start("codex", "B")
    assert "## Automatic handoff" in out and "that ended without writing a handoff" in out


def test_sessions_without_a_namespace_is_a_usage_error(run: Run, tmp_path: Path) -> None:
    lone = tmp_path / "lone"
    lone.mkdir()
    proc = run("sessions", cwd=lone, check=False)
    assert proc.returncode != 0 and "give --namespace" in proc.stderr


def test_a_handoff_that_cannot_be_written_is_listed_as_failed_and_the_session_starts(
    sessions: Sessions, run: Run, tmp_path: Path
) -> None:
    sessions.start("claude-code", "A", claude_transcript(tmp_path / "a.jsonl"))
    out = sessions.start("not an agent name", "B")  # the vault refuses it as a recipient
    assert "## Automatic handoff" not in out and "agent-mem-vault:" in out
    dead = listed(run)[0]
    assert dead["outcome"] == "failed" and "[invalid_agent]" in dead["error"]
    text = run("sessions", "--namespace", NS).stdout
    assert "handing off failed: " in text
    # Settled: the next start does not try again.
    assert "## Automatic handoff" not in sessions.start("codex", "C")
    assert handoffs(run) == []


def test_an_automatic_handoff_travels_to_the_remote_redacted(
    sessions: Sessions, run: Run, tmp_path: Path
) -> None:
    from tests.git_remote import bare_repo, remote_tree

    remote = bare_repo(tmp_path / "remote.git")
    run("sync", "init", str(remote))
    sessions.env["AGENT_MEM_VAULT_SYNC_AUTO"] = "off"  # the test's own sync, below
    sessions.start("claude-code", "A", claude_transcript(tmp_path / "a.jsonl"))
    sessions.start("codex", "B")
    (auto,) = handoffs(run)
    run("sync")
    travelled = remote_tree(remote)[auto["path"]]
    assert "Fix the orders health check" in travelled
    assert "SECRETSECRET" not in travelled and "[redacted Anthropic key]" in travelled
