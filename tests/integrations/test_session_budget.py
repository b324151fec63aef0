"""A session start stays within the client's hook time limit, and always registers its session.

In-process starts (``SessionBook.start``, as the warm process runs the hook),
with real processes standing in for sessions: ``sleep`` processes that are
alive, or killed and reaped (dead). Locks are held the way another start
holds them: ``flock`` on the same files, from another open file.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_mem_vault.integrations.hooks_json import TIMEOUT_SECONDS
from agent_mem_vault.integrations.session_hook import HookInput, render_session_start
from agent_mem_vault.integrations.sessions import (
    LOCK_FILE,
    MAX_SETTLED_PER_START,
    REGISTER_WAIT_SECONDS,
    SETTLE_LOCK_FILE,
    SessionBook,
    SessionStart,
)
from agent_mem_vault.vault import Vault

NS = "project/harbor-api"


def work(path: Path, tag: str) -> Path:
    """A Claude Code transcript of a session that was running a command when it stopped."""
    call = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": f"make {tag}"}}
    lines = [
        {"type": "user", "message": {"role": "user", "content": f"Build {tag}"}},
        {"type": "assistant", "message": {"role": "assistant", "content": [call]}},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


class Processes:
    """``sleep`` processes that stand in for sessions; all ended when the test ends."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []

    def live(self) -> int:
        proc = subprocess.Popen(["sleep", "600"])
        self.procs.append(proc)
        return proc.pid

    def kill(self, pid: int) -> None:
        for proc in self.procs:
            if proc.pid == pid:
                proc.kill()
                proc.wait()

    def close(self) -> None:
        for proc in self.procs:
            proc.kill()
            proc.wait()


@pytest.fixture
def procs() -> Iterator[Processes]:
    found = Processes()
    yield found
    found.close()


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    vault = Vault(tmp_path / "vault")
    vault.init()
    return vault


@pytest.fixture
def book(vault: Vault) -> SessionBook:
    book = SessionBook(vault)
    book.store.parent.mkdir(parents=True, exist_ok=True)
    return book


def session(
    tmp_path: Path, session_id: str, pid: int | None, transcript: Path | None = None
) -> SessionStart:
    return SessionStart(
        client="claude-code",
        agent="claude-code",
        namespace=NS,
        session_id=session_id,
        cwd=str(tmp_path),
        transcript=None if transcript is None else str(transcript),
        pid=pid,
    )


def held(path: Path) -> int:
    """An open file holding the lock at ``path``, as another start holds it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def outcomes(book: SessionBook) -> dict[str, str | None]:
    return {s.session_id: s.outcome for s in book.sessions(NS)}


def test_a_start_behind_a_held_lock_registers_its_session_within_the_hook_limit(
    book: SessionBook, procs: Processes, tmp_path: Path
) -> None:
    fd = held(book.store.parent / LOCK_FILE)
    try:
        began = time.monotonic()
        run = book.start(session(tmp_path, "A", procs.live())).run
        took = time.monotonic() - began
    finally:
        os.close(fd)
    assert took < TIMEOUT_SECONDS / 2
    assert took >= REGISTER_WAIT_SECONDS  # it did wait for the lock, as long as it may
    (registered,) = book.sessions(NS)
    assert (registered.session_id, registered.run, registered.state) == ("A", run, "alive")


def test_while_another_start_settles_a_start_registers_at_once_and_leaves_it_the_dead(
    book: SessionBook, procs: Processes, tmp_path: Path
) -> None:
    dead = procs.live()
    book.start(session(tmp_path, "A", dead, work(tmp_path / "a.jsonl", "a")))
    procs.kill(dead)
    fd = held(book.store.parent / SETTLE_LOCK_FILE)
    try:
        assert book.start(session(tmp_path, "B", procs.live())).received == ()
    finally:
        os.close(fd)
    assert outcomes(book) == {"A": None, "B": None}  # registered; A is not settled yet
    (handoff,) = book.start(session(tmp_path, "C", procs.live())).received
    assert "make a" in handoff.context
    assert outcomes(book) == {"A": "handed_off", "B": None, "C": None}


def test_one_start_settles_a_bounded_number_of_dead_sessions_the_next_the_rest(
    book: SessionBook, procs: Processes, tmp_path: Path
) -> None:
    count = MAX_SETTLED_PER_START + 2
    pids = [procs.live() for _ in range(count)]
    for i, pid in enumerate(pids):
        book.start(session(tmp_path, f"S{i:02d}", pid, work(tmp_path / f"{i}.jsonl", f"t{i}")))
    for pid in pids:
        procs.kill(pid)
    first = book.start(session(tmp_path, "N1", procs.live())).received
    assert len(first) == MAX_SETTLED_PER_START
    # The oldest first; the newest two wait for the next start.
    handed = sorted(int(h.context.split("`make t", 1)[1].split("`")[0]) for h in first)
    assert handed == list(range(MAX_SETTLED_PER_START))
    left = [s for s, outcome in outcomes(book).items() if s.startswith("S") and outcome is None]
    assert left == [f"S{i:02d}" for i in range(MAX_SETTLED_PER_START, count)]
    second = book.start(session(tmp_path, "N2", procs.live())).received
    assert len(second) == 2
    assert all(o == "handed_off" for s, o in outcomes(book).items() if s.startswith("S"))


def test_a_session_registered_again_is_handed_off_once_from_its_newest_registration(
    book: SessionBook, procs: Processes, tmp_path: Path
) -> None:
    transcript = work(tmp_path / "a.jsonl", "a")
    first = procs.live()
    book.start(session(tmp_path, "A", first, transcript))
    procs.kill(first)
    # The same session in a new process, registered while another start settles.
    fd = held(book.store.parent / SETTLE_LOCK_FILE)
    try:
        second = procs.live()
        book.start(session(tmp_path, "A", second, transcript))
    finally:
        os.close(fd)
    procs.kill(second)
    (handoff,) = book.start(session(tmp_path, "B", procs.live())).received
    assert "make a" in handoff.context
    assert [s.outcome for s in book.sessions(NS)] == ["resumed", "handed_off", None]


REGISTER = """
import sys
from agent_mem_vault.integrations.sessions import SessionBook, SessionStart
from agent_mem_vault.vault import Vault
SessionBook(Vault(sys.argv[1])).start(
    SessionStart("claude-code", "claude-code", sys.argv[2], "A", sys.argv[3], pid=None)
)
"""


def test_a_session_whose_process_is_not_known_is_alive_by_its_lease_not_by_the_hook(
    book: SessionBook, vault: Vault, procs: Processes, tmp_path: Path
) -> None:
    # The hook registers the session in a process of its own, which exits at once.
    subprocess.run(
        [sys.executable, "-c", REGISTER, str(vault.path), NS, str(tmp_path)],
        check=True,
        timeout=120,
    )
    (registered,) = book.sessions(NS)
    assert registered.state == "alive"
    assert book.start(session(tmp_path, "B", procs.live())).received == ()
    assert outcomes(book) == {"A": None, "B": None}


def rollout(path: Path, session_id: str) -> Path:
    """A Codex rollout of a session that was running a command when it stopped."""
    lines = [
        {"type": "session_meta", "payload": {"id": session_id}},
        {"type": "event_msg", "payload": {"type": "user_message", "message": "Run the checks"}},
        {
            "type": "response_item",
            "payload": {
                "type": "function_call",
                "name": "exec_command",
                "call_id": "c1",
                "arguments": json.dumps({"cmd": "make check"}),
            },
        },
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_a_codex_start_does_not_search_for_its_rollout_until_the_session_is_dead(
    book: SessionBook,
    vault: Vault,
    procs: Processes,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    codex_home = tmp_path / "codex-home"
    sid = "0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000"
    file = rollout(
        codex_home / "sessions/2026/12/02" / f"rollout-2026-12-02T01-00-00-{sid}.jsonl", sid
    )
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    searched: list[str] = []
    glob = Path.glob

    def watched(self: Path, pattern: str, **kwargs: object) -> Iterator[Path]:
        searched.append(str(self))
        return glob(self, pattern, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "glob", watched)
    hook = HookInput(cwd=str(tmp_path), source="startup", session_id=sid)
    out = render_session_start(vault, hook, agent="codex", namespace=NS, client="codex")
    assert "not registered" not in out
    assert not [s for s in searched if s.startswith(str(codex_home))]
    (registered,) = book.sessions(NS)
    assert registered.transcript == str(file)  # ``sessions`` searches, to show it
    # A session registered the same way, now dead: the next start searches for its
    # rollout, finds it, and hands it off.
    other = "0199aaaa-bbbb-7ccc-8ddd-eeeeffff0001"
    rollout(
        codex_home / "sessions/2026/12/02" / f"rollout-2026-12-02T01-05-00-{other}.jsonl", other
    )
    dead = procs.live()
    search = str(codex_home / "sessions")
    book.start(
        SessionStart("codex", "codex", NS, other, str(tmp_path), pid=dead, transcript_search=search)
    )
    procs.kill(dead)
    searched.clear()
    (handoff,) = book.start(session(tmp_path, "N", procs.live())).received
    assert "make check" in handoff.context and other in handoff.context
    assert [s for s in searched if s.startswith(search)]
