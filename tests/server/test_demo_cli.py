"""``agent-mem-vault demo support`` as a real process: banner, console, offline and with a model."""

from __future__ import annotations

import signal
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.cli_process import BIN, run_process, succeeded
from tests.harness.openai_wire_server import WireServer, text_reply
from tests.server.support import (
    ADA,
    BOB,
    OLGA,
    PERSON,
    REFUND,
    demo_process,
    demo_says_hello,
    running_demo,
)

pytestmark = pytest.mark.slow


OFFLINE = {
    # No model configured, and an endpoint that would fail if anything called it.
    "AGENT_MEM_VAULT_MODEL": None,
    "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
    "OPENAI_API_KEY": None,
    "HTTP_PROXY": "http://127.0.0.1:9",
    "HTTPS_PROXY": "http://127.0.0.1:9",
}


def test_demo_support_prints_its_url_and_works_offline(tmp_path: Path) -> None:
    with demo_process(tmp_path / "desk.db", env=OFFLINE) as (url, banner):
        assert url.startswith("http://127.0.0.1:")
        assert f"Support desk demo at {url}" in banner
        assert f"{url}/console/#token=token-olga" in banner
        for token in ("token-ada", "token-olga", "token-bob"):
            assert token in banner
        assert "rule-based" in banner
        assert httpx.get(f"{url}/console/").status_code == 200
        # The harness design's whole desk story, with no model anywhere.
        desk = f"{url}/api/desk/threads/case-42"
        r = httpx.post(f"{desk}/messages", json={"text": REFUND}, headers=ADA)
        assert r.json()["text"].startswith("billing:\n")
        httpx.post(f"{desk}/members", json={"userId": "olga", "role": "operator"}, headers=ADA)
        r = httpx.post(f"{desk}/messages", json={"text": PERSON}, headers=ADA)
        assert r.json()["status"] == "interrupted"
        reply = {"text": "Olga here.", "as": "operator"}
        assert httpx.post(f"{desk}/messages", json=reply, headers=OLGA).json()["status"] == "sent"
        wait = httpx.get(desk, headers=OLGA).json()["pendingWaits"][0]["waitId"]
        answer = {"questionId": wait, "value": {"handBack": "billing"}}
        assert httpx.post(f"{desk}/answer", json=answer, headers=OLGA).is_success
        r = httpx.post(f"{desk}/messages", json={"text": "Is my refund done?"}, headers=ADA)
        assert r.json()["status"] == "completed"
        assert "(I am a rule-based demo model" in r.json()["text"]
    assert (tmp_path / "desk.db").exists()


def test_demo_listens_on_loopback_only_by_default(tmp_path: Path) -> None:
    tcp = Path("/proc/net/tcp")
    if not tcp.exists():
        pytest.skip("needs Linux's /proc/net/tcp to see which address a socket listens on")

    def listening(table: Path, port: int) -> list[str]:
        if not table.exists():
            return []
        rows = (line.split() for line in table.read_text().splitlines()[1:])
        # fields: sl, local address (hex ip:port), remote address, state (0A = LISTEN)
        return [f[1] for f in rows if f[3] == "0A" and int(f[1].split(":")[1], 16) == port]

    with demo_process(tmp_path / "desk.db") as (url, _):
        port = int(url.rsplit(":", 1)[1])
        v4, v6 = listening(tcp, port), listening(Path("/proc/net/tcp6"), port)
    assert (v4, v6) == ([f"0100007F:{port:04X}"], [])  # 127.0.0.1, and nothing else


def test_demo_keeps_its_threads_in_the_sqlite_file_across_restarts(tmp_path: Path) -> None:
    db = tmp_path / "desk.db"
    with demo_process(db) as (url, _):
        httpx.post(f"{url}/api/desk/threads/case-7/messages", json={"text": REFUND}, headers=ADA)
    with demo_process(db) as (url, _):
        snap = httpx.get(f"{url}/api/desk/threads/case-7", headers=ADA).json()
    assert snap["activeAgent"] == "billing"


def test_demo_warns_when_it_listens_beyond_loopback_only_when_asked(tmp_path: Path) -> None:
    with demo_process(tmp_path / "desk.db") as (_, banner):
        assert "Warning" not in banner
    # 127.0.0.2 is loopback too, but not an address the demo knows as local: it warns.
    with demo_process(tmp_path / "desk.db", bind="127.0.0.2") as (url, banner):
        assert url.startswith("http://127.0.0.2:")
        assert "Warning: listening on 127.0.0.2, beyond this machine" in banner
        assert "public demo tokens" in banner


@pytest.fixture
def wire() -> Iterator[WireServer]:
    server = WireServer().start()
    yield server
    server.stop()


def test_demo_uses_an_openai_compatible_endpoint_when_configured(
    tmp_path: Path, wire: WireServer
) -> None:
    wire.script(text_reply("Hello from ", "the configured model."))
    said = demo_says_hello(
        tmp_path / "desk.db",
        "local-model",
        OPENAI_BASE_URL=wire.base_url,
        OPENAI_API_KEY="sk-local-test",
    )
    assert said == "Hello from the configured model."
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
        # reports the transfer (harness design §5: "copy your own access rows there").
        deadline = time.monotonic() + 10
        while (r := httpx.get(target, headers=ADA)).status_code != 200:
            assert time.monotonic() < deadline, r.text
            time.sleep(0.1)
        assert r.json()["messages"][0]["parts"][0]["text"] == "Refund for order 42."
        assert httpx.get(target, headers=BOB).status_code == 404


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["--port", "{busy}"], "port_in_use", "port {busy} is in use"),
        (["--host", "10.255.255.1"], "bad_address", "is not an address of this machine"),
        (["--host", "no-such-host.invalid"], "bad_address", "this machine can resolve"),
    ],
    ids=["port in use", "address not ours", "unknown host"],
)
def test_demo_start_up_failure_is_reported_before_any_banner_with_exit_9(
    tmp_path: Path, args: list[str], code: str, says: str
) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = str(busy.getsockname()[1])
        argv = [a.replace("{busy}", port) for a in args]
        proc = run_process([BIN, "demo", "support", *argv, "--db", tmp_path / "d.db"], timeout=60)
    assert proc.returncode == 9, proc.stderr
    assert proc.stdout == ""  # no banner, no links, no "Press Ctrl+C"
    assert f"[{code}]" in proc.stderr and says.replace("{busy}", port) in proc.stderr
    assert proc.stderr.count("\n") == 1
    assert not (tmp_path / "d.db").exists()


def test_serve_http_port_in_use_is_reported_before_the_banner_with_exit_9(
    tmp_path: Path,
) -> None:
    succeeded(run_process([BIN, "init", "--vault", tmp_path / "v"]))
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = str(busy.getsockname()[1])
        serve = [BIN, "serve", "--agent", "x", "--http", "--port", port]
        proc = run_process([*serve, "--vault", tmp_path / "v"], timeout=60)
    assert proc.returncode == 9, proc.stderr
    assert proc.stderr == (
        f"error: cannot listen on 127.0.0.1:{port}: port {port} is in use (another server "
        "is listening there); stop it or pass --port with a free port [port_in_use]\n"
    )


def test_ctrl_c_stops_the_demo_cleanly_with_a_console_event_stream_open(tmp_path: Path) -> None:
    with running_demo(tmp_path / "desk.db", env=OFFLINE) as demo:
        thread = f"{demo.url}/api/desk/threads/case-7"
        r = httpx.post(f"{thread}/messages", json={"text": REFUND}, headers=ADA, timeout=30)
        assert r.status_code == 200, r.text
        opened = threading.Event()
        ended: list[str] = []

        def watch() -> None:
            with httpx.stream("GET", f"{thread}/events", headers=ADA, timeout=30) as response:
                for _ in response.iter_raw():
                    opened.set()
            ended.append("the stream ended")

        reader = threading.Thread(target=watch, daemon=True)
        reader.start()
        assert opened.wait(30)
        demo.proc.send_signal(signal.SIGINT)
        status = demo.proc.wait(timeout=30)
        reader.join(30)
        assert demo.proc.stdout is not None
        output = demo.proc.stdout.read()
    assert status == 130, output
    assert ended == ["the stream ended"]  # closed as a complete response, not cut
    assert "ASGI callable returned without completing response" not in output
    assert "Traceback" not in output


def test_ctrl_c_ends_the_demo_with_status_130_when_it_was_started_with_sigint_ignored(
    tmp_path: Path,
) -> None:
    """A script's background job starts with SIGINT ignored; the server stops on it all
    the same, and its status says so (as in a terminal), whoever started it."""
    background = tmp_path / "agent-mem-vault"
    background.write_text(f'#!/bin/sh\ntrap "" INT\nexec "{BIN}" "$@"\n')
    background.chmod(0o755)
    with running_demo(tmp_path / "desk.db", env=OFFLINE, cli=background) as demo:
        demo.proc.send_signal(signal.SIGINT)
        status = demo.proc.wait(timeout=30)
        assert demo.proc.stdout is not None
        output = demo.proc.stdout.read()
    assert status == 130, output
    assert "Traceback" not in output
