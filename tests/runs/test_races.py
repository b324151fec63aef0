"""Races between OS processes on one SQLite file: takeover, and handoffs at most once."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_mem_vault.runs import RunRegistry
from agent_mem_vault.store import sqlite_persistence

WORKER = Path(__file__).with_name("race_worker.py")
pytestmark = pytest.mark.slow


def _spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _collect(procs: list[subprocess.Popen[str]], go: Path) -> list[dict[str, Any]]:
    for proc in procs:  # every worker has imported and opened the database
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip() == "ready", (line, proc.stderr.read() if proc.stderr else "")
    go.touch()
    outs = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 0, stderr
        outs.append(json.loads(stdout))
    return outs


def _registry(tmp_path: Path) -> tuple[Path, RunRegistry]:
    """A registry in a SQLite file that worker processes open too."""
    db = tmp_path / "runs.db"
    return db, RunRegistry(sqlite_persistence(db), lease_seconds=60)


async def test_runs_started_by_racing_processes_form_one_chain_with_one_current_run(
    tmp_path: Path,
) -> None:
    db, registry = _registry(tmp_path)
    first = await registry.start_run("bot")
    workers = 4
    go = tmp_path / "go"
    outs = _collect(
        [_spawn("takeover", str(db), "bot", str(go), str(workers)) for _ in range(workers)], go
    )
    current = [o for o in outs if o["current"]]
    assert len(current) == 1
    states = await registry.list_runs("bot")
    order = [s.info.run for s in states]
    assert order[0] == first.tid
    assert sorted(order[1:]) == sorted(o["run"] for o in outs)
    assert current[0]["run"] == order[-1]
    # Every replaced worker learned who replaced it and wrote that handoff.
    for out in outs:
        if not out["current"]:
            index = order.index(out["run"])
            assert out["by"] == order[index + 1]
            assert out["record"]["toRun"] == order[index + 1]
    await first.write_handoff()
    records = [e.record for e in await registry.handoffs("bot")]
    assert [(r["fromRun"], r["toRun"]) for r in records] == sorted(
        itertools.pairwise(order), key=lambda pair: pair[1]
    )


async def test_racing_processes_writing_the_same_handoff_land_exactly_one_record(
    tmp_path: Path,
) -> None:
    db, registry = _registry(tmp_path)
    old = await registry.start_run("bot")
    new = await registry.start_run("bot")
    go = tmp_path / "go"
    outs = _collect([_spawn("handoff", str(db), "bot", str(go), old.tid) for _ in range(5)], go)
    entries = await registry.handoffs("bot")
    assert len(entries) == 1
    assert entries[0].rkey == new.tid
    # Each process got the record that landed, whichever process wrote it.
    assert all(o["record"] == entries[0].record for o in outs)
    # ... and nobody rewrote it: a document's version grows with every write.
    doc = await registry.store.get("runs.handoffs", f"bot/{new.tid}")
    assert doc is not None and doc.version == 1
