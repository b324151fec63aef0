"""Many hosts on one PostgreSQL: host processes driven over pipes, a fresh schema per test.

These tests need a real PostgreSQL (``source scripts/test-env.sh`` sets
``AMV_TEST_POSTGRES_DSN`` to a fresh database); without one they skip.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from agent_mem_vault.store import LogRecord
from tests.postgres_support import postgres_dsn

ROOT = Path(__file__).resolve().parents[2]


async def start_worker(
    worker: str, *args: str, ready: Any, stdin: bool = True
) -> asyncio.subprocess.Process:
    """``python tests/multihost/WORKER ARGS``, another host in its own OS process, once
    the first line it prints (JSON) is ``ready``; its stdout (and stdin) are pipes.

    It runs from the repository's root, so that it imports ``tests`` as this process does.
    """
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(Path(__file__).with_name(worker)),
        *args,
        stdin=asyncio.subprocess.PIPE if stdin else None,
        stdout=asyncio.subprocess.PIPE,
        cwd=str(ROOT),
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.stdout is not None
    assert json.loads(await asyncio.wait_for(proc.stdout.readline(), 30)) == ready
    return proc


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if postgres_dsn() is None:
        skip = pytest.mark.skip(
            reason="multi-host tests need PostgreSQL: AMV_TEST_POSTGRES_DSN is unset "
            "(source scripts/test-env.sh)"
        )
        for item in items:
            if Path(str(item.fspath)).parent == Path(__file__).parent:
                item.add_marker(skip)


@pytest.fixture
def dsn() -> str:
    """A DSN whose search_path is a fresh, empty schema."""
    from tests.postgres_support import scoped_dsn

    return scoped_dsn()


class HostProcess:
    """One ``host_worker.py`` process: a harness host of its own on the shared database."""

    def __init__(self, proc: asyncio.subprocess.Process, host_id: str) -> None:
        self.proc = proc
        self.host_id = host_id
        self._ids = 0
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            body = json.loads(line)
            fut = self._waiting.pop(body.get("id", -1), None)
            if fut is not None and not fut.done():
                fut.set_result(body)
        for fut in self._waiting.values():
            if not fut.done():
                fut.set_exception(ConnectionError(f"host {self.host_id} exited"))

    def start(self, op: str, **args: Any) -> asyncio.Future[dict[str, Any]]:
        """Send a command; the future is its answer (or ConnectionError if the process died)."""
        assert self.proc.stdin is not None
        self._ids += 1
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[self._ids] = fut
        self.proc.stdin.write((json.dumps({"id": self._ids, "op": op, **args}) + "\n").encode())
        return fut

    async def send(self, thread: str, text: str, input_id: str) -> dict[str, Any]:
        return await asyncio.wait_for(
            self.start("send", thread=thread, text=text, input_id=input_id), 30
        )

    def kill(self) -> None:
        """SIGKILL: no cleanup, no lease release, as when a machine dies."""
        self.proc.send_signal(signal.SIGKILL)

    async def close(self) -> None:
        if self.proc.returncode is None:
            assert self.proc.stdin is not None
            self.proc.stdin.write(b'{"op": "close"}\n')
            try:
                await asyncio.wait_for(self.proc.wait(), 10)
            except TimeoutError:
                self.proc.kill()
        await self.proc.wait()
        await self._reader


HostStarter = Callable[..., Any]


@pytest.fixture
async def start_host(dsn: str) -> AsyncIterator[HostStarter]:
    """``await start_host(host_id, spec, lease_ttl=1.0)``: a ready host process on ``dsn``."""
    started: list[HostProcess] = []

    async def start(host_id: str, spec: dict[str, Any], lease_ttl: float = 1.0) -> HostProcess:
        args = (dsn, host_id, str(lease_ttl), json.dumps(spec))
        ready = {"ready": True, "host_id": host_id}
        host = HostProcess(await start_worker("host_worker.py", *args, ready=ready), host_id)
        started.append(host)
        return host

    yield start
    for host in started:
        if host.proc.returncode is None:
            host.kill()
        await host.proc.wait()
        await host._reader


async def wait_for_record(
    store: Any, stream: str, match: Callable[[LogRecord], bool], within: float = 20
) -> LogRecord:
    """Poll a log until a record matches (the test's view of "the turn is in flight")."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        records: list[LogRecord] = await store.read(stream)
        for record in records:
            if match(record):
                return record
        await asyncio.sleep(0.02)
    raise AssertionError(f"no matching record in {stream} within {within}s")


async def send_until_owned(
    host: HostProcess, thread: str, text: str, input_id: str, within: float = 20
) -> tuple[dict[str, Any], int]:
    """Send until the host may write the thread; returns the result and how many refusals."""
    refusals = 0
    deadline = time.monotonic() + within
    while True:
        answer = await host.send(thread, text, input_id)
        if answer["ok"]:
            return answer["result"], refusals
        assert answer["code"] == "log_owned_elsewhere", answer
        refusals += 1
        assert time.monotonic() < deadline, "the thread was never taken over"
        await asyncio.sleep(0.05)
