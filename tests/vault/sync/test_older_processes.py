"""A keeper or syncer left running by an older release is replaced, and nothing is lost.

Both outlive ``pip install -U`` and import some modules late, by the names they
had when they started; when the modules have moved since, those imports fail.
The new code recognises such a process by the layout stamp it did not write,
asks it to leave, and starts its own.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_mem_vault import __version__
from agent_mem_vault.vault.index.keeper_link import (
    SWITCH_ENV,
    KeeperLink,
    keeper_status,
    stop_keeper,
)
from agent_mem_vault.vault.index.schema import MIGRATIONS
from agent_mem_vault.vault.sync.routes import SYNC_DIR
from agent_mem_vault.vault.sync.syncer import LOCK, holder, stop_syncer, syncer_running
from tests.git_remote import remote_tree

from ..conftest import eventually
from .conftest import NS, Machine

OLD_KEY = f"{__version__}/{MIGRATIONS[-1][0]}"
"""The keeper's key as the release before the layers wrote it: no layout in it."""

OLD_KEEPER = f"""
import sys
from pathlib import Path
from agent_mem_vault.vault.index import keeper
keeper.code_key = lambda: {OLD_KEY!r}
sys.exit(keeper.run_keeper(Path(sys.argv[1])))
"""
"""A keeper as an older release left it running: the same watch and answers, its key
without the modules' layout."""

OLD_SYNCER = """
import fcntl, importlib, os, signal, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
os.ftruncate(fd, 0)
os.write(fd, str(os.getpid()).encode())
stopping = []
signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
print("holding", flush=True)
while not stopping:
    try:  # what the old syncer's merge imports late, by its old name
        importlib.import_module("agent_mem_vault.vault.scan")
    except ImportError:
        time.sleep(0.05)  # the old syncer backs off and tries again, sending nothing
sys.exit(0)
"""
"""A syncer as an older release left it running: it holds the syncer lock with its pid
alone, as that release wrote it, and its late imports fail, so it sends nothing."""


def test_a_keeper_an_older_release_left_running_is_replaced(
    machine: Machine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SWITCH_ENV, "always")
    a = machine("a")
    before = a.create_handoff(to="codex", summary="before", context="c", namespace=NS)
    old = subprocess.Popen([sys.executable, "-c", OLD_KEEPER, str(a.path)])
    try:
        assert eventually(lambda: keeper_status(a.path).get("ready") is True)
        assert keeper_status(a.path)["key"] == OLD_KEY
        during = a.create_handoff(to="codex", summary="during", context="c", namespace=NS)
        # The new code does not trust its answer, and asks it to leave.
        assert KeeperLink(a.path).ask() is None
        assert old.wait(timeout=15) == 0
        # A keeper of this release takes its place, and answers.
        assert KeeperLink(a.path).start()
        assert eventually(lambda: keeper_status(a.path).get("ready") is True)
        assert KeeperLink(a.path).ask() is not None
        assert keeper_status(a.path)["key"] != OLD_KEY
        listed = a.list_handoffs(namespace=NS)
        assert {h.id for h in listed} == {before.id, during.id}
    finally:
        stop_keeper(a.path)
        if old.poll() is None:
            old.kill()
            old.wait()


def test_a_syncer_an_older_release_left_running_is_replaced_and_nothing_is_lost(
    machine: Machine, remote: Path
) -> None:
    a = machine("a")
    assert a.join_remote(str(remote)).ok
    assert stop_syncer(a.path)
    old = subprocess.Popen(
        [sys.executable, "-c", OLD_SYNCER, str(a.path / SYNC_DIR / LOCK)],
        stdout=subprocess.PIPE,
    )
    try:
        assert old.stdout is not None and old.stdout.readline() == b"holding\n"
        assert holder(a.path) == (old.pid, "")
        # A write: the journal takes it, and the syncer it wakes is not the old one.
        h = a.create_handoff(to="codex", summary="S", context="C", namespace=NS)
        assert old.wait(timeout=15) == 0
        assert eventually(lambda: h.path in remote_tree(remote), seconds=60)
        pid = syncer_running(a.path)
        assert pid is not None and pid != old.pid
        assert os.path.exists(a.path / h.path)
    finally:
        if old.poll() is None:
            old.kill()
            old.wait()
        if old.stdout is not None:
            old.stdout.close()
