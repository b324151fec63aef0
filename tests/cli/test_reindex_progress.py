"""``reindex`` shows a progress bar to a person at a terminal, and never to a script."""

from __future__ import annotations

import os
import pty
import subprocess
from pathlib import Path

from agent_mem_vault.vault import Vault
from tests.cli_process import BIN, cli_env

from .test_vault_cli import NS, run


def _vault_with_notes(path: Path, count: int) -> Path:
    vault = Vault(path, durable=False)
    vault.init()
    for i in range(count):
        vault.save_memory(namespace=NS, title=f"note {i}", content="c")
    vault.close()
    return path


def _run_on_a_terminal(vault: Path, *args: str) -> str:
    """Run the CLI with stdout and stderr on a pseudo-terminal; all it wrote."""
    leader, follower = pty.openpty()
    env = cli_env(vault=vault, COLUMNS="100")
    proc = subprocess.Popen(
        [str(BIN), *args], stdout=follower, stderr=follower, stdin=subprocess.DEVNULL, env=env
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 4096)
        except OSError:  # EIO: the process closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    assert proc.wait(timeout=120) == 0
    return b"".join(chunks).decode("utf-8", "replace")


def test_reindex_on_a_terminal_shows_a_progress_bar(tmp_path: Path) -> None:
    vault = _vault_with_notes(tmp_path / "vault", 600)
    out = _run_on_a_terminal(vault, "reindex")
    assert "Indexing notes" in out and "100%" in out
    assert "Indexed 0 handoffs and 600 memories" in out


def test_reindex_with_json_or_piped_shows_no_progress_bar(tmp_path: Path) -> None:
    vault = _vault_with_notes(tmp_path / "vault", 20)
    on_terminal = _run_on_a_terminal(vault, "reindex", "--json")
    assert "Indexing" not in on_terminal and '"memories": 20' in on_terminal
    piped = run(vault, "reindex")
    assert "Indexing" not in piped.stdout + piped.stderr
    assert piped.stdout.startswith("Indexed 0 handoffs and 20 memories")
