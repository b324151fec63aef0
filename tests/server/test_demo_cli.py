"""``agent-mem-vault demo support`` as a real process: banner, console, offline and with a model."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.harness.openai_wire_server import WireServer, text_reply
from tests.server.support import ADA, BOB, OLGA, PERSON, REFUND, demo_process

pytestmark = pytest.mark.slow


def test_demo_prints_its_url_console_and_logins_and_serves_on_loopback(tmp_path: Path) -> None:
    with demo_process(tmp_path / "desk.db") as (url, banner):
        assert url.startswith("http://127.0.0.1:")
        assert f"Support desk demo at {url}" in banner
        assert f"{url}/console/#token=token-olga" in banner
        for token in ("token-ada", "token-olga", "token-bob"):
            assert token in banner
        assert "rule-based" in banner
        assert httpx.get(f"{url}/console/").status_code == 200
        r = httpx.post(
            f"{url}/api/desk/threads/case-42/messages", json={"text": REFUND}, headers=ADA
        )
        assert r.json()["text"].startswith("billing:\n")
    assert (tmp_path / "desk.db").exists()


def test_demo_keeps_its_threads_in_the_sqlite_file_across_restarts(tmp_path: Path) -> None:
    db = tmp_path / "desk.db"
    with demo_process(db) as (url, _):
        httpx.post(f"{url}/api/desk/threads/case-7/messages", json={"text": REFUND}, headers=ADA)
    with demo_process(db) as (url, _):
        snap = httpx.get(f"{url}/api/desk/threads/case-7", headers=ADA).json()
    assert snap["activeAgent"] == "billing"


@pytest.fixture
def wire() -> Iterator[WireServer]:
    server = WireServer().start()
    yield server
    server.stop()


def test_demo_uses_an_openai_compatible_endpoint_when_configured(
    tmp_path: Path, wire: WireServer
) -> None:
    wire.script(text_reply("Hello from ", "the configured model."))
    env = {
        "AGENT_MEM_VAULT_MODEL": "local-model",
        "OPENAI_BASE_URL": wire.base_url,
        "OPENAI_API_KEY": "sk-local-test",
    }
    with demo_process(tmp_path / "desk.db", env=env) as (url, banner):
        assert "local-model" in banner
        r = httpx.post(
            f"{url}/api/desk/threads/hi/messages", json={"text": "Hello"}, headers=ADA, timeout=30
        )
    assert r.json()["text"] == "Hello from the configured model."
    (request,) = wire.requests
    assert request.body["model"] == "local-model"
    assert request.headers["authorization"] == "Bearer sk-local-test"


def test_demo_lets_the_customer_follow_a_case_the_operator_moved(tmp_path: Path) -> None:
    with demo_process(tmp_path / "desk.db") as (url, _):
        desk = f"{url}/api/desk/threads/case-42"
        httpx.post(f"{desk}/messages", json={"text": REFUND}, headers=ADA)
        httpx.post(f"{desk}/members", json={"userId": "olga", "role": "operator"}, headers=ADA)
        httpx.post(f"{desk}/messages", json={"text": PERSON}, headers=ADA)
        moved = httpx.post(
            f"{desk}/transfer", json={"to": "billing", "note": "Refund for order 42."}, headers=OLGA
        )
        assert moved.status_code == 200, moved.text
        target = f"{url}/api/billing/threads/{moved.json()['threadId']}"
        # The demo copies the source's members to the target when the host
        # reports the transfer (seed §5: "copy your own access rows there").
        deadline = time.monotonic() + 10
        while (r := httpx.get(target, headers=ADA)).status_code != 200:
            assert time.monotonic() < deadline, r.text
            time.sleep(0.1)
        assert r.json()["messages"][0]["parts"][0]["text"] == "Refund for order 42."
        assert httpx.get(target, headers=BOB).status_code == 404
