"""``demo support`` sends OpenTelemetry spans to an OTLP endpoint, and runs on a Claude model."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from tests.cli_process import BIN, run_process
from tests.harness.anthropic_wire_server import AnthropicWireServer, text_reply
from tests.server.support import ADA, REFUND, demo_process, demo_says_hello

pytestmark = pytest.mark.slow


class Collector:
    """An OTLP/HTTP collector on loopback: keeps the protobuf bodies POSTed to /v1/traces."""

    def __init__(self) -> None:
        self.posts: list[tuple[str, str, bytes]] = []
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                collector.posts.append((self.path, self.headers.get("content-type", ""), body))
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def span_names(self) -> list[str]:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        names: list[str] = []
        for _, _, body in self.posts:
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            for resource in request.resource_spans:
                service = {a.key: a.value.string_value for a in resource.resource.attributes}
                assert service["service.name"] == "agent-mem-vault-demo"
                for scope in resource.scope_spans:
                    names.extend(s.name for s in scope.spans)
        return names

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def collector() -> Iterator[Collector]:
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="the otlp extra")
    found = Collector()
    yield found
    found.stop()


def test_demo_support_sends_spans_to_the_otlp_endpoint(
    tmp_path: Path, collector: Collector
) -> None:
    with demo_process(tmp_path / "desk.db", args=["--otlp", collector.url]) as (url, banner):
        assert f"Traces (OTLP/HTTP): {collector.url}" in banner
        r = httpx.post(
            f"{url}/api/desk/threads/case-42/messages", json={"text": REFUND}, headers=ADA
        )
        assert r.json()["text"].startswith("billing:\n")
        deadline = time.monotonic() + 15
        while not collector.posts and time.monotonic() < deadline:
            time.sleep(0.1)  # the batch goes out within a second
    assert {path for path, _, _ in collector.posts} == {"/v1/traces"}
    assert all(kind == "application/x-protobuf" for _, kind, _ in collector.posts)
    names = collector.span_names()
    assert names.count("harness.turn") == 1
    assert "harness.handoff" in names
    assert any(name.startswith("chat ") for name in names)


def test_demo_support_refuses_an_otlp_value_that_is_not_a_url(tmp_path: Path) -> None:
    demo = [BIN, "demo", "support", "--otlp", "localhost:4318"]
    done = run_process([*demo, "--db", tmp_path / "d.db"], timeout=60)
    assert done.returncode == 2
    assert "--otlp" in done.stderr and "http(s) URL" in done.stderr
    assert not (tmp_path / "d.db").exists()


def test_demo_uses_anthropic_for_a_claude_model(tmp_path: Path) -> None:
    wire = AnthropicWireServer().start()
    try:
        wire.script(text_reply("Hello from ", "Claude."))
        said = demo_says_hello(
            tmp_path / "desk.db",
            "claude-wire-test",
            ANTHROPIC_BASE_URL=wire.base_url,
            ANTHROPIC_API_KEY="sk-ant-demo",
        )
    finally:
        wire.stop()
    assert said == "Hello from Claude."
    (request,) = wire.requests
    assert request.body["model"] == "claude-wire-test"
    assert "sk-ant-demo" in (
        request.headers.get("x-api-key") or request.headers.get("authorization", "")
    )
