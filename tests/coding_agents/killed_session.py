"""A real client session that edits a file, runs commands, and is killed mid-command.

The scripted model makes the session work as a person's would, with the
client's own tools: write a file, run a command that fails with status 3, then
start a long command. Once that command is running (it leaves a marker file
first) and the client has written it down in its own record (a client writes
its transcript when it gets to it, so the command can run before its line is on
disk), the whole process group gets SIGKILL: Codex and Gemini CLI run their
session in a child of the process the shell started, so killing that one alone
would leave the session running.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from agent_mem_vault.integrations.transcripts import ToolCall, opencode, read_transcript

from .conftest import World
from .model_server import Reply, Seen

__all__ = [
    "EDITED",
    "EDITED_TEXT",
    "FAILING",
    "LONG",
    "MARKER",
    "REQUEST",
    "Steps",
    "gemini_recorded",
    "opencode_recorded",
    "recorded_running",
    "run_until_killed",
    "running_until_long_command",
]

REQUEST = "Fix the rounding of order totals in orders.py, then run the checks."
EDITED = "orders.py"
EDITED_TEXT = "def total(cents: int) -> int:\n    return round(cents)\n"
FAILING = "echo checks failed; exit 3"
MARKER = "long-command-started"
LONG = f"touch {MARKER} && sleep 600"
DEADLINE_S = 240.0
"""How long the session may take to reach the long command before the test gives up."""


@dataclass
class Steps:
    """Which step of the work a model request asks for, from the tool results it carries."""

    edit: Callable[[str], Reply]
    """The edit call, given the absolute path of the file to write."""
    shell: Callable[[str], Reply]
    """A shell call running the given command."""
    results: Callable[[Seen], int]
    """How many tool results the request carries (0 on the session's first request)."""
    is_session: Callable[[Seen], bool]
    """False for the client's side requests (a title, a summary): answered with plain text."""
    plan: Reply | None = None
    """A todo-list call made first, where the client has a todo tool."""


def script(world: World, steps: Steps) -> Callable[[Seen], Reply]:
    """The model's side: edit, a failing command, the long command; then plain text."""

    def answer(seen: Seen) -> Reply:
        if not steps.is_session(seen):
            return Reply(text="Orders rounding")
        work = [
            *([steps.plan] if steps.plan else []),
            steps.edit(str(world.repo / EDITED)),
            steps.shell(FAILING),
            steps.shell(LONG),
        ]
        done = steps.results(seen)
        return work[done] if done < len(work) else Reply(text="Done.")

    return answer


def recorded_running(client: str, records: Callable[[], list[Path]]) -> Callable[[], bool]:
    """Whether ``client``'s own record (one of ``records()``, read by our reader) holds
    the failing command, finished, and a call that has not finished, last."""

    def check() -> bool:
        for path in records():
            read = read_transcript(client, str(path), None)
            calls = [e for e in read.entries if isinstance(e, ToolCall)]
            if (
                calls
                and not calls[-1].finished
                and any(c.command == FAILING and c.finished for c in calls)
            ):
                return True
        return False

    return check


def gemini_recorded(world: World) -> Callable[[], bool]:
    """``recorded_running`` for Gemini CLI, whose record is its chat file."""
    chats = world.home / ".gemini" / "tmp"
    return recorded_running("gemini-cli", lambda: sorted(chats.glob("*/chats/session-*.jsonl")))


def opencode_recorded(world: World) -> Callable[[], bool]:
    """``recorded_running`` for opencode, whose record is its database."""
    db = opencode.default_database(world.home / ".local" / "share")
    return recorded_running("opencode", lambda: [db] if db.exists() else [])


def run_until_killed(
    world: World, argv: list[str], env: dict[str, str], recorded: Callable[[], bool]
) -> str:
    """Start the client in its own process group; SIGKILL the group once the long
    command runs and ``recorded()`` holds. Returns what the client printed, for
    assertion messages."""
    with running_until_long_command(world, argv, env, recorded):
        pass
    return (world.root / "client-output.txt").read_text(errors="replace")[-4000:]


@contextlib.contextmanager
def running_until_long_command(
    world: World, argv: list[str], env: dict[str, str], recorded: Callable[[], bool]
) -> Iterator[subprocess.Popen[bytes]]:
    """The client, in its own process group, once it runs the long command and
    ``recorded()`` says its record holds it (see ``recorded_running``); on leaving,
    the group and what it left running in the repository get SIGKILL, and are
    waited for until they have ended.

    The deadline only bounds a failure: the kill comes the moment both hold. If
    the record never holds the command, the kill comes at the deadline, and the
    test's own checks of the record say what is missing."""
    marker = world.repo / MARKER
    out = world.root / "client-output.txt"
    with out.open("w") as sink:
        proc = subprocess.Popen(
            argv,
            cwd=world.repo,
            env={**world.env, **env},
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    doomed: set[int] = set()
    try:
        deadline = time.monotonic() + DEADLINE_S
        while not (marker.exists() and recorded()):
            if proc.poll() is not None or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        doomed = _in_group(proc.pid)
        said = out.read_text(errors="replace")[-4000:]
        assert marker.exists(), (
            f"the session never started the long command (exit {proc.returncode}):\n{said}"
        )
        yield proc
    finally:
        doomed |= _in_group(proc.pid)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        # A client may run a command detached (its own process group): what
        # the session left running in the repository goes too.
        left = _in_folder(world.repo)
        _kill(left)
        _wait_ended(doomed | left)


def _processes() -> Iterator[tuple[int, str]]:
    """Each process's pid and its /proc/<pid>/stat fields after the name."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            yield int(entry.name), stat[stat.rindex(")") + 2 :]


def _in_group(pgid: int) -> set[int]:
    return {pid for pid, fields in _processes() if int(fields.split()[2]) == pgid}


def _in_folder(folder: Path) -> set[int]:
    found = set()
    for pid, _ in _processes():
        with contextlib.suppress(OSError):
            if Path(os.readlink(f"/proc/{pid}/cwd")) == folder:
                found.add(pid)
    return found


def _kill(pids: set[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _wait_ended(pids: set[int]) -> None:
    """SIGKILL is delivered, not awaited: wait until each process has ended (gone,
    or a zombie whose exit status nobody has collected yet)."""
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        running = {pid for pid, fields in _processes() if pid in pids and fields[0] != "Z"}
        if not running:
            return
        time.sleep(0.05)
    raise AssertionError(f"processes still running after SIGKILL: {sorted(running)}")
