"""A writer killed with SIGKILL mid-write: the vault opens and loses nothing acknowledged."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from agent_mem_vault.vault import Vault

from .conftest import NS

pytestmark = pytest.mark.slow

LOOP = """
import sys
from agent_mem_vault.vault import Vault
v = Vault(sys.argv[1])
i = 0
while True:
    h = v.create_handoff(to="codex", summary=f"n{i}", context="y" * 4000,
                         namespace="project/harbor-api", from_="w")
    print("created", h.id, flush=True)
    got = v.read_handoff(agent="codex", namespace="project/harbor-api")
    if got is not None:
        print("read", got.id, flush=True)
    i += 1
"""


@pytest.mark.parametrize("delay", [0.15, 0.4, 0.9])
def test_a_writer_killed_with_sigkill_mid_write_loses_nothing_acknowledged(
    vault_path: Path, delay: float
) -> None:
    Vault(vault_path).init()
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(LOOP), str(vault_path)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()  # wait until it is really writing
    assert first.startswith("created")
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    rest, _ = proc.communicate(timeout=30)
    # Only a whole line is an acknowledgement: the kill may cut the last one.
    lines = [
        line.split() for line in [first, *rest.splitlines(keepends=True)] if line.endswith("\n")
    ]
    created = {words[1] for words in lines if words[:1] == ["created"] and len(words) == 2}
    read = {words[1] for words in lines if words[:1] == ["read"] and len(words) == 2}

    vault = Vault(vault_path)
    for id in created:
        assert vault.get_handoff(id).context == "y" * 4000
    for id in read:
        assert vault.get_handoff(id).status == "read"
    report = vault.doctor()
    assert report.broken == ()
    # The only trace a kill may leave is a temp file; reindex clears it.
    assert all("temp file" in p for p in report.problems), report.problems
    vault.reindex()
    assert vault.doctor().ok
    assert {h.id for h in vault.list_handoffs(namespace=NS, status="all", limit=1000)} >= created
