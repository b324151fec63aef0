"""Publishing to a real reference PDS (``@atproto/dev-env``) on 127.0.0.1.

The Node side is ``tests/pds/`` (``scripts/test-env.sh`` runs ``npm install``
there). These tests skip only when Node or the package is not installed.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from agent_mem_vault.atproto import RecordValidationError, next_tid, record_cid
from agent_mem_vault.atproto.pds import PdsClient, PublishFailed
from agent_mem_vault.core.clock import utc_now
from agent_mem_vault.core.errors import UnauthenticatedError
from agent_mem_vault.runs import build_handoff_record, check_handoff_record

PDS_DIR = Path(__file__).resolve().parents[1] / "pds"
NSID = "garden.engram.agents.handoff"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pds_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed; the reference PDS (@atproto/dev-env) needs Node 20")
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout
    if int(version.lstrip("v").split(".")[0] or 0) < 20:
        pytest.skip(f"node {version.strip()} is too old; @atproto/dev-env 0.3.215 needs Node 20")
    if not (PDS_DIR / "node_modules" / "@atproto" / "dev-env").is_dir():
        pytest.skip(
            "@atproto/dev-env is not installed in tests/pds: source scripts/test-env.sh "
            "(it runs npm install there)"
        )
    # The PDS logs to stderr; a file, not a pipe, so that it can never fill up and block.
    workdir = tmp_path_factory.mktemp("pds")
    log_path = workdir / "pds.log"
    log = open(log_path, "w")  # noqa: SIM115 (closed in the finally below)
    proc = subprocess.Popen(
        [node, "start.js"],
        cwd=PDS_DIR,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        env={**os.environ, "TMPDIR": str(workdir)},  # its data and blob folders go here
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.append(proc.stdout.readline()))  # type: ignore[union-attr]
    reader.start()
    reader.join(timeout=60)
    try:
        if not lines or not lines[0].strip():
            pytest.fail(f"the reference PDS did not start: {log_path.read_text()[-2000:]}")
        url = json.loads(lines[0])["pdsUrl"]
        # Never anything but loopback.
        assert urlsplit(url).hostname == "127.0.0.1"
        yield url
    finally:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.close()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        proc.stdout.close()
        log.close()


@dataclass(frozen=True)
class Account:
    handle: str
    did: str
    app_password: str


def _account(pds_url: str) -> Account:
    """Create an account over XRPC, and an app password for it."""
    handle = f"u{secrets.token_hex(4)}.test"
    with httpx.Client(base_url=pds_url, timeout=30) as http:
        made = http.post(
            "/xrpc/com.atproto.server.createAccount",
            json={"handle": handle, "email": f"{handle}@example.com", "password": "main-pw-1"},
        )
        made.raise_for_status()
        token = made.json()["accessJwt"]
        app = http.post(
            "/xrpc/com.atproto.server.createAppPassword",
            json={"name": "agent-mem-vault-tests"},
            headers={"Authorization": f"Bearer {token}"},
        )
        app.raise_for_status()
    return Account(handle, made.json()["did"], app.json()["password"])


def _record(**changes: Any) -> dict[str, Any]:
    from_run, to_run = next_tid(), next_tid()
    record = build_handoff_record(from_run=from_run, to_run=to_run, created_at=utc_now())
    record.update(changes)
    return record


async def _client(pds_url: str, transport: httpx.AsyncBaseTransport | None = None) -> PdsClient:
    account = _account(pds_url)
    client = PdsClient(pds_url, transport=transport)
    await client.login(account.handle, account.app_password)
    return client


async def test_login_with_an_app_password_and_publish_gives_the_cid_we_compute(
    pds_url: str,
) -> None:
    async with await _client(pds_url) as pds:
        record = _record()
        result = await pds.publish(record, record["toRun"])
        assert result.outcome == "created"
        assert result.cid == record_cid(record)
        there = await pds.get_record(NSID, record["toRun"])
        assert there is not None
        assert there["value"] == record
        assert there["cid"] == record_cid(record)
        assert there["uri"] == f"at://{pds.session.did}/{NSID}/{record['toRun']}"  # type: ignore[union-attr]


async def test_publishing_again_reports_already_published_and_writes_nothing(
    pds_url: str,
) -> None:
    async with await _client(pds_url) as pds:
        record = _record()
        await pds.publish(record, record["toRun"])
        again = await pds.publish(record, record["toRun"])
        assert again.outcome == "already_published"
        assert again.cid == record_cid(record)


async def test_a_different_record_already_under_the_key_is_reported_as_taken(
    pds_url: str,
) -> None:
    async with await _client(pds_url) as pds:
        record = _record()
        await pds.publish(record, record["toRun"])
        other = {**record, "createdAt": "2030-01-01T00:00:00.000Z"}
        result = await pds.publish(other, record["toRun"])
        assert result.outcome == "taken"
        assert result.record == record
        assert result.cid == record_cid(record)


async def test_put_with_swap_record_null_writes_once_and_then_reports_what_is_there(
    pds_url: str,
) -> None:
    async with await _client(pds_url) as pds:
        record = _record()
        first = await pds.publish(record, record["toRun"], mode="put")
        assert first.outcome == "created"
        same = await pds.publish(record, record["toRun"], mode="put")
        assert same.outcome == "already_published"
        other = {**record, "createdAt": "2030-01-01T00:00:00.000Z"}
        taken = await pds.publish(other, record["toRun"], mode="put")
        assert taken.outcome == "taken"
        assert (await pds.get_record(NSID, record["toRun"]))["value"] == record  # type: ignore[index]


async def test_the_reference_pds_behaves_as_measured(pds_url: str) -> None:
    """The answers the publishing logic is built on (see atproto/pds.py)."""
    async with await _client(pds_url) as pds:
        record = _record()
        rkey = record["toRun"]
        assert await pds.get_record(NSID, rkey) is None  # 400 RecordNotFound underneath
        await pds.create_record(NSID, rkey, record)
        with pytest.raises(Exception) as dup:
            await pds.create_record(NSID, rkey, record)
        assert getattr(dup.value, "status", None) == 500
        other = {**record, "createdAt": "2030-01-01T00:00:00.000Z"}
        with pytest.raises(Exception) as swap:
            await pds.put_record_if_absent(NSID, rkey, other)
        assert (getattr(swap.value, "status", None), getattr(swap.value, "error", None)) == (
            400,
            "InvalidSwap",
        )
        same = await pds.put_record_if_absent(NSID, rkey, record)
        assert not same.get("commit")


class _FailingWrites(httpx.AsyncBaseTransport):
    """Real transport to the PDS, except that writes fail as the test says.

    ``before``: the write never reaches the PDS; ``after``: it lands, then the
    answer is lost (a timeout after the commit).
    """

    def __init__(self, when: str) -> None:
        self.when = when
        self.inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        write = request.url.path.endswith(("createRecord", "putRecord"))
        if write and self.when == "before":
            raise httpx.ConnectError("connection refused (test)", request=request)
        response = await self.inner.handle_async_request(request)
        if write and self.when == "after":
            await response.aread()
            await response.aclose()
            raise httpx.ReadTimeout("timed out (test)", request=request)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_a_write_that_failed_before_landing_raises_publish_failed_and_a_retry_works(
    pds_url: str,
) -> None:
    network = _FailingWrites("before")
    async with await _client(pds_url, network) as pds:
        record = _record()
        with pytest.raises(PublishFailed, match="not there"):
            await pds.publish(record, record["toRun"])
        assert await pds.get_record(NSID, record["toRun"]) is None
        network.when = "never"  # the network is back
        assert (await pds.publish(record, record["toRun"])).outcome == "created"


async def test_a_write_whose_answer_was_lost_is_found_already_published(pds_url: str) -> None:
    async with await _client(pds_url, _FailingWrites("after")) as pds:
        record = _record()
        result = await pds.publish(record, record["toRun"])
        assert result.outcome == "already_published"
        assert result.cid == record_cid(record)


async def test_an_invalid_record_is_not_published(pds_url: str) -> None:
    async with await _client(pds_url) as pds:
        record = _record()
        bad = {**record, "createdAt": "2026-11-30T12:00:00"}
        with pytest.raises(RecordValidationError) as info:
            await pds.publish(bad, record["toRun"])
        assert info.value.field == "createdAt"
        with pytest.raises(RecordValidationError) as info:
            await pds.publish(record, next_tid(), check=check_handoff_record)
        assert info.value.field == "rkey"  # the key is not toRun
        assert await pds.get_record(NSID, record["toRun"]) is None


async def test_a_wrong_password_is_refused(pds_url: str) -> None:
    account = _account(pds_url)
    async with PdsClient(pds_url) as pds:
        with pytest.raises(UnauthenticatedError):
            await pds.login(account.handle, "not-the-password")


def test_runs_publish_on_the_cli_publishes_each_handoff_once(pds_url: str, tmp_path: Path) -> None:
    account = _account(pds_url)
    env = {
        **os.environ,
        "AGENT_MEM_VAULT": str(tmp_path),
        "AGENT_MEM_VAULT_PDS": pds_url,
        "AGENT_MEM_VAULT_PDS_IDENTIFIER": account.handle,
        "AGENT_MEM_VAULT_PDS_PASSWORD": account.app_password,
    }
    cli = [sys.executable, "-m", "agent_mem_vault.cli.main", "runs"]

    def run(*args: str) -> str:
        proc = subprocess.run([*cli, *args], capture_output=True, text=True, env=env)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    init = [sys.executable, "-m", "agent_mem_vault.cli.main", "init"]
    subprocess.run(init, capture_output=True, env=env, check=True)
    for _ in range(3):
        run("start", "bot", "--lease", "0")
    first = json.loads(run("publish", "bot", "--json"))
    assert [p["outcome"] for p in first] == ["created", "created"]
    again = json.loads(run("publish", "bot", "--json"))
    assert [p["outcome"] for p in again] == ["already_published"] * 2
    exported = [json.loads(line) for line in run("export", "bot").splitlines()]
    with httpx.Client(base_url=pds_url) as http:
        for record, published in zip(exported, first, strict=True):
            got = http.get(
                "/xrpc/com.atproto.repo.getRecord",
                params={"repo": account.did, "collection": NSID, "rkey": record["toRun"]},
            ).json()
            assert got["value"] == record
            assert got["cid"] == published["cid"] == record_cid(record)
