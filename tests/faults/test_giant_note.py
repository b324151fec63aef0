"""A giant note (a pasted log) beside ordinary ones: skipped and named, never a stall.

A note file over 1 MiB is not read by the index at all: searches, listings
and the brief never pay for it, and ``doctor`` names it with its size. An
empty note file is skipped and named too. A large note under the limit is
searched, and its excerpt is cut in time bounded by its size (FTS5's own
snippet grew with the square of the matches). How long a search takes beside
a 50 MB note is measured by ``benchmarks/bench_faults.py``, not asserted here.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from agent_mem_vault.vault import Vault

from .vault_cli import NS, cli

LINE = "2030-01-01 INFO backfill zqxworker processed a batch of orders in 12 ms\n"


def memory_note(path: Path, id: str, body: str) -> Path:
    """A memory note as a person or a tool writes it: frontmatter and a body."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"---\ntype: memory\nid: {id}\nnamespace: {NS}\ntitle: service log\nkind: note\n"
        f"created_at: 2030-01-01T00:00:00.000Z\n---\n# service log\n\n{body}",
        encoding="utf-8",
    )
    return path


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    vault = Vault(tmp_path / "vault")
    vault.init()
    vault.save_memory(namespace=NS, title="Batches", content="The backfill runs in batches.")
    return vault


def test_a_note_over_1_mib_is_skipped_and_doctor_names_it_with_its_size(vault: Vault) -> None:
    big = memory_note(vault.path / NS / "memories" / "log.md", "3zzzzzzzzzzz2", LINE * 70_000)
    assert big.stat().st_size > 5_000_000
    search = cli(vault.path, "memory", "search", "zqxworker")
    assert search.returncode == 0 and "No memories match" in search.stdout, search.stderr
    assert [h.memory.title for h in vault.search_memory(query="backfill")] == ["Batches"]

    done = cli(vault.path, "doctor")
    assert done.returncode == 0, done.stdout + done.stderr  # information, not a problem
    size = big.stat().st_size
    reason = f"{size / 1e6:.1f} MB, over the 1 MiB a note may have; not read"
    assert f"skipped: {NS}/memories/log.md: {reason}" in done.stdout
    report = json.loads(cli(vault.path, "doctor", "--json").stdout)
    assert report["skipped"] == [{"path": f"{NS}/memories/log.md", "reason": reason, "size": size}]


def test_an_empty_note_is_skipped_and_doctor_names_it(vault: Vault) -> None:
    (vault.path / NS / "memories" / "draft.md").write_text("")
    (vault.path / NS / "handoffs").mkdir(parents=True, exist_ok=True)
    (vault.path / NS / "handoffs" / "blank.md").write_text("  \n\n")
    report = vault.doctor()
    assert report.ok
    assert [(s.path, s.reason) for s in report.skipped] == [
        (f"{NS}/handoffs/blank.md", "empty file"),
        (f"{NS}/memories/draft.md", "empty file"),
    ]


def test_a_hit_in_a_large_note_shows_the_words_around_its_first_match(vault: Vault) -> None:
    note = memory_note(vault.path / NS / "memories" / "log.md", "3zzzzzzzzzzz2", LINE * 12_000)
    assert 800_000 < note.stat().st_size < 1 << 20
    (hit,) = vault.search_memory(query="zqxworker orders")
    assert hit.memory.title == "service log"
    assert "[zqxworker]" in hit.snippet and "[orders]" in hit.snippet
    assert len(hit.snippet) < 200


def test_an_index_that_read_a_giant_note_whole_skips_it_once_upgraded(vault: Vault) -> None:
    memory_note(vault.path / NS / "memories" / "log.md", "3zzzzzzzzzzz2", LINE * 20_000)
    assert [s.path for s in vault.doctor().skipped] == [f"{NS}/memories/log.md"]
    vault.close()
    # The index as a version without the size limit left it: the note read whole (here, as
    # a plain note), and the migration that marks such notes for reading not applied.
    with closing(sqlite3.connect(vault.path / ".agent-mem-vault" / "index.sqlite3")) as conn:
        conn.execute("UPDATE files SET kind = 'other', problem = NULL WHERE kind = 'skipped'")
        conn.execute("DELETE FROM migrations WHERE name = '0005_skipped_notes'")
        conn.commit()
    assert [s.path for s in Vault(vault.path).doctor().skipped] == [f"{NS}/memories/log.md"]
