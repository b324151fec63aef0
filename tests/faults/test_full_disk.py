"""A full disk and a read-only one, under a real vault: one clear error, nothing lost.

The vault lives on a tmpfs of a few megabytes (``disks.py``) that a test fills
to its last page. Every command then exits 6 with ``no_space`` (a read may
still answer, exit 0), never 1; no note changes, no temp file stays, the index
keeps every row it had; once the space is freed the next call works with no
command run by a person. A write on a filesystem remounted read-only fails in
one line too. The counts asserted are the handoffs acknowledged, on disk, in
the index, and duplicated.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections import Counter
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from agent_mem_vault.vault import Vault

from .disks import Disk
from .vault_cli import ENV, NS, cli, listed, temp_files


def notes(vault: Path) -> dict[str, bytes]:
    """Every file of the vault but those in its own dot-folders (the index, the runs'
    store), by path: what a person sees."""
    out: dict[str, bytes] = {}
    for folder, dirs, files in os.walk(vault):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            path = Path(folder, name)
            out[path.relative_to(vault).as_posix()] = path.read_bytes()
    return out


def index_rows(vault: Path) -> tuple[int, int]:
    """(handoffs, memories) as the index file holds them, read without the vault."""
    with closing(sqlite3.connect(vault / ".agent-mem-vault" / "index.sqlite3")) as conn:
        handoffs = conn.execute("SELECT count(*) FROM handoffs").fetchone()[0]
        memories = conn.execute("SELECT count(*) FROM memories").fetchone()[0]
    return int(handoffs), int(memories)


def no_space_or_answer(done: subprocess.CompletedProcess[str], disk: Disk) -> str:
    """``ok`` for an answer, else the one error line's code, after checking it is no_space
    and names the full disk's path."""
    assert "Traceback" not in done.stderr, done.stderr
    if done.returncode == 0:
        return "ok"
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert (done.returncode, lines[0][-10:]) == (6, "[no_space]"), done.stderr
    assert "full" in lines[0] and str(disk.path) in lines[0], lines[0]
    return "no_space"


@pytest.fixture
def vault(small_disk: Disk) -> Path:
    path = small_disk.path / "vault"
    assert cli(path, "init").returncode == 0
    return path


def _create(vault: Path, summary: str, *extra: str) -> str:
    done = cli(vault, "create", "--from", "a", "--to", "b", "-n", NS, "-s", summary, "-c", "ctx",
               "--json", *extra)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["id"])


@pytest.mark.slow
def test_every_command_on_a_full_disk_is_no_space_and_changes_nothing(
    vault: Path, small_disk: Disk
) -> None:
    acknowledged = [_create(vault, f"handoff {i}") for i in range(3)]
    assert cli(vault, "ack", acknowledged[2]).returncode == 0
    assert cli(vault, "runs", "start", "support-bot").returncode == 0
    saved = cli(vault, "memory", "save", "-n", NS, "-k", "decision", "-t", "Lock", "-c", "lock")
    assert saved.returncode == 0, saved.stderr
    before, rows = notes(vault), index_rows(vault)
    index_size = (vault / ".agent-mem-vault" / "index.sqlite3").stat().st_size
    small_disk.fill()

    writes: list[list[str]] = [
        ["create", "--from", "a", "--to", "b", "-n", NS, "-s", "new", "-c", "c"],
        ["create", "--to", "b", "-n", NS, "-s", "new", "-c", "c", "--supersedes", acknowledged[0]],
        ["read", "--agent", "b", "-n", NS],
        ["ack", acknowledged[1]],
        ["reopen", acknowledged[2]],
        ["memory", "save", "-n", NS, "-k", "note", "-t", "T", "-c", "c"],
        ["reindex"],
        ["init"],
        ["runs", "start", "support-bot"],
    ]
    reads: list[list[str]] = [
        ["handoffs", "-n", NS],
        ["show", acknowledged[0]],
        ["peek", "--agent", "b", "-n", NS],
        ["memory", "search", "lock"],
        ["brief", "-n", NS],
        ["doctor"],
        ["runs", "status"],
    ]
    outcomes = Counter()
    for args in writes:
        assert no_space_or_answer(cli(vault, *args), small_disk) == "no_space", args
    for args in reads:
        outcomes[no_space_or_answer(cli(vault, *args), small_disk)] += 1
    json_error = cli(vault, "create", "--to", "b", "-n", NS, "-s", "s", "-c", "c", "--json")
    assert json.loads(json_error.stderr)["error"]["code"] == "no_space"

    assert notes(vault) == before, "a note changed on the full disk"
    assert temp_files(vault) == []
    index = vault / ".agent-mem-vault" / "index.sqlite3"
    assert index.stat().st_size >= index_size, "the index was emptied"
    assert not Path(f"{index}.new").exists()

    small_disk.free()  # and no command run by a person: the next call works
    assert index_rows(vault) == rows
    after = _create(vault, "after the disk was freed")
    ids = listed(vault)
    assert sorted(ids) == sorted([*acknowledged, after])
    assert max(Counter(ids).values()) == 1
    assert index_rows(vault) == (rows[0] + 1, rows[1])
    assert cli(vault, "doctor").returncode == 0


def _burst(vault: Path) -> list[dict[str, Any]]:
    """Handoffs created by one process until the disk refuses a few in a row."""
    script = (
        "import json, sys\n"
        "from agent_mem_vault.core.errors import AgentMemVaultError, from_os_error\n"
        "from agent_mem_vault.vault import Vault\n"
        "vault, refused = Vault(sys.argv[1]), 0\n"
        "while refused < 5:\n"
        "    try:\n"
        "        h = vault.create_handoff(to='b', summary='s', context='x' * 3000,\n"
        f"                                 namespace='{NS}', from_='a')\n"
        "    except (AgentMemVaultError, OSError) as exc:\n"
        "        e = from_os_error(exc) if isinstance(exc, OSError) else exc\n"
        "        refused += 1\n"
        "        print(json.dumps({'error': e.code, 'message': e.message}), flush=True)\n"
        "    else:\n"
        "        print(json.dumps({'ok': h.id}), flush=True)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(vault)], capture_output=True, text=True, env=ENV
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


@pytest.mark.slow
def test_writes_that_run_into_a_full_disk_lose_and_duplicate_nothing(
    vault: Path, small_disk: Disk
) -> None:
    small_disk.fill(leave=1 << 20)  # a megabyte left: a few hundred notes, then none
    outcomes = _burst(vault)
    acknowledged = [o["ok"] for o in outcomes if "ok" in o]
    refusals = {o["error"] for o in outcomes if "error" in o}
    assert len(acknowledged) > 10 and refusals == {"no_space"}, outcomes[-5:]
    on_disk = [p.rpartition("/")[2][:-3] for p in notes(vault) if "/handoffs/" in p]
    assert temp_files(vault) == []

    small_disk.free()
    in_index = listed(vault)
    assert sorted(on_disk) == sorted(acknowledged)  # every acknowledged one, nothing else
    assert sorted(in_index) == sorted(acknowledged)
    assert max(Counter(in_index).values()) == 1


def test_reindex_on_a_nearly_full_disk_keeps_the_index_it_had(
    vault: Path, small_disk: Disk
) -> None:
    ids = [_create(vault, f"handoff {i}") for i in range(5)]
    rows = index_rows(vault)
    small_disk.fill(leave=32 << 10)  # room for a note or two, not for a second index
    done = cli(vault, "reindex")
    assert no_space_or_answer(done, small_disk) == "no_space"
    assert index_rows(vault) == rows
    assert not (vault / ".agent-mem-vault" / "index.sqlite3.new").exists()
    small_disk.free()
    assert sorted(listed(vault)) == sorted(ids)
    assert cli(vault, "reindex").returncode == 0


def test_the_index_is_rebuilt_only_when_damaged_and_doctor_says_so(vault: Path) -> None:
    ids = [_create(vault, f"handoff {i}") for i in range(2)]
    index = vault / ".agent-mem-vault" / "index.sqlite3"
    index.write_bytes(b"this is not a database" * 400)
    assert sorted(listed(vault)) == sorted(ids)  # rebuilt from the notes by the call
    done = cli(vault, "doctor")
    assert done.returncode == 0, done.stdout + done.stderr
    rebuilt = [line for line in done.stdout.splitlines() if line.startswith("rebuilt ")]
    assert len(rebuilt) == 1 and "damaged" in rebuilt[0] and "not a database" in rebuilt[0]
    report = json.loads(cli(vault, "doctor", "--json").stdout)
    assert [r["what"] for r in report["repairs"]] == ["rebuilt"]


def test_a_write_on_a_read_only_filesystem_fails_in_one_line_and_keeps_everything(
    vault: Path, small_disk: Disk
) -> None:
    first = _create(vault, "before")
    before, rows = notes(vault), index_rows(vault)
    small_disk.read_only()
    try:
        done = cli(vault, "create", "--to", "b", "-n", NS, "-s", "s", "-c", "c")
        assert done.returncode == 5, done.stderr
        (line,) = done.stderr.strip().splitlines()
        assert line.endswith("[vault_read_only]") and "read-only" in line, line
        assert listed(vault) == [first]  # reads work meanwhile
        assert notes(vault) == before
    finally:
        small_disk.read_only(False)
    assert index_rows(vault) == rows
    second = _create(vault, "after")
    assert sorted(listed(vault)) == sorted([first, second])


def test_the_sqlite_store_on_a_full_disk_answers_no_space_and_loses_nothing(
    small_disk: Disk,
) -> None:
    script = (
        "import asyncio, json, sys\n"
        "from agent_mem_vault.core.errors import AgentMemVaultError\n"
        "from agent_mem_vault.store import sqlite_persistence\n"
        "async def main(path):\n"
        "    store, seq, refused = sqlite_persistence(path), 0, 0\n"
        "    while refused < 3:\n"
        "        try:\n"
        "            await store.append('t', [('m', {'i': seq, 'pad': 'x' * 8000})],\n"
        "                               expected_seq=seq)\n"
        "        except AgentMemVaultError as exc:\n"
        "            refused += 1\n"
        "            print(json.dumps({'error': exc.code}), flush=True)\n"
        "        else:\n"
        "            seq += 1\n"
        "            print(json.dumps({'ok': seq}), flush=True)\n"
        "    await store.close()\n"
        "asyncio.run(main(sys.argv[1]))\n"
    )
    db = small_disk.path / "harness.db"
    small_disk.fill(leave=512 << 10)
    done = subprocess.run([sys.executable, "-c", script, str(db)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    outcomes = [json.loads(line) for line in done.stdout.splitlines()]
    acknowledged = [o["ok"] for o in outcomes if "ok" in o]
    assert acknowledged and {o["error"] for o in outcomes if "error" in o} == {"no_space"}
    small_disk.free()
    with closing(sqlite3.connect(db)) as conn:
        stored = [r[0] for r in conn.execute("SELECT seq FROM logs WHERE stream='t' ORDER BY seq")]
    assert stored == acknowledged  # every acknowledged append, once, and nothing else


def test_a_vault_object_on_a_full_disk_recovers_without_reopening(
    vault: Path, small_disk: Disk
) -> None:
    v = Vault(vault)
    first = v.create_handoff(to="b", summary="s", context="c", namespace=NS, from_="a")
    small_disk.fill()
    with pytest.raises(OSError):
        v.create_handoff(to="b", summary="s", context="c", namespace=NS, from_="a")
    small_disk.free()
    second = v.create_handoff(to="b", summary="s", context="c", namespace=NS, from_="a")
    assert [h.id for h in v.list_handoffs(namespace=NS)] == [second.id, first.id]
