"""Writers SIGKILLed in the middle of their writes: nothing acknowledged is lost or
doubled, and the vault cleans up after them by itself.

Each writer is a process creating handoffs in a loop (``vault_writer.py``); the
test kills them at random moments and starts others. Afterwards every
acknowledged handoff is on disk and in the index once, and the temp file of a
write cut short is gone after the next write, with no ``reindex``: the lock's
journal named it to the next holder (``vault/files.py``), and ``doctor`` says
what was removed.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from agent_mem_vault.vault import Vault

from .vault_cli import ENV, NS, cli, listed, temp_files

ROOT = Path(__file__).resolve().parents[2]


def start_writer(vault: Path, chars: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.faults.vault_writer", str(vault), str(chars)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env=ENV,
    )


def acknowledged_by(proc: subprocess.Popen[str]) -> list[str]:
    """The ids a killed writer printed (what it acknowledged before it died)."""
    assert proc.stdout is not None
    out = proc.stdout.read()
    proc.stdout.close()
    return [json.loads(line)["ok"] for line in out.splitlines() if line.endswith("}")]


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    path = tmp_path / "vault"
    Vault(path).init()
    return path


@pytest.mark.slow
def test_writers_killed_mid_burst_lose_and_double_no_acknowledged_handoff(vault: Path) -> None:
    rng = random.Random(34)
    writers = [start_writer(vault, 2000) for _ in range(4)]
    acknowledged: list[str] = []
    for _ in range(12):
        time.sleep(rng.uniform(0.2, 0.6))
        victim = writers.pop(rng.randrange(len(writers)))
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        acknowledged += acknowledged_by(victim)
        writers.append(start_writer(vault, 2000))
    for proc in writers:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        acknowledged += acknowledged_by(proc)

    assert cli(vault, "create", "--to", "b", "-n", NS, "-s", "next", "-c", "c").returncode == 0
    on_disk = [p.stem for p in (vault / NS / "handoffs").glob("*.md")]
    in_index = listed(vault)
    assert len(acknowledged) > 20
    assert set(acknowledged) <= set(on_disk)  # none lost
    assert max(Counter(acknowledged).values()) == 1
    assert sorted(in_index) == sorted(on_disk)  # each in the index, once
    assert temp_files(vault) == []
    assert cli(vault, "doctor").returncode == 0


def test_the_temp_file_of_a_killed_writer_goes_at_the_next_write_and_doctor_says_so(
    vault: Path,
) -> None:
    writer = start_writer(vault, 150_000)  # big notes, fsynced: long enough to catch
    left: list[str] = []
    try:
        for _ in range(4000):
            writer.send_signal(signal.SIGSTOP)
            left = temp_files(vault)
            if left:
                writer.send_signal(signal.SIGKILL)  # stopped mid-write: its temp file stays
                break
            writer.send_signal(signal.SIGCONT)
            time.sleep(0.001)
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait()
        acknowledged_by(writer)
    if not left:
        pytest.fail("the writer was never caught between making its temp file and renaming it")

    assert all((vault / p).exists() for p in left)
    assert cli(vault, "create", "--to", "b", "-n", NS, "-s", "next", "-c", "c").returncode == 0
    assert temp_files(vault) == []  # removed by that write, with no reindex
    done = cli(vault, "doctor")
    assert done.returncode == 0, done.stdout + done.stderr
    cleaned = [line for line in done.stdout.splitlines() if line.startswith("cleaned ")]
    assert sorted(line.split(": removed ")[1].split(",")[0] for line in cleaned) == left
