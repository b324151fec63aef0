"""The vault as the fault tests drive and inspect it: the real CLI, and its folder on disk.

Each command runs as a process of its own (what a person or a script runs),
outside any git repository (so no namespace is found from git) and with no
keeper, and the folder is looked at directly: its handoffs as listed, and the
temp files a write cut short leaves.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from agent_mem_vault.vault.folder.files import TEMP_FILE
from tests.cli_process import CLI, Proc, run_process

__all__ = ["ENV", "NS", "cli", "listed", "temp_files"]

NS = "project/harbor-api"
ENV = {**os.environ, "AGENT_MEM_VAULT_KEEPER": "off"}


def cli(vault: Path, *args: str) -> Proc:
    """``agent-mem-vault ARGS --vault VAULT``, run in the vault's parent folder."""
    return run_process([*CLI, *args, "--vault", vault], env=ENV, cwd=vault.parent)


def listed(vault: Path) -> list[str]:
    """Ids of every handoff the vault lists, page after page."""
    ids: list[str] = []
    offset: int | None = 0
    while offset is not None:
        done = cli(vault, "handoffs", "--status", "all", "--limit", "1000", "--offset",
                   str(offset), "--json")  # fmt: skip
        assert done.returncode == 0, done.stderr
        page = json.loads(done.stdout)
        ids += [h["id"] for h in page["handoffs"]]
        offset = page["next_offset"]
    return ids


def temp_files(vault: Path) -> list[str]:
    """Temp files of the vault's notes (a write's first half), relative to it."""
    found: list[str] = []
    for folder, dirs, files in os.walk(vault):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        found += [os.path.relpath(os.path.join(folder, f), vault) for f in files]
    return sorted(p for p in found if TEMP_FILE.fullmatch(os.path.basename(p)))
