"""A read killed while its claim is on the wire, in layout 2 (docs/sync.md): put back when
the claim never landed; stranded, said and reopened in one command when it did."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent_mem_vault.vault import Vault
from tests.git_remote import GitDaemon, git

from .conftest import NS, Machine

pytestmark = pytest.mark.slow

READER = r"""
import sys
from agent_mem_vault.vault import Vault

Vault(sys.argv[1]).read_handoff(agent="codex", namespace=sys.argv[2])
print("answered")
"""
# On the remote: a push that creates a claim ref waits there, after the marker file says
# so, then is taken (exit 0) or refused (exit 1).
HOOK = """#!/bin/sh
claim=no
while read old new ref; do
  case "$ref" in */_claim/*) claim=yes;; esac
done
if [ "$claim" = yes ]; then touch "{marker}"; sleep 3; exit {status}; fi
exit 0
"""


@pytest.fixture(autouse=True)
def _layout_two(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_MEM_VAULT_SYNC_AUTO", "off")
    monkeypatch.setenv("AGENT_MEM_VAULT_SYNC_LAYOUT", "2")


def _descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (the git push it started runs in a session of
    its own, which a kill of the reader's group would miss)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        todo.extend(children.get(current, ()))
    return out


def _read_killed_on_the_wire(vault: Vault, remote: Path, tmp_path: Path, status: int) -> None:
    """A reader of ``vault`` in a process of its own, killed (with its git) while the
    remote holds its claim's push; the remote then takes it (``status`` 0) or not. The
    remote is served by git daemon, as one across the network is: its side of the push
    is no process of the reader's, and goes on when the reader is killed."""
    marker = tmp_path / "on-the-wire"
    hook = remote / "hooks" / "pre-receive"
    hook.write_text(HOOK.format(marker=marker, status=status))
    hook.chmod(0o755)
    vault.close()
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(vault.path), NS],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert reader.poll() is None, reader.communicate()
        assert time.monotonic() < deadline, "the claim's push never reached the remote"
        time.sleep(0.01)
    for pid in reversed(_descendants(reader.pid)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    out, _err = reader.communicate(timeout=30)
    assert "answered" not in out
    time.sleep(3.5)  # the hook ends, and the remote takes the push or refuses it
    hook.unlink()


def _claims(remote: Path) -> list[str]:
    out = git("for-each-ref", "--format=%(refname)", "refs/agent-mem-vault-sync/", cwd=remote)
    return [r.rsplit("/", 1)[-1] for r in out.split() if "/_claim/" in r]


def test_a_reader_killed_before_its_claim_landed_puts_the_handoff_back_at_the_next_start(
    machine: Machine, remote: Path, tmp_path: Path
) -> None:
    with GitDaemon(remote.parent) as daemon:
        _put_back(machine, remote, daemon.url(remote.name), tmp_path)


def _put_back(machine: Machine, remote: Path, url: str, tmp_path: Path) -> None:
    a, b = machine("a"), machine("b")
    a.join_remote(url)
    b.join_remote(url)
    h = a.create_handoff(to="codex", summary="S", context="C", namespace=NS)
    a.sync()
    b.sync()
    _read_killed_on_the_wire(b, remote, tmp_path, status=1)
    assert _claims(remote) == []
    b = Vault(b.path, durable=False)
    assert b.get_handoff(h.id).status == "read"  # as the killed read left it
    b.sync()  # the next to take the route's turn settles it
    assert b.get_handoff(h.id).status == "pending"
    assert b.sync_status()[0].stranded == {}
    got = b.read_handoff(agent="codex", namespace=NS)
    assert got is not None and got.id == h.id
    a.sync()
    assert a.read_handoff(agent="codex", namespace=NS) is None
    b.close()


def test_a_reader_killed_after_its_claim_landed_leaves_it_stranded_said_and_reopened(
    machine: Machine, remote: Path, tmp_path: Path
) -> None:
    with GitDaemon(remote.parent) as daemon:
        _stranded_and_reopened(machine, remote, daemon.url(remote.name), tmp_path)


def _stranded_and_reopened(machine: Machine, remote: Path, url: str, tmp_path: Path) -> None:
    a, b = machine("a"), machine("b")
    a.join_remote(url)
    b.join_remote(url)
    h = a.create_handoff(to="codex", summary="S", context="C", namespace=NS)
    a.sync()
    b.sync()
    _read_killed_on_the_wire(b, remote, tmp_path, status=0)
    assert _claims(remote) == [h.id]  # it landed: whether its agent got it, nobody knows
    b = Vault(b.path, durable=False)
    b.sync()
    [status] = b.sync_status()
    assert list(status.stranded) == [h.id]
    assert any(f"agent-mem-vault sync reopen-stranded {h.id}" in line for line in status.problems())
    a.sync()
    assert a.read_handoff(agent="codex", namespace=NS) is None  # read for the team
    shown = subprocess.run(
        [
            Path(sys.executable).parent / "agent-mem-vault",
            "sync",
            "reopen-stranded",
            h.id,
            "--vault",
            b.path,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    assert h.id in shown.stdout
    assert b.sync_status()[0].stranded == {}
    assert _claims(remote) == []  # the reopen took the claim ref away
    a.sync()
    again = a.read_handoff(agent="codex", namespace=NS)
    assert again is not None and again.id == h.id
    b.close()
