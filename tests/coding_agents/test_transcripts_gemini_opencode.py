"""The transcript readers on what the real Gemini CLI and opencode write.

Each client works a session against the scripted model (its own edit tool on
orders.py, a command that exits 3, then a long command) and is killed with
SIGKILL while the long command runs. The reader must find the person's
request, the edited file, the failed command with its status and the command
it was running when it died; and damaged copies of the same files (a cut last
line, a record of an unknown kind, a missing file, a locked database) must
read as far as they can, never raise.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from agent_mem_vault.integrations.transcripts import (
    TodoList,
    ToolCall,
    Transcript,
    UserMessage,
    gemini_cli,
    opencode,
)

from .conftest import World, client, make_world
from .killed_session import (
    EDITED,
    EDITED_TEXT,
    FAILING,
    LONG,
    REQUEST,
    Steps,
    gemini_recorded,
    opencode_recorded,
    run_until_killed,
    script,
)
from .model_server import Reply, ScriptedModel, Seen
from .no_registry import NoRegistry
from .test_gemini_opencode import (
    GEMINI_MODEL,
    OPENCODE_QUIET,
    _chat_results,
    _chat_tools,
    _gemini_results,
    _gemini_tools,
    gemini_env,
    gemini_signs_in_with_a_key,
    opencode_uses,
)

pytestmark = pytest.mark.slow

HOOK_MARK = "agent-mem-vault: project memory"


def _calls(transcript: Transcript) -> list[ToolCall]:
    return [e for e in transcript.entries if isinstance(e, ToolCall)]


def _check_killed_session(transcript: Transcript, world: World, *, running: ToolCall) -> None:
    """What every reader must get from the killed session; ``running`` is the call
    it was running when killed, as far as the client recorded it."""
    said = f"{transcript}"
    users = [e.text for e in transcript.entries if isinstance(e, UserMessage)]
    assert users and REQUEST in users[0], said
    assert not any(HOOK_MARK in u for u in users), f"hook text read as the person's: {said}"
    calls = _calls(transcript)
    edits = [c for c in calls if c.kind == "edit"]
    assert edits and all(c.finished for c in edits), said
    assert any(p.endswith(EDITED) for c in edits for p in c.paths), said
    commands = [c for c in calls if c.kind == "command"]
    assert [(c.command, c.exit_status, c.finished) for c in commands if c.finished] == [
        (FAILING, 3, True)
    ], said
    assert calls[-1] == running and [c for c in calls if not c.finished] == [running], said
    assert (world.repo / EDITED).read_text() == EDITED_TEXT


# -- Gemini CLI ---------------------------------------------------------------


def _gemini_steps() -> Steps:
    def is_session(seen: Seen) -> bool:
        return "run_shell_command" in _gemini_tools(seen.body)

    return Steps(
        edit=lambda path: Reply(
            tool="write_file", args={"file_path": path, "content": EDITED_TEXT}
        ),
        shell=lambda command: Reply(
            tool="run_shell_command", args={"command": command, "description": "checks"}
        ),
        results=lambda seen: len(_gemini_results(seen.body)),
        is_session=is_session,
    )


def gemini_working(gemini: Path) -> list[str]:
    """Gemini CLI asked to do the killed session's work, with no approvals asked."""
    return [str(gemini), "-p", REQUEST, "-m", GEMINI_MODEL, "--approval-mode", "yolo"]


def gemini_until_killed(world: World) -> tuple[str, str]:
    """Gemini CLI (installed already) works until it is killed: what it printed and
    the scripted model's transcript, for assertion messages."""
    gemini = client("gemini")
    gemini_signs_in_with_a_key(world)
    with ScriptedModel("gemini", script(world, _gemini_steps())) as model:
        said = run_until_killed(
            world, gemini_working(gemini), gemini_env(model), gemini_recorded(world)
        )
        return said, model.transcript()


def _gemini_session(world: World) -> Path:
    """Gemini CLI works and is killed; the path of the chat file it recorded."""
    world.amv("install", "gemini")
    said, transcript = gemini_until_killed(world)
    chats = sorted((world.home / ".gemini" / "tmp").glob("*/chats/session-*.jsonl"))
    assert len(chats) == 1, f"chat files: {chats}\n{said}\n{transcript}"
    return chats[0]


@pytest.fixture(scope="module")
def gemini_chat(tmp_path_factory: pytest.TempPathFactory) -> tuple[World, Path]:
    world = make_world(tmp_path_factory.mktemp("gemini"))
    return world, _gemini_session(world)


def test_gemini_cli_chat_of_a_killed_session_reads_with_its_edit_commands_and_interruption(
    gemini_chat: tuple[World, Path],
) -> None:
    world, chat = gemini_chat
    transcript = gemini_cli.read(str(chat), None)
    # Gemini CLI writes a turn's tool calls once they finish: the running one has no name yet.
    _check_killed_session(
        transcript, world, running=ToolCall(gemini_cli.UNRECORDED, "other", finished=False)
    )
    assert transcript.client == "gemini-cli" and transcript.source == str(chat)


def test_gemini_cli_chat_cut_mid_line_reads_up_to_the_cut(
    gemini_chat: tuple[World, Path], tmp_path: Path
) -> None:
    """Killed while writing the record of the failed command: the rest still reads."""
    _world, chat = gemini_chat
    lines = chat.read_text().splitlines(keepends=True)
    at = max(i for i, line in enumerate(lines) if FAILING in line and '"toolCalls"' in line)
    cut = tmp_path / chat.name
    cut.write_text("".join(lines[:at]) + lines[at][: len(lines[at]) // 2])
    transcript = gemini_cli.read(str(cut), None)
    assert transcript.problems == ("the last line is cut short (the session stopped mid-write)",), (
        transcript.problems
    )
    calls = _calls(transcript)
    assert [c.kind for c in calls] == ["edit", "other"], transcript
    assert calls[-1] == ToolCall(gemini_cli.UNRECORDED, "other", finished=False)
    assert isinstance(transcript.entries[0], UserMessage)
    assert REQUEST in transcript.entries[0].text


def test_gemini_cli_chat_with_records_of_an_unknown_kind_reads_the_rest(
    gemini_chat: tuple[World, Path], tmp_path: Path
) -> None:
    _world, chat = gemini_chat
    lines = chat.read_text().splitlines()
    odd = [json.dumps({"kind": "hologram", "payload": [1, 2]}), "[1, 2, 3]", "not json at all"]
    copy = tmp_path / chat.name
    copy.write_text("\n".join([lines[0], *odd, *lines[1:]]) + "\n")
    transcript = gemini_cli.read(str(copy), None)
    assert transcript.entries == gemini_cli.read(str(chat), None).entries
    assert len(transcript.problems) == 2, transcript.problems  # unknown records, a non-JSON line


def test_gemini_cli_chat_that_is_missing_is_an_empty_transcript_saying_so(tmp_path: Path) -> None:
    transcript = gemini_cli.read(str(tmp_path / "session-gone.jsonl"), "s-1")
    assert transcript.entries == () and transcript.session_id == "s-1"
    assert transcript.problems and "no chat file" in transcript.problems[0]


# -- opencode -----------------------------------------------------------------

PLAN = [
    {
        "id": "1",
        "content": "Fix the rounding in orders.py",
        "status": "in_progress",
        "priority": "high",
    },
    {"id": "2", "content": "Run the checks", "status": "pending", "priority": "medium"},
]


def _opencode_steps() -> Steps:
    return Steps(
        edit=lambda path: Reply(tool="write", args={"filePath": path, "content": EDITED_TEXT}),
        shell=lambda command: Reply(
            tool="bash", args={"command": command, "description": "Run the checks"}
        ),
        results=lambda seen: len(_chat_results(seen.body)),
        is_session=lambda seen: "bash" in _chat_tools(seen.body),
        plan=Reply(tool="todowrite", args={"todos": PLAN}),
    )


def _opencode_config(world: World, model: ScriptedModel) -> None:
    """opencode on the scripted ``model``, allowed to run commands and edit files unasked."""
    opencode_uses(world, model, permission={"bash": "allow", "edit": "allow"})


def _opencode_session(world: World) -> tuple[Path, str]:
    """opencode works and is killed; its database and the session's id."""
    binary = client("opencode")
    world.amv("install", "opencode")
    with ScriptedModel("chat", script(world, _opencode_steps())) as model, NoRegistry() as npm:
        _opencode_config(world, model)
        env = {**OPENCODE_QUIET, "npm_config_registry": npm.url}
        said = run_until_killed(world, [str(binary), "run", REQUEST], env, opencode_recorded(world))
        transcript = model.transcript()
    db = opencode.default_database(world.home / ".local" / "share")
    assert db.exists(), f"no database at {db}\n{said}\n{transcript}"
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        ids = [row[0] for row in conn.execute("SELECT id FROM session")]
    assert len(ids) == 1, f"sessions: {ids}\n{said}"
    return db, ids[0]


@pytest.fixture(scope="module")
def opencode_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[World, Path, str]:
    world = make_world(tmp_path_factory.mktemp("opencode"))
    return (world, *_opencode_session(world))


def _copy_db(db: Path, to: Path) -> Path:
    """The database with its WAL and shared-memory files, as the killed client left them."""
    to.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        if Path(f"{db}{suffix}").exists():
            shutil.copy2(f"{db}{suffix}", to / f"{db.name}{suffix}")
    return to / db.name


def test_opencode_session_of_a_killed_client_reads_with_its_plan_edit_and_interruption(
    opencode_db: tuple[World, Path, str],
) -> None:
    world, db, session = opencode_db
    files = {p.name: p.stat().st_mtime_ns for p in db.parent.iterdir()}
    transcript = opencode.read(str(db), session)
    _check_killed_session(
        transcript, world, running=ToolCall("bash", "command", command=LONG, finished=False)
    )
    plans = [e for e in transcript.entries if isinstance(e, TodoList)]
    assert plans and [(i.text, i.status) for i in plans[-1].items] == [
        (t["content"], t["status"]) for t in PLAN
    ], transcript
    assert transcript.session_id == session and transcript.problems == (), transcript
    # Read-only: no checkpoint, no file opencode keeps changed or removed.
    assert {p.name: p.stat().st_mtime_ns for p in db.parent.iterdir()} == files


def test_opencode_rows_of_a_killed_client_are_read_from_the_wal(
    opencode_db: tuple[World, Path, str],
) -> None:
    """After SIGKILL the session's rows are in the -wal file: that is what gets read."""
    _, db, session = opencode_db
    assert Path(f"{db}-wal").stat().st_size > 0
    assert any(isinstance(e, ToolCall) for e in opencode.read(str(db), session).entries)


def test_opencode_without_a_session_id_reads_the_latest_and_says_so(
    opencode_db: tuple[World, Path, str],
) -> None:
    _, db, session = opencode_db
    transcript = opencode.read(str(db), None)
    assert transcript.session_id == session and transcript.entries
    assert any("most recently updated" in p for p in transcript.problems)


def test_opencode_parts_of_an_unknown_kind_or_damaged_are_skipped_with_a_problem(
    opencode_db: tuple[World, Path, str], tmp_path: Path
) -> None:
    _, db, session = opencode_db
    copy = _copy_db(db, tmp_path / "copy")
    with sqlite3.connect(copy) as conn:
        row = conn.execute(
            "SELECT id, message_id, time_created, time_updated FROM part "
            "WHERE session_id = ? ORDER BY id DESC LIMIT 1",
            (session,),
        ).fetchone()
        for n, data in enumerate(['{"type": "hologram"}', "not json", '"a string"']):
            conn.execute(
                "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (f"{row[0]}x{n}", row[1], session, row[2], row[3], data),
            )
    transcript = opencode.read(str(copy), session)
    assert transcript.entries == opencode.read(str(db), session).entries
    assert sorted(transcript.problems) == [
        "1 part(s) of a kind this reader does not know; skipped",
        "2 part(s) without a readable type; skipped",
    ], transcript.problems


def test_opencode_database_locked_by_a_writer_is_a_problem_not_an_error(
    opencode_db: tuple[World, Path, str], tmp_path: Path
) -> None:
    _, db, session = opencode_db
    copy = _copy_db(db, tmp_path / "locked")
    writer = sqlite3.connect(copy, isolation_level=None)
    try:
        writer.execute("PRAGMA journal_mode = DELETE")  # a rollback journal: readers wait
        writer.execute("BEGIN EXCLUSIVE")
        transcript = opencode.read(str(copy), session)
    finally:
        writer.close()
    assert transcript.entries == () and transcript.session_id == session
    assert transcript.problems and "locked" in transcript.problems[0], transcript.problems


def test_opencode_database_that_is_missing_or_not_sqlite_is_an_empty_transcript(
    tmp_path: Path,
) -> None:
    missing = opencode.read(str(tmp_path / "opencode.db"), "ses_1")
    assert missing.entries == () and "no opencode database" in missing.problems[0]
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not a database" * 100)
    damaged = opencode.read(str(garbage), "ses_1")
    assert damaged.entries == () and "could not read" in damaged.problems[0], damaged


def test_gemini_cli_chat_longer_than_the_read_window_is_read_from_its_end(
    gemini_chat: tuple[World, Path], tmp_path: Path
) -> None:
    """A long session: only the newest part is read (a session start waits for it)."""
    _, chat = gemini_chat
    lines = chat.read_text().splitlines(keepends=True)
    filler = json.dumps({"$set": {"lastUpdated": "2026-01-01T00:00:00.000Z", "pad": "x" * 900}})
    long = tmp_path / chat.name
    long.write_text(lines[0] + (filler + "\n") * 2_500 + "".join(lines[1:]))
    transcript = gemini_cli.read(str(long), None)
    assert transcript.entries == gemini_cli.read(str(chat), None).entries
    assert len(transcript.problems) == 1 and "only the last 1 MB" in transcript.problems[0]


def test_opencode_session_longer_than_the_read_window_is_read_from_its_end(
    opencode_db: tuple[World, Path, str], tmp_path: Path
) -> None:
    _, db, session = opencode_db
    copy = _copy_db(db, tmp_path / "long")
    with sqlite3.connect(copy) as conn:
        message, created = conn.execute(
            "SELECT id, time_created FROM message WHERE session_id = ? ORDER BY id LIMIT 1",
            (session,),
        ).fetchone()
        thought = json.dumps({"type": "reasoning", "text": "x" * 10_000})
        conn.executemany(
            "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            [
                (f"prt_0000{n:05d}", message, session, created - 1, created, thought)
                for n in range(250)
            ],
        )
    transcript = opencode.read(str(copy), session)
    assert transcript.entries == opencode.read(str(db), session).entries
    assert len(transcript.problems) == 1 and "only the newest 1 MB" in transcript.problems[0]
