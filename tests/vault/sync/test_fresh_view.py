"""A session start and a view never wait on the network when they need not.

The hook and the views (``handoffs``, ``peek``, the MCP listing) use what the
watching syncer fetched; a remote that did not answer is left alone until its
back-off has passed, then asked for a moment only; and every view says how old
this machine's notes are when it shows them without the remote.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agent_mem_vault.core.clock import format_datetime
from agent_mem_vault.integrations.session_hook import HookInput, render_session_start
from agent_mem_vault.vault import Vault
from agent_mem_vault.vault.sync.syncer import syncer_running
from agent_mem_vault.vault.sync.view import FRESH, QUICK, view_age
from tests.cli_process import BIN, cli_env, run_process, succeeded
from tests.git_remote import git_env, remote_tree

from .conftest import NS, Machine

SYNC = ".agent-mem-vault-sync"


def _start(vault: Vault, cwd: Path) -> str:
    return render_session_start(vault, HookInput(cwd=str(cwd)), agent="codex", namespace=NS)


def _state(vault: Vault) -> dict[str, object]:
    data = json.loads((vault.path / SYNC / "vault.state.json").read_text())
    assert isinstance(data, dict)
    return data


def _edit_state(vault: Vault, **changes: object) -> None:
    path = vault.path / SYNC / "vault.state.json"
    path.write_text(json.dumps({**_state(vault), **changes}))


def _point_at(vault: Vault, old: str, url: str) -> None:
    config = vault.path / SYNC / "vault.git" / "config"
    config.write_text(config.read_text().replace(old, url))


def _until(done: Callable[[], object], why: str) -> None:
    deadline = time.monotonic() + 60
    while not done():
        assert time.monotonic() < deadline, why
        time.sleep(0.1)


class Silent:
    """A remote that takes connections and never answers; counts the connections."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.setblocking(False)
        self.held: list[socket.socket] = []
        self.url = f"git://127.0.0.1:{self.sock.getsockname()[1]}/remote.git"

    def connections(self) -> int:
        """Every connection made so far (the kernel queues them whether or not we accept)."""
        while True:
            try:
                conn, _ = self.sock.accept()
            except BlockingIOError:
                return len(self.held)
            self.held.append(conn)

    def close(self) -> None:
        for conn in self.held:
            conn.close()
        self.sock.close()


@pytest.fixture
def silent() -> Iterator[Silent]:
    server = Silent()
    yield server
    server.close()


def test_a_remote_that_did_not_answer_is_not_asked_again_until_its_back_off_has_passed(
    machine: Machine, remote: Path, silent: Silent, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_MEM_VAULT_SYNC_AUTO", "off")  # each fetch is the test's
    monkeypatch.setenv("AGENT_MEM_VAULT_SYNC_BUDGET", "0.5")
    vault = machine("a")
    vault.join_remote(str(remote))
    h = vault.create_handoff(to="codex", summary="Here already", context="C", namespace=NS)
    _point_at(vault, str(remote), silent.url)

    first = _start(vault, tmp_path)
    assert silent.connections() == 1
    assert "did not answer within 0.5 s" in first.splitlines()[0]
    assert "this session starts with the notes on this machine" in first and h.id in first

    # The next sessions do not ask it again while the back-off lasts (1 s after one
    # failure), and say so.
    again = _start(vault, tmp_path)
    assert silent.connections() == 1
    assert "(asked again in" in again.splitlines()[0] and h.id in again
    (status,) = vault.sync_status()
    assert status.failures == 1 and status.ask_after is not None
    env = cli_env(vault=vault.path, **git_env(tmp_path / "home"))
    shown = succeeded(run_process([BIN, "sync", "--status"], env=env, cwd=tmp_path)).stdout
    said = "did not answer 1 time in a row: session starts and views do not ask it again"
    assert f"{said} before {status.ask_after}" in shown

    # Once it has passed, the remote is asked again, but only for a moment.
    _edit_state(vault, ask_after=time.time() - 1)
    third = _start(vault, tmp_path)
    assert silent.connections() == 2
    assert f"did not answer within {QUICK:.2g} s" in third.splitlines()[0]
    assert _state(vault)["failures"] == 2

    # An answering remote again: asked with the whole budget, and the back-off is gone.
    _point_at(vault, silent.url, str(remote))
    _edit_state(vault, ask_after=time.time() - 1)
    fourth = _start(vault, tmp_path)
    assert fourth.startswith("agent-mem-vault: project memory"), fourth
    assert "failures" not in _state(vault) and _state(vault)["error"] is None


def test_a_view_shown_without_the_remote_says_how_old_it_is(
    machine: Machine, remote: Path, silent: Silent, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_MEM_VAULT_SYNC_AUTO", "off")
    monkeypatch.setenv("AGENT_MEM_VAULT_SYNC_BUDGET", "0.5")
    vault = machine("a")
    vault.join_remote(str(remote))
    vault.create_handoff(to="codex", summary="Here already", context="C", namespace=NS)
    _point_at(vault, str(remote), silent.url)
    twelve_minutes_ago = time.time() - 12 * 60
    stamp = format_datetime(datetime.fromtimestamp(twelve_minutes_ago, UTC))
    _edit_state(vault, last_fetch=stamp, last_push=stamp)

    age = vault._port().view_age(NS)  # what the operations' port says of the view
    assert age is not None and 12 * 60 <= age < 13 * 60
    line = _start(vault, tmp_path).splitlines()[0]
    assert line.endswith(
        "this session starts with the notes on this machine, as of the remote 12 min ago"
    ), line

    # The CLI's views say it too, on standard error, and still list what is here.
    env = cli_env(vault=vault.path, **git_env(tmp_path / "home"), AGENT_MEM_VAULT_SYNC_AUTO="off")
    listed = succeeded(run_process([BIN, "handoffs", "-n", NS], env=env, cwd=tmp_path))
    assert "Here already" in listed.stdout
    assert "this shows the notes on this machine, as of the remote 12 min ago" in listed.stderr


def test_a_session_start_lists_what_the_watching_syncer_fetched_without_asking_the_remote(
    machine: Machine, remote: Path, silent: Silent, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A fetch of the syncer's that has started stays unanswered for the rest of the test.
    monkeypatch.setenv("AGENT_MEM_VAULT_SYNC_TIMEOUT", "600")
    laptop, desktop = machine("laptop"), machine("desktop")
    for vault in (laptop, desktop):
        vault.join_remote(str(remote))
    # An agent starts on the desktop: its syncer now watches the remote.
    _start(desktop, tmp_path)
    _until(lambda: syncer_running(desktop.path) is not None, "the desktop's syncer never started")

    h = laptop.create_handoff(to="codex", summary="Sent from the laptop", context="C", namespace=NS)
    laptop.sync()
    _until(
        lambda: h.id in [p.id for p in desktop.list_handoffs(namespace=NS, agent="codex")],
        "the desktop's syncer never fetched the handoff",
    )

    # From now on the remote would hang whoever asked it; a session start does not ask
    # it (the syncer does), and lists the handoff.
    _point_at(desktop, str(remote), silent.url)
    text = _start(desktop, tmp_path)
    assert text.startswith("agent-mem-vault: project memory"), text
    assert f"- {h.id} from " in text and "Sent from the laptop" in text


def test_a_session_start_says_so_when_the_watching_syncer_cannot_reach_the_remote(
    machine: Machine, remote: Path, silent: Silent, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_MEM_VAULT_SYNC_TIMEOUT", "1")  # the syncer's look gives up soon
    vault = machine("a")
    vault.join_remote(str(remote))
    h = vault.create_handoff(to="codex", summary="Here already", context="C", namespace=NS)
    _start(vault, tmp_path)  # an agent here: the syncer watches
    _until(lambda: syncer_running(vault.path) is not None, "the syncer never started")
    _until(lambda: h.path in remote_tree(remote), "the syncer never sent the handoff")
    _point_at(vault, str(remote), silent.url)
    _until(
        lambda: _state(vault).get("failures") and (view_age(_state(vault)) or 0) >= FRESH,
        "the syncer never tried the silent remote",
    )
    text = _start(vault, tmp_path)
    first = text.splitlines()[0]
    assert "did not answer within 1 s" in first, first
    assert "this session starts with the notes on this machine" in first and h.id in text
