"""Helpers for the HTTP tests: the demo desk, logins, and a real uvicorn on loopback."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from tests.cli_process import BIN
from tests.loopback import free_port

ADA = {"authorization": "Bearer token-ada"}
OLGA = {"authorization": "Bearer token-olga"}
BOB = {"authorization": "Bearer token-bob"}

REFUND = "I want a refund for order 42."
PERSON = "I want to talk to a person, please."


class _Server(uvicorn.Server):
    """A uvicorn server that leaves signals alone: Ctrl-C ends the test run, as pytest
    handles it, rather than only this server (uvicorn takes SIGINT and SIGTERM for the
    time it serves, when it runs in the main thread)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@contextlib.asynccontextmanager
async def serve(app: Any, port: int = 0) -> AsyncIterator[str]:
    """Run ``app`` under a real uvicorn on 127.0.0.1 (a free port) in this event loop."""
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        lifespan="off",
        timeout_graceful_shutdown=1,
    )
    server = _Server(config)
    task = asyncio.create_task(server.serve())
    for _ in range(500):
        if server.started:
            break
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)


@dataclass
class Demo:
    """A running ``demo support`` process: where it listens, its banner, the process."""

    url: str
    banner: str
    proc: subprocess.Popen[str]


@contextlib.contextmanager
def demo_process(db: Path, **options: Any) -> Iterator[tuple[str, str]]:
    """As :func:`running_demo` (``options`` are its own); yields (url, its output so far)."""
    with running_demo(db, **options) as demo:
        yield demo.url, demo.banner


@contextlib.contextmanager
def running_demo(
    db: Path,
    env: dict[str, str | None] | None = None,
    bind: str | None = None,
    args: Sequence[str] = (),
    cli: Path = BIN,
) -> Iterator[Demo]:
    """Run ``agent-mem-vault demo support`` (``cli``) as a real process, until the block ends.

    ``env`` adds variables to this process's environment; a None value removes one.
    ``bind`` is passed as ``--host`` (the demo's default when None).
    """
    port = free_port()
    environ = {**os.environ, "PYTHONUNBUFFERED": "1"}
    for name, value in (env or {}).items():
        if value is None:
            environ.pop(name, None)
        else:
            environ[name] = value
    proc = subprocess.Popen(
        [str(cli), "demo", "support", "--port", str(port), "--db", str(db)]
        + (["--host", bind] if bind else [])
        + list(args),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=environ,
    )
    url = f"http://{bind or '127.0.0.1'}:{port}"
    banner: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # the banner ends before the server starts
            banner.append(line)
            if line.startswith("Press Ctrl+C"):
                break
        deadline = time.monotonic() + 20
        while True:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"demo exited early: {proc.stdout.read() if proc.stdout else ''}"
                )
            try:
                if httpx.get(url + "/openapi.json", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError("the demo did not start within 20 s")
            time.sleep(0.1)
        yield Demo(url, "".join(banner), proc)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout:
            proc.stdout.close()


def demo_says_hello(db: Path, model: str, **env: str) -> str:
    """What the demo, started on ``model`` with ``env``, answers Ada's "Hello" (its
    banner must name the model)."""
    settings: dict[str, str | None] = {"AGENT_MEM_VAULT_MODEL": model, **env}
    with demo_process(db, env=settings) as (url, banner):
        assert model in banner
        return say_hello(url)


def say_hello(url: str) -> str:
    """Ada's "Hello" on a new desk thread of the demo at ``url``: the text of the answer."""
    r = httpx.post(
        f"{url}/api/desk/threads/hi/messages", json={"text": "Hello"}, headers=ADA, timeout=30
    )
    assert r.status_code == 200, r.text
    return str(r.json()["text"])


async def start_case(client: httpx.AsyncClient, thread_id: str = "case-42") -> str:
    """Ada asks for a refund (billing answers), shares with Olga, then asks for a person."""
    r = await client.post(
        f"/api/desk/threads/{thread_id}/messages", json={"text": REFUND}, headers=ADA
    )
    assert r.status_code == 200, r.text
    r = await client.post(
        f"/api/desk/threads/{thread_id}/members",
        json={"userId": "olga", "role": "operator"},
        headers=ADA,
    )
    assert r.status_code == 200, r.text
    r = await client.post(
        f"/api/desk/threads/{thread_id}/messages", json={"text": PERSON}, headers=ADA
    )
    assert r.json()["status"] == "interrupted", r.text
    snap = (await client.get(f"/api/desk/threads/{thread_id}", headers=OLGA)).json()
    return str(snap["pendingWaits"][0]["waitId"])
