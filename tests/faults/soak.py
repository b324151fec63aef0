"""Conversations on PostgreSQL while every connection to it is killed again and again.

What the fault test and ``benchmarks/bench_faults.py`` both run: a host on
``postgres_persistence`` serves ``conversations`` threads at once, each
sending ``sends`` messages one after the other (the scripted model thinks
``think`` seconds per turn, so turns span kills), while every ``kill_every``
seconds ``pg_terminate_backend`` ends every connection to the database. Then
every thread's log is read back and checked: each input in the log once, each
turn started once and finished once.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass, field

from agent_mem_vault.core.errors import AgentMemVaultError
from agent_mem_vault.harness import Harness, HarnessHost, Routing, define_harness
from agent_mem_vault.harness.log import stream_name
from agent_mem_vault.harness.testing import ScriptedModel, pause, text
from agent_mem_vault.store import LogRecord
from agent_mem_vault.store.postgres import postgres_persistence

from .private_postgres import PrivatePostgres

__all__ = ["LogCheck", "SoakResult", "check_log", "desk", "soak"]


def desk(turns: int, think: float = 0.0) -> Harness:
    """A harness whose model answers ``turns`` messages, thinking ``think`` s on each."""
    reply = [pause(think), text("noted")] if think else [text("noted")]
    model = ScriptedModel([reply for _ in range(turns)])
    return define_harness(
        name="faults/desk", model=model, system_prompts=["Answer in one word."], routing=Routing()
    )


@dataclass
class LogCheck:
    """What the logs hold: inputs and turns counted, and what is wrong with them."""

    inputs: int = 0
    inputs_twice: int = 0
    """Inputs found in a log more than once (an acknowledged message written twice)."""
    turns_twice: int = 0
    """Inputs whose turn started more than once (a turn run twice)."""
    left_running: int = 0
    """Turns started and never finished."""


def check_log(records: list[LogRecord], check: LogCheck) -> None:
    """Add one thread's log to ``check``."""
    inputs = Counter(r.data["inputId"] for r in records if r.type == "input")
    started = Counter(r.data["inputId"] for r in records if r.type == "run.started")
    finished = {r.data["runId"] for r in records if r.type == "run.finished"}
    runs = [r.data["runId"] for r in records if r.type == "run.started"]
    check.inputs += len(inputs)
    check.inputs_twice += sum(1 for n in inputs.values() if n > 1)
    check.turns_twice += sum(1 for n in started.values() if n > 1)
    check.left_running += sum(1 for run in runs if run not in finished)


@dataclass
class SoakResult:
    sent: int = 0
    completed: int = 0
    failed: Counter[str] = field(default_factory=Counter)
    """Sends that did not complete, by error code (or turn status)."""
    killed: int = 0
    """Connections terminated, over every round."""
    rounds: int = 0
    seconds: float = 0.0
    log: LogCheck = field(default_factory=LogCheck)


async def soak(
    server: PrivatePostgres,
    dsn: str,
    *,
    conversations: int = 20,
    sends: int = 15,
    kill_every: float = 0.5,
    think: float = 0.05,
) -> SoakResult:
    """Run the conversations under the kills; what happened (see the module doc)."""
    result = SoakResult()
    store = postgres_persistence(dsn, max_size=10)
    host = HarnessHost(persistence=store)
    harness = desk(conversations * sends, think)
    done = asyncio.Event()

    async def kill() -> None:
        while not done.is_set():
            try:
                await asyncio.wait_for(done.wait(), kill_every)
            except TimeoutError:
                result.killed += await asyncio.to_thread(server.terminate, dsn)
                result.rounds += 1

    async def converse(c: int) -> None:
        for i in range(sends):
            result.sent += 1
            try:
                turn = await host.send(
                    harness, f"message {i}", thread_id=f"c{c}", input_id=f"c{c}-{i}"
                )
            except AgentMemVaultError as exc:
                result.failed[exc.code] += 1
                continue
            if turn.status == "completed":
                result.completed += 1
            else:
                result.failed[turn.code or turn.status] += 1

    started = time.monotonic()
    killer = asyncio.create_task(kill())
    try:
        await asyncio.gather(*(converse(c) for c in range(conversations)))
    finally:
        result.seconds = time.monotonic() - started
        done.set()
        await killer
        await host.close()
        await store.close()
    reader = postgres_persistence(dsn, max_size=2)
    try:
        for c in range(conversations):
            check_log(await reader.read(stream_name("default", f"c{c}")), result.log)
    finally:
        await reader.close()
    return result
