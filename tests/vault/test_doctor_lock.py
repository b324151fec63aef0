"""``doctor`` never reports a healthy vault as damaged, and every writer takes the vault lock.

Writers run in other OS processes (real subprocesses) while ``doctor`` runs
again and again: before the lock, about one doctor run in three saw a write in
flight and called its temp file "left by an interrupted write".
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agent_mem_vault.core.errors import UnavailableError
from agent_mem_vault.runs.models import HandoffEntry
from agent_mem_vault.runs.notes import HandoffNotes
from agent_mem_vault.vault import Vault
from tests.vault_locks import vault_lock_held

WRITER = textwrap.dedent(
    """
    import sys
    from agent_mem_vault.core.errors import UnavailableError
    from agent_mem_vault.runs.models import HandoffEntry
    from agent_mem_vault.runs.notes import HandoffNotes
    from agent_mem_vault.vault import Vault

    root, kind, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    vault, notes = Vault(root), HandoffNotes(root)
    done = 0
    while done < count:
        try:
            if kind == "vault":
                vault.create_handoff(to="codex", summary=f"w{done}", context="c",
                                     namespace="project/busy", from_="writer")
            else:
                tid = f"3m{done:011d}"[:13]
                record = {"fromRun": "3laaaaaaaaaa2", "toRun": tid,
                          "createdAt": "2026-01-01T00:00:00.000Z"}
                notes.write(HandoffEntry("bot", tid, record, "cid", "run"))
        except UnavailableError:
            continue
        done += 1
    print(done)
    """
)


def _entry(tid: str) -> HandoffEntry:
    record = {"fromRun": "3laaaaaaaaaa2", "toRun": tid, "createdAt": "2026-01-01T00:00:00.000Z"}
    return HandoffEntry("bot", tid, record, "cid", "run")


def test_doctor_never_reports_a_healthy_vault_as_damaged_while_others_write(
    vault_path: Path,
) -> None:
    Vault(vault_path).init()
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(vault_path), kind, "40"],
            stdout=subprocess.PIPE,
            text=True,
        )
        for kind in ("vault", "vault", "runs")
    ]
    doctor = Vault(vault_path, lock_timeout=30)
    runs = 0
    try:
        while any(w.poll() is None for w in writers) or runs < 3:
            report = doctor.doctor()
            assert report.ok, report
            runs += 1
    finally:
        outputs = [w.communicate(timeout=120)[0] for w in writers]
    assert [int(o) for o in outputs] == [40, 40, 40]
    assert runs >= 3
    assert doctor.doctor().ok


def test_doctor_waits_for_the_vault_lock_at_most_lock_timeout(vault_path: Path) -> None:
    Vault(vault_path).init()
    with vault_lock_held(vault_path), pytest.raises(UnavailableError) as info:
        Vault(vault_path, lock_timeout=0.3).doctor()
    assert info.value.code == "lock_timeout"


def test_run_notes_are_written_under_the_vault_lock(vault_path: Path) -> None:
    Vault(vault_path).init()
    notes = HandoffNotes(vault_path, lock_timeout=0.3)
    with vault_lock_held(vault_path):
        with pytest.raises(UnavailableError) as info:
            notes.write(_entry("3m00000000002"))
        with pytest.raises(UnavailableError):
            notes.sync([_entry("3m00000000003")])
    assert info.value.code == "lock_timeout"
    assert not (vault_path / "agents").exists()
    written = notes.write(_entry("3m00000000002"))
    assert written.is_file()
    assert notes.sync([_entry("3m00000000002"), _entry("3m00000000003")]) == [
        notes.path(_entry("3m00000000003"))
    ]
