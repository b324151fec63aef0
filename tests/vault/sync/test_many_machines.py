"""At most once across machines: 8 clones, each its own HOME and vault, reading 100 pending
handoffs at once through one remote served by ``git daemon`` on loopback; again with the
remote going away in the middle of the run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from agent_mem_vault.vault import Vault
from agent_mem_vault.vault.format.notes import parse_note
from tests.git_remote import GitDaemon, bare_repo, git_env, remote_tree, team_tree

from .conftest import NS

pytestmark = pytest.mark.slow

MACHINES = 8
HANDOFFS = 100
BIN = Path(sys.executable).parent / "agent-mem-vault"

# One machine's reader: reads until the remote says nothing is pending; each delivery is
# written down (and fsynced) before the next read; a refused read is retried.
READER = r"""
import json, os, sys, time
from agent_mem_vault.core.errors import AgentMemVaultError
from agent_mem_vault.vault import Vault

vault_path, out_path, go = sys.argv[1], sys.argv[2], sys.argv[3]
vault = Vault(vault_path)
while not os.path.exists(go):
    time.sleep(0.01)
errors = {}
deadline = time.monotonic() + 300
with open(out_path, "a") as out:
    while time.monotonic() < deadline:
        try:
            h = vault.read_handoff(agent="codex", namespace="project/harbor-api")
        except AgentMemVaultError as exc:
            errors[exc.code] = errors.get(exc.code, 0) + 1
            time.sleep(0.1)
            continue
        if h is None:
            break
        out.write(json.dumps({"id": h.id}) + "\n")
        out.flush()
        os.fsync(out.fileno())
    out.write(json.dumps({"errors": errors, "done": True}) + "\n")
"""


def _machines(tmp_path: Path, url: str, layout: str) -> list[tuple[Path, dict[str, str]]]:
    """Each machine: its vault, joined to the remote, and its environment (its own HOME)."""
    out = []
    for i in range(MACHINES):
        home = tmp_path / f"home-{i}"
        env = {**os.environ, **git_env(home), "AGENT_MEM_VAULT_SYNC_AUTO": "off"}
        env["AGENT_MEM_VAULT_SYNC_LAYOUT"] = layout
        vault = tmp_path / f"vault-{i}"
        proc = subprocess.run(
            [str(BIN), "init", "--vault", str(vault), "--remote", url],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert proc.returncode == 0, proc
        out.append((vault, env))
    return out


def _seed(tmp_path: Path, url: str) -> set[str]:
    seed = Vault(tmp_path / "seed", durable=False)
    seed.init()
    ids = {
        seed.create_handoff(to="codex", summary=f"task {i}", context="C", namespace=NS).id
        for i in range(HANDOFFS)
    }
    report = seed.join_remote(url)
    assert report.ok, report
    return ids


def _delivered(outputs: list[Path]) -> tuple[list[str], list[dict[str, int]], int]:
    ids: list[str] = []
    errors: list[dict[str, int]] = []
    done = 0
    for path in outputs:
        if not path.exists():
            continue
        for line in path.read_text().splitlines():
            item = json.loads(line)
            if "id" in item:
                ids.append(item["id"])
            if item.get("done"):
                done += 1
                errors.append(item["errors"])
    return ids, errors, done


def _run(tmp_path: Path, *, outage: bool, layout: str = "1") -> list[int]:
    """Eight machines reading one remote, which a git daemon serves (and, with
    ``outage``, stops serving for a while mid-run), its route made in ``layout``; how
    many handoffs each machine got."""
    bare_repo(tmp_path / "served" / "vault.git")
    with GitDaemon(tmp_path / "served") as daemon:
        return _run_against(tmp_path, daemon, outage=outage, layout=layout)


def _run_against(tmp_path: Path, daemon: GitDaemon, *, outage: bool, layout: str) -> list[int]:
    url = daemon.url("vault.git")
    os.environ["AGENT_MEM_VAULT_SYNC_LAYOUT"] = layout  # the seed, in this process
    try:
        ids = _seed(tmp_path, url)
    finally:
        del os.environ["AGENT_MEM_VAULT_SYNC_LAYOUT"]
    machines = _machines(tmp_path, url, layout)
    go = tmp_path / "go"
    outputs = [tmp_path / f"delivered-{i}.jsonl" for i in range(MACHINES)]
    readers = [
        subprocess.Popen(
            [sys.executable, "-c", READER, str(vault), str(out), str(go)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for (vault, env), out in zip(machines, outputs, strict=True)
    ]
    went_away = threading.Event()

    def take_the_remote_away() -> None:
        while len(_delivered(outputs)[0]) < HANDOFFS // 3:
            if all(r.poll() is not None for r in readers):
                return
            time.sleep(0.02)
        daemon.stop()
        went_away.set()
        time.sleep(1.5)
        daemon.start()

    outage_thread = threading.Thread(target=take_the_remote_away) if outage else None
    if outage_thread is not None:
        outage_thread.start()
    go.touch()
    try:
        for reader in readers:
            _out, err = reader.communicate(timeout=600)
            assert reader.returncode == 0, err.decode()
    finally:
        for reader in readers:
            if reader.poll() is None:
                reader.kill()
        if outage_thread is not None:
            outage_thread.join()
    delivered, errors, done = _delivered(outputs)
    assert done == MACHINES
    repeated = [i for i, n in Counter(delivered).items() if n > 1]
    assert repeated == [], f"delivered more than once: {repeated}"
    assert set(delivered) == ids, f"lost: {sorted(ids - set(delivered))}"
    # The remote says the same: every one read, each once, on the machine that got it.
    read = team_tree if layout == "2" else remote_tree
    notes = {
        p: parse_note(t) for p, t in read(daemon.base / "vault.git").items() if "/handoffs/" in p
    }
    assert len(notes) == HANDOFFS
    for note in notes.values():
        assert note is not None and note.meta["status"] == "read" and "also_read" not in note.meta
    if outage:
        assert went_away.is_set()
        unconfirmed = sum(
            e.get("claim_unconfirmed", 0) + e.get("remote_unreachable", 0) for e in errors
        )
        assert unconfirmed > 0, errors  # the remote did go away under the readers
    return [sum(1 for line in out.read_text().splitlines() if '"id"' in line) for out in outputs]


def test_eight_machines_reading_at_once_deliver_each_handoff_exactly_once(
    tmp_path: Path,
) -> None:
    _run(tmp_path, outage=False)


def test_eight_machines_with_the_remote_going_away_mid_run_lose_and_repeat_nothing(
    tmp_path: Path,
) -> None:
    _run(tmp_path, outage=True)


def test_eight_machines_on_a_log_each_deliver_each_handoff_exactly_once_and_each_gets_some(
    tmp_path: Path,
) -> None:
    got = _run(tmp_path, outage=False, layout="2")
    assert all(n > 0 for n in got), got  # claims are shared out, not taken by one machine


def test_eight_machines_on_a_log_each_with_the_remote_going_away_lose_and_repeat_nothing(
    tmp_path: Path,
) -> None:
    _run(tmp_path, outage=True, layout="2")
