"""``runs stop`` and ``runs publish`` tell the truth: pending records, clashes, network failures.

Real subprocesses of the CLI; the PDS is the reference PDS (tests/pds) where a
real one is the subject, and small local servers on 127.0.0.1 where it
misbehaves (hangs, answers a web page, refuses the connection).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from agent_mem_vault.atproto import record_cid
from agent_mem_vault.core.clock import utc_now
from agent_mem_vault.runs import RunRegistry, RunStopped, build_handoff_record
from agent_mem_vault.store import sqlite_persistence
from agent_mem_vault.vault import Vault
from agent_mem_vault.vault.folder.layout import is_vault
from tests.atproto.test_pds_publish import _account, pds_url

__all__ = ["pds_url"]  # the reference PDS fixture, shared with tests/atproto

CLI = [sys.executable, "-m", "agent_mem_vault.cli.main"]


def _make_vault(vault: Path) -> None:
    """The runs show their notes in a vault, which must be one (``init``)."""
    if not is_vault(vault):
        Vault(vault, durable=False).init()


def _cli(
    *args: str, vault: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    _make_vault(vault)
    environ = {**os.environ, "AGENT_MEM_VAULT": str(vault), **(env or {})}
    environ.pop("AGENT_MEM_VAULT_RUNS_STORE", None)
    return subprocess.run(
        [*CLI, "runs", *args], capture_output=True, text=True, env=environ, timeout=120
    )


def _ok(*args: str, vault: Path, env: dict[str, str] | None = None) -> str:
    proc = _cli(*args, vault=vault, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


# -- stopping ------------------------------------------------------------------
def test_runs_stop_makes_the_next_start_write_the_record_at_once(tmp_path: Path) -> None:
    first = _ok("start", "bot", vault=tmp_path).strip()
    assert _ok("stop", "bot", first, vault=tmp_path).strip() == first
    second = _ok("start", "bot", vault=tmp_path).strip()
    records = [json.loads(line) for line in _ok("export", "bot", vault=tmp_path).splitlines()]
    assert [(r["fromRun"], r["toRun"]) for r in records] == [(first, second)]


def test_runs_start_twice_without_stop_leaves_the_record_pending(tmp_path: Path) -> None:
    _ok("start", "bot", vault=tmp_path)
    _ok("start", "bot", vault=tmp_path)
    assert _ok("export", "bot", vault=tmp_path) == ""
    assert "awaiting handoff" in _ok("status", "bot", vault=tmp_path)


def test_runs_stop_of_a_run_already_taken_over_writes_its_record_now(tmp_path: Path) -> None:
    first = _ok("start", "bot", vault=tmp_path).strip()
    second = _ok("start", "bot", vault=tmp_path).strip()
    _ok("stop", "bot", first, vault=tmp_path)
    (record,) = [json.loads(line) for line in _ok("export", "bot", vault=tmp_path).splitlines()]
    assert (record["fromRun"], record["toRun"]) == (first, second)


def test_runs_stop_of_an_unknown_run_exits_3(tmp_path: Path) -> None:
    _ok("start", "bot", vault=tmp_path)
    proc = _cli("stop", "bot", "3n3l2ul2hzm5s", vault=tmp_path)
    assert proc.returncode == 3 and "run_not_found" in proc.stderr


async def test_run_stop_in_python_writes_at_takeover_once_and_refuses_heartbeats(
    tmp_path: Path,
) -> None:
    registry = RunRegistry(sqlite_persistence(tmp_path / "runs.db"))
    try:
        old = await registry.start_run("bot")
        await old.stop()
        await old.stop()  # idempotent
        with pytest.raises(RunStopped):
            await old.heartbeat()
        new = await registry.start_run("bot")
        (entry,) = await registry.handoffs("bot")
        assert (entry.rkey, entry.record["fromRun"]) == (new.tid, old.tid)
        assert (await old.write_handoff()) == entry.record  # at most once
        assert len(await registry.handoffs("bot")) == 1
    finally:
        await registry.store.close()


# -- misbehaving servers ---------------------------------------------------------
PUBLISH = ["publish", "bot", "--identifier", "me.test", "--password", "pw"]


@contextlib.contextmanager
def _server(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class _Website(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = b"<html><body>Not Found</body></html>"
        self.send_response(404)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_publish_to_a_pds_that_hangs_says_it_timed_out_after_the_timeout(tmp_path: Path) -> None:
    with socket.socket() as hang:  # accepts connections (backlog), never answers
        hang.bind(("127.0.0.1", 0))
        hang.listen()
        url = f"http://127.0.0.1:{hang.getsockname()[1]}"
        proc = _cli(*PUBLISH, "--pds", url, "--timeout", "0.5", vault=tmp_path)
    assert proc.returncode == 8, proc.stderr
    assert "timed out after 0.5 s" in proc.stderr and "[pds_unreachable]" in proc.stderr


def test_publish_to_a_refused_port_says_connection_refused(tmp_path: Path) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}"  # bound, not listening
        proc = _cli(*PUBLISH, "--pds", url, vault=tmp_path)
    assert proc.returncode == 8, proc.stderr
    assert "connection refused" in proc.stderr


def test_publish_to_an_unknown_host_says_it_does_not_resolve(tmp_path: Path) -> None:
    proc = _cli(*PUBLISH, "--pds", "http://no-such-host.invalid", vault=tmp_path)
    assert proc.returncode == 8, proc.stderr
    assert "does not resolve" in proc.stderr


def test_publish_to_a_website_says_it_is_not_a_pds(tmp_path: Path) -> None:
    with _server(_Website) as url:
        proc = _cli(*PUBLISH, "--pds", url, vault=tmp_path)
    assert proc.returncode == 8, proc.stderr
    assert "does not look like a PDS" in proc.stderr and "text/html" in proc.stderr
    assert "[not_a_pds]" in proc.stderr


# -- the reference PDS -------------------------------------------------------------
def _pds_env(pds_url: str) -> dict[str, str]:
    account = _account(pds_url)
    return {
        "AGENT_MEM_VAULT_PDS": pds_url,
        "AGENT_MEM_VAULT_PDS_IDENTIFIER": account.handle,
        "AGENT_MEM_VAULT_PDS_PASSWORD": account.app_password,
    }


@pytest.mark.slow
def test_publish_lists_pending_records_and_publishes_stopped_runs_with_validation_status(
    tmp_path: Path, pds_url: str
) -> None:
    env = _pds_env(pds_url)
    first = _ok("start", "bot", vault=tmp_path).strip()
    second = _ok("start", "bot", vault=tmp_path).strip()
    proc = _cli("publish", "bot", "--json", vault=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []
    assert f"pending: run {first} was taken over by {second}" in proc.stderr
    assert "when its lease lapses at" in proc.stderr
    _ok("stop", "bot", first, vault=tmp_path)
    proc = _cli("publish", "bot", "--json", vault=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    (published,) = json.loads(proc.stdout)
    assert (published["rkey"], published["outcome"]) == (second, "created")
    assert published["validationStatus"] == "unknown"  # the PDS does not know the lexicon
    assert published["cid"] == published["ours"]
    assert "pending" not in proc.stderr


@pytest.mark.slow
def test_publish_wait_waits_for_the_lapsed_lease_then_publishes(
    tmp_path: Path, pds_url: str
) -> None:
    env = _pds_env(pds_url)
    _ok("start", "bot", "--lease", "1", vault=tmp_path)
    second = _ok("start", "bot", vault=tmp_path).strip()
    proc = _cli("publish", "bot", "--json", "--wait", vault=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert [p["rkey"] for p in json.loads(proc.stdout)] == [second]


@pytest.mark.slow
def test_publish_validate_asks_the_pds_which_does_not_know_the_lexicon(
    tmp_path: Path, pds_url: str
) -> None:
    env = _pds_env(pds_url)
    first = _ok("start", "bot", vault=tmp_path).strip()
    _ok("stop", "bot", first, vault=tmp_path)
    _ok("start", "bot", vault=tmp_path)
    proc = _cli("publish", "bot", "--validate", vault=tmp_path, env=env)
    assert proc.returncode == 8, proc.stderr
    assert "publish_failed" in proc.stderr


@pytest.mark.slow
def test_publish_of_a_taken_key_exits_4_with_our_cid_and_theirs(
    tmp_path: Path, pds_url: str
) -> None:
    env = _pds_env(pds_url)
    first = _ok("start", "bot", vault=tmp_path).strip()
    _ok("stop", "bot", first, vault=tmp_path)
    second = _ok("start", "bot", vault=tmp_path).strip()
    ours = json.loads(_ok("export", "bot", vault=tmp_path))
    # Another writer puts a different record under our key first.
    theirs = build_handoff_record(
        from_run=first, to_run=second, created_at=utc_now() + timedelta(seconds=5)
    )
    with httpx.Client(base_url=pds_url, timeout=30) as http:
        session = http.post(
            "/xrpc/com.atproto.server.createSession",
            json={
                "identifier": env["AGENT_MEM_VAULT_PDS_IDENTIFIER"],
                "password": env["AGENT_MEM_VAULT_PDS_PASSWORD"],
            },
        ).json()
        http.post(
            "/xrpc/com.atproto.repo.createRecord",
            json={
                "repo": session["did"],
                "collection": ours["$type"],
                "rkey": second,
                "record": theirs,
            },
            headers={"Authorization": f"Bearer {session['accessJwt']}"},
        ).raise_for_status()
    proc = _cli("publish", "bot", vault=tmp_path, env=env)
    assert proc.returncode == 4, proc.stderr
    assert f"ours {record_cid(ours)}, theirs {record_cid(theirs)}" in proc.stderr
    assert "[record_taken]" in proc.stderr


# -- a run whose process ended -------------------------------------------------------
def test_a_takeover_of_a_run_whose_process_ended_writes_its_record_at_once(
    tmp_path: Path,
) -> None:
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        first = _ok("start", "bot", "--pid", str(worker.pid), vault=tmp_path).strip()
    finally:
        worker.kill()
        worker.wait()
    second = _ok("start", "bot", vault=tmp_path).strip()
    (record,) = [json.loads(line) for line in _ok("export", "bot", vault=tmp_path).splitlines()]
    assert (record["fromRun"], record["toRun"]) == (first, second)


def test_a_run_whose_process_is_alive_stays_pending_after_a_takeover(tmp_path: Path) -> None:
    _ok("start", "bot", "--pid", str(os.getpid()), vault=tmp_path)
    _ok("start", "bot", vault=tmp_path)
    assert _ok("export", "bot", vault=tmp_path) == ""


async def test_a_reused_pid_is_not_taken_for_the_process_that_did_the_run(
    tmp_path: Path,
) -> None:
    from dataclasses import replace

    from agent_mem_vault.runs.process import ProcessId, is_known_dead, process_of

    me = process_of()
    assert me is not None and not is_known_dead(me)
    # Same pid, another start time: the pid was reused, the run's process is gone.
    assert is_known_dead(replace(me, start=me.start - 1))
    # Another boot (or machine): nothing is known, the lease decides.
    assert not is_known_dead(replace(me, start=me.start - 1, boot="another-boot"))
    assert not is_known_dead(ProcessId.from_json({"pid": "x"}))


RUNS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "runs.md"


@pytest.mark.slow
def test_the_manuals_runs_example_as_written_exports_and_publishes_a_record(
    tmp_path: Path, pds_url: str
) -> None:
    text = RUNS_PAGE.read_text()
    block = text[text.index("## From the command line") :].split("```bash\n", 1)[1]
    block = block.split("```", 1)[0]
    bin_dir = str(Path(sys.executable).parent)
    env = {
        **os.environ,
        **_pds_env(pds_url),
        "AGENT_MEM_VAULT": str(tmp_path / "vault"),
        "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
    }
    env.pop("AGENT_MEM_VAULT_RUNS_STORE", None)
    proc = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    exported = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    (record,) = [json.loads(line) for line in exported]
    assert record["$type"] == "garden.engram.agents.handoff"
    assert "created            at://" in proc.stdout
    assert f"/garden.engram.agents.handoff/{record['toRun']}" in proc.stdout
    assert "validationStatus=unknown" in proc.stdout
