"""What the session-start check costs: registering the session, and handing off a dead one.

    .venv/bin/python benchmarks/bench_auto_handoff.py            # 10 MB transcript, 21 runs
    .venv/bin/python benchmarks/bench_auto_handoff.py --quick    # 1 MB, 7 runs

Timed in one process with everything imported, as the hook runs in the warm
process (``cli/warm.py``): the median and the slowest wall time of
``SessionBook.start`` calls, and the median CPU time, in milliseconds.

* ``nothing to hand off``: a session starts in a namespace where the session
  before it is still alive (registering its run is all there is);
* ``a dead session with no work``: the session before it has gone, having
  only read (its transcript is looked at and the session settled);
* ``hand off a dead session``: an earlier session's process has gone and its
  Claude Code transcript (``--mb`` MB) holds work: the start reads it, builds
  the note, runs ``git status`` and writes the handoff and the runs record;
* ``read the transcript``: the reader alone on that file;
* ``a start after 20 dead sessions``: twenty earlier sessions with work died
  (one start settles a bounded number of them, the next start the rest);
* ``codex hook, 2,000 rollouts kept``: the whole session-start hook
  (``render_session_start``: registering, settling, the brief) for a Codex
  session whose hook input names no transcript, with ``$CODEX_HOME/sessions``
  holding the rollouts of 2,000 earlier sessions.

The dead sessions are real processes (``sleep``) killed before the start that
hands them off; spawning and killing them is outside the timing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agent_mem_vault.integrations.session_hook import HookInput, render_session_start
from agent_mem_vault.integrations.sessions import SessionBook, SessionStart
from agent_mem_vault.integrations.transcripts import read_transcript
from agent_mem_vault.vault import Vault
from measure import wall_and_cpu_ms

NS = "project/bench"


def jsonl_file(
    path: Path, megabytes: float, turn: Callable[[int], list[Any]], first: Sequence[Any] = ()
) -> Path:
    """A JSON-lines transcript at ``path``: the ``first`` records, then the records of
    ``turn(0)``, ``turn(1)``, … until those turns come to about ``megabytes``."""
    lines = [json.dumps(record) for record in first]
    size, i = 0, 0
    while size < megabytes * 1_000_000:
        for record in turn(i):
            line = json.dumps(record)
            lines.append(line)
            size += len(line) + 1
        i += 1
    path.write_text("\n".join(lines) + "\n")
    return path


def transcript(path: Path, megabytes: float) -> Path:
    """A Claude Code JSONL transcript of about ``megabytes``: turns of edits and commands."""
    filler = "x" * 700

    def records_of_turn(i: int) -> list[Any]:
        return [
            {"type": "user", "message": {"role": "user", "content": f"Step {i}: {filler}"}},
            {
                "type": "assistant",
                "message": {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": f"Working on step {i}."},
                        {
                            "type": "tool_use",
                            "id": f"e{i}",
                            "name": "Edit",
                            "input": {"file_path": f"src/m{i % 50}.py", "old_string": filler},
                        },
                        {
                            "type": "tool_use",
                            "id": f"b{i}",
                            "name": "Bash",
                            "input": {"command": f"pytest tests/test_{i % 30}.py"},
                        },
                    ],
                },
            },
            {
                "type": "user",
                "message": {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": f"e{i}", "content": filler},
                        {"type": "tool_result", "tool_use_id": f"b{i}", "content": filler},
                    ],
                },
            },
        ]

    return jsonl_file(path, megabytes, records_of_turn)


def rollouts(root: Path, count: int) -> Path:
    """``count`` small Codex rollouts in day folders, as ``$CODEX_HOME/sessions`` keeps them."""
    sessions = root / "sessions"
    for i in range(count):
        day = sessions / "2026" / f"{1 + i // 600:02d}" / f"{1 + i % 28:02d}"
        day.mkdir(parents=True, exist_ok=True)
        sid = f"0199{i:08d}-0000-7000-8000-000000000000"
        (day / f"rollout-2026-01-01T00-00-00-{sid}.jsonl").write_text("{}\n")
    return root


def start(book: SessionBook, repo: Path, session: str, pid: int, file: Path | None) -> Any:
    return book.start(
        SessionStart(
            client="claude-code",
            agent="claude-code",
            namespace=NS,
            session_id=session,
            cwd=str(repo),
            transcript=None if file is None else str(file),
            pid=pid,
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 MB transcript, 7 runs")
    parser.add_argument("--mb", type=float, default=None, help="transcript size in MB")
    parser.add_argument("--runs", type=int, default=None)
    args = parser.parse_args()
    mb = args.mb or (1.0 if args.quick else 10.0)
    runs = args.runs or (7 if args.quick else 21)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        repo = root / "repo"
        repo.mkdir()
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        vault = Vault(root / "vault")
        vault.init()
        book = SessionBook(vault)
        file = transcript(root / "big.jsonl", mb)
        holder = subprocess.Popen(["sleep", "3600"])  # a live session process for the starts
        try:
            start(book, repo, "warm-up", holder.pid, None)

            def nothing(i: int) -> Callable[[], Any]:
                return lambda: start(book, repo, f"n{i}", holder.pid, None)

            def idle(i: int) -> Callable[[], Any]:
                victim = subprocess.Popen(["sleep", "3600"])
                start(book, repo, f"i{i}", victim.pid, root / "missing.jsonl")
                victim.kill()
                victim.wait()
                return lambda: start(book, repo, f"j{i}", holder.pid, None)

            def dead(i: int) -> Callable[[], Any]:
                victim = subprocess.Popen(["sleep", "3600"])
                start(book, repo, f"d{i}", victim.pid, file)
                victim.kill()
                victim.wait()
                return lambda: start(book, repo, f"t{i}", holder.pid, None)

            def many(i: int) -> Callable[[], Any]:
                victims = [subprocess.Popen(["sleep", "3600"]) for _ in range(20)]
                for k, victim in enumerate(victims):
                    start(book, repo, f"m{i}-{k}", victim.pid, file)
                for victim in victims:
                    victim.kill()
                    victim.wait()
                return lambda: start(book, repo, f"u{i}", holder.pid, None)

            os.environ["CODEX_HOME"] = str(rollouts(root / "codex", 2000))

            def codex(i: int) -> Callable[[], Any]:
                # Dead sessions an earlier row left for the next start are settled
                # here, outside the timing: this row times a start with none.
                drained = 0
                while start(book, repo, f"s{i}-{drained}", holder.pid, None).received:
                    drained += 1
                hook = HookInput(cwd=str(repo), source="startup", session_id=f"c{i}")
                return lambda: render_session_start(
                    vault, hook, agent="codex", namespace=NS, client="codex"
                )

            rows = [
                ("nothing to hand off", wall_and_cpu_ms(runs, nothing)),
                ("a dead session with no work", wall_and_cpu_ms(runs, idle)),
                (f"hand off a dead session ({mb:g} MB transcript)", wall_and_cpu_ms(runs, dead)),
                (
                    f"read the transcript ({mb:g} MB)",
                    wall_and_cpu_ms(
                        runs, lambda i: lambda: read_transcript("claude-code", str(file), "x")
                    ),
                ),
                (
                    f"a start after 20 dead sessions ({mb:g} MB transcripts)",
                    wall_and_cpu_ms(runs, many),
                ),
                ("codex hook, 2,000 rollouts kept", wall_and_cpu_ms(runs, codex)),
            ]
        finally:
            holder.kill()
            holder.wait()
        handed = len(vault.list_handoffs(namespace=NS, status="all", limit=1000))
    print(f"| session start ({runs} runs) | wall p50 ms | wall max ms | CPU p50 ms |")
    print("|---|---:|---:|---:|")
    for name, (p50, worst, cpu) in rows:
        print(f"| {name} | {p50:.1f} | {worst:.1f} | {cpu:.1f} |")
    print(f"\n{handed} automatic handoffs written (one per dead session: {runs} + {runs} × 20)")


if __name__ == "__main__":
    main()
