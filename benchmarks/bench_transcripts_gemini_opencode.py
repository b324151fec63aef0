"""What reading a large Gemini CLI or opencode transcript costs at session start.

    .venv/bin/python benchmarks/bench_transcripts_gemini_opencode.py           # 10 MB, 21 runs
    .venv/bin/python benchmarks/bench_transcripts_gemini_opencode.py --quick   # 1 MB, 7 runs

Each figure is the median (and the slowest) of ``read`` calls in one process,
in milliseconds, on a transcript of about ``--mb`` MB in the client's shape:
turns of a request, a file write and a shell command with its output.

* Gemini CLI: a chat file as the CLI appends it (header, ``$set`` patches, each
  model turn written twice: once when it arrives, once with its finished calls);
* opencode: a WAL-mode SQLite database with the ``session``, ``message``,
  ``part`` and ``todo`` tables (the columns the reader uses), holding the
  session among 20 others of the same size, read read-only.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_mem_vault.integrations.transcripts import Transcript, gemini_cli, opencode
from bench_auto_handoff import jsonl_file
from measure import wall_and_cpu_ms

FILLER = "x" * 700


def gemini_chat(path: Path, megabytes: float) -> Path:
    def records_of_turn(i: int) -> list[Any]:
        user = {"id": f"u{i}", "type": "user", "content": [{"text": f"Step {i}: {FILLER}"}]}
        turn = {"id": f"g{i}", "type": "gemini", "content": "", "model": "m"}
        calls = [
            {
                "id": f"w{i}",
                "name": "write_file",
                "args": {"file_path": f"src/m{i % 50}.py", "content": FILLER},
                "status": "success",
                "result": [{"functionResponse": {"response": {"output": "ok"}}}],
            },
            {
                "id": f"r{i}",
                "name": "run_shell_command",
                "args": {"command": f"pytest -k step{i}"},
                "status": "success",
                "result": [
                    {"functionResponse": {"response": {"output": f"{FILLER}\nExit Code: 1"}}}
                ],
            },
        ]
        return [user, turn, {**turn, "toolCalls": calls}, {"$set": {"lastUpdated": "t"}}]

    first = {"sessionId": "s-1", "projectHash": "p", "startTime": "t", "kind": "main"}
    return jsonl_file(path, megabytes, records_of_turn, first=[first])


def opencode_db(path: Path, megabytes: float, sessions: int = 21) -> Path:
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode = WAL")
    db.executescript(
        """
        CREATE TABLE session (id TEXT PRIMARY KEY, directory TEXT, time_updated INTEGER);
        CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, time_created INTEGER,
                              data TEXT);
        CREATE INDEX message_session ON message (session_id, time_created, id);
        CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, session_id TEXT,
                           time_created INTEGER, data TEXT);
        CREATE INDEX part_session ON part (session_id, time_created, id);
        CREATE TABLE todo (session_id TEXT, content TEXT, status TEXT, position INTEGER);
        """
    )
    for s in range(sessions):
        sid = f"ses_{s:03d}"
        db.execute("INSERT INTO session VALUES (?, '/src/app', ?)", (sid, s))
        size, i = 0, 0
        while size < megabytes * 1_000_000:
            rows = [
                (f"msg_{i:06d}a", "user", {"type": "text", "text": f"Step {i}: {FILLER}"}),
                (
                    f"msg_{i:06d}b",
                    "assistant",
                    {
                        "type": "tool",
                        "tool": "write",
                        "state": {
                            "status": "completed",
                            "input": {"filePath": f"src/m{i % 50}.py", "content": FILLER},
                        },
                    },
                ),
                (
                    f"msg_{i:06d}c",
                    "assistant",
                    {
                        "type": "tool",
                        "tool": "bash",
                        "state": {
                            "status": "completed",
                            "input": {"command": f"pytest -k step{i}"},
                            "metadata": {"exit": 1, "output": FILLER},
                        },
                    },
                ),
            ]
            for n, (mid, role, part) in enumerate(rows):
                t = i * 10 + n
                db.execute(
                    "INSERT INTO message VALUES (?, ?, ?, ?)",
                    (f"{sid}{mid}", sid, t, json.dumps({"role": role})),
                )
                data = json.dumps(part)
                db.execute(
                    "INSERT INTO part VALUES (?, ?, ?, ?, ?)",
                    (f"{sid}prt{mid}", f"{sid}{mid}", sid, t, data),
                )
                size += len(data)
            i += 1
    db.commit()
    db.close()
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=10.0)
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--quick", action="store_true", help="1 MB, 7 runs")
    args = parser.parse_args()
    mb, runs = (1.0, 7) if args.quick else (args.mb, args.runs)
    with tempfile.TemporaryDirectory() as tmp:
        chat = gemini_chat(Path(tmp) / "session-2026-01-01T00-00-s1.jsonl", mb)
        db = opencode_db(Path(tmp) / "opencode.db", mb)
        rows: list[tuple[str, Callable[[], Transcript]]] = [
            ("Gemini CLI chat file", lambda: gemini_cli.read(str(chat), None)),
            ("opencode database", lambda: opencode.read(str(db), "ses_020")),
        ]
        print(f"| transcript ({mb:g} MB) | entries | median ms | slowest ms | median CPU ms |")
        print("|---|---|---|---|---|")
        for name, call in rows:
            entries = len(call().entries)
            median, slowest, cpu = wall_and_cpu_ms(runs, lambda _, call=call: call)
            print(f"| {name} | {entries} | {median:.1f} | {slowest:.1f} | {cpu:.1f} |")


if __name__ == "__main__":
    main()
