"""Harness overhead per turn, side by side with LangGraph and the OpenAI Agents SDK.

Every framework plays the same scenario with the same scripted model replies,
so no time goes to a model and what is measured is the framework itself:

* plain turn: the main agent answers a user message with text (one model call);
  threads of 10 turns, every turn measured.
* chain turn: main hands off to a1, a1 to a2, ... a9 to a10 (10 handoffs in
  one turn, the most a turn of ours may have), a10 answers; a new thread each turn.

Each runs in memory and on a SQLite file:

* agent-mem-vault: ``HarnessHost`` on ``memory_persistence()`` / ``sqlite_persistence``,
  with ``ScriptedModel`` (``session.send`` is timed).
* LangGraph: ``langgraph-swarm`` handoff tools between ``create_agent`` agents,
  a fake chat model, ``InMemorySaver`` / ``AsyncSqliteSaver`` (``ainvoke`` is timed).
* OpenAI Agents SDK: ``handoffs`` between agents, a fake ``Model``,
  ``SQLiteSession`` on ``:memory:`` / a file (``Runner.run`` is timed, tracing off).

On SQLite all three run in WAL mode with ``synchronous=FULL`` (SQLite's
default, and ours on purpose: an acknowledged write is on disk), so a commit
costs one fsync and the number of commits per turn decides those figures.

The competitors' fakes are minimal (they return the next reply and record
nothing) and the competitors run non-streamed, their cheapest path, while ours
streams; so the comparison leans their way. They are installed only for this:
``pip install -e '.[bench]'``; a missing one is skipped with a message.

The tracing rows (``--only tracing``) run ours on both backends with tracing
off, the OpenTelemetry API only, and the SDK recording every span (a no-op
and an in-memory exporter), the four taking turns. ``--instructions`` counts
instructions per turn of the same under valgrind's callgrind (repeatable on a
busy machine, where wall-clock ratios move by 0.1), beside the SDK's own cost
for the same spans.

    .venv/bin/python benchmarks/bench_harness.py                  # full sizes
    .venv/bin/python benchmarks/bench_harness.py --quick          # small sizes
    .venv/bin/python benchmarks/bench_harness.py --only tracing   # tracing cost
    .venv/bin/python benchmarks/bench_harness.py --instructions   # the same, counted
    .venv/bin/python benchmarks/bench_harness.py --scale          # 100 .. 100,000 threads
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# measure.py sits beside this script, which is also run from elsewhere (runpy.run_path
# from a test), where this folder is not on sys.path of itself.
sys.path[:0] = [str(Path(__file__).resolve().parent)]

from measure import load, quantile  # noqa: E402

AGENTS = [f"a{i}" for i in range(1, 11)]
USER_PLAIN = "Hello, what can you do?"
USER_CHAIN = "I want a refund for order 42."
ANSWER = "Here is your answer."

# The script, framework-neutral: ("text", words) or ("handoff", target).
Step = tuple[str, str]
PLAIN: list[Step] = [("text", ANSWER)]
CHAIN: list[Step] = [("handoff", name) for name in AGENTS] + [("text", ANSWER)]


@dataclass(frozen=True)
class Sizes:
    plain_threads: int
    turns_per_thread: int
    chain_turns: int
    warmup: int


@dataclass
class Row:
    framework: str
    backend: str
    scenario: str
    samples: list[float]
    """Seconds per timed turn (wall clock); empty when the framework was skipped."""
    cpu: list[float] = field(default_factory=list)
    """CPU seconds of this process per timed turn: what the turn computed, without the
    time the process waited for the disk or for a core (on a busy machine, most of it)."""
    note: str = ""

    @property
    def median_ms(self) -> float | None:
        return statistics.median(self.samples) * 1000 if self.samples else None

    @property
    def cpu_ms(self) -> float | None:
        return statistics.median(self.cpu) * 1000 if self.cpu else None


def scripted_steps(script: list[Step], turns: int) -> list[Step]:
    return script * turns


# --------------------------------------------------------------------------- timing


async def time_turns(
    turns: int, warmup: int, turn: Callable[[int], Awaitable[Any]]
) -> tuple[list[float], list[float]]:
    """Runs ``warmup + turns`` turns (``turn(i)``); the timed ones' wall and CPU seconds."""
    wall: list[float] = []
    cpu: list[float] = []
    gc.collect()
    for i in range(warmup + turns):
        start, start_cpu = time.perf_counter(), time.process_time()
        await turn(i)
        elapsed, elapsed_cpu = time.perf_counter() - start, time.process_time() - start_cpu
        if i >= warmup:
            wall.append(elapsed)
            cpu.append(elapsed_cpu)
    return wall, cpu


# --------------------------------------------------------------------------- LangGraph


async def bench_langgraph(sizes: Sizes, tmp: Path) -> list[Row]:
    try:
        from langchain.agents import create_agent
        from langchain_core.callbacks import (
            AsyncCallbackManagerForLLMRun,
            CallbackManagerForLLMRun,
        )
        from langchain_core.language_models.chat_models import BaseChatModel
        from langchain_core.messages import AIMessage, BaseMessage
        from langchain_core.outputs import ChatGeneration, ChatResult
        from langgraph.checkpoint.memory import InMemorySaver
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
        from langgraph.pregel import Pregel
        from langgraph_swarm import create_handoff_tool, create_swarm
    except ImportError as exc:
        return _skipped("LangGraph", exc)

    class FakeChatModel(BaseChatModel):
        """Returns the next scripted message; shared by every agent of the swarm."""

        script: Any

        @property
        def _llm_type(self) -> str:
            return "bench-fake"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def _generate(
            self,
            messages: list[BaseMessage],
            stop: list[str] | None = None,
            run_manager: CallbackManagerForLLMRun | None = None,
            **kwargs: Any,
        ) -> ChatResult:
            return ChatResult(generations=[ChatGeneration(message=next(self.script))])

        async def _agenerate(
            self,
            messages: list[BaseMessage],
            stop: list[str] | None = None,
            run_manager: AsyncCallbackManagerForLLMRun | None = None,
            **kwargs: Any,
        ) -> ChatResult:
            return self._generate(messages, stop)

    def messages(script: list[Step]) -> Iterator[AIMessage]:
        ids = itertools.count()
        for kind, value in itertools.cycle(script):
            if kind == "text":
                yield AIMessage(content=value)
            else:
                call = {"name": f"transfer_to_{value}", "args": {}, "id": f"call_{next(ids)}"}
                yield AIMessage(content="", tool_calls=[call])

    def build(script: list[Step], checkpointer: Any) -> Any:
        model = FakeChatModel(script=messages(script))
        names = ["main", *AGENTS]
        agents: list[Pregel[Any, None, Any, Any]] = [
            create_agent(
                model,
                tools=[create_handoff_tool(agent_name=names[i + 1])] if i + 1 < len(names) else [],
                system_prompt=f"You are {name}.",
                name=name,
            )
            for i, name in enumerate(names)
        ]
        return create_swarm(agents, default_active_agent="main").compile(checkpointer=checkpointer)

    async def run(backend: str, checkpointer: Any) -> list[Row]:
        rows = []
        app = build(PLAIN, checkpointer)

        async def plain(i: int) -> None:
            thread = f"plain-{i // sizes.turns_per_thread}"
            config = {"configurable": {"thread_id": thread}, "recursion_limit": 100}
            out = await app.ainvoke({"messages": [{"role": "user", "content": USER_PLAIN}]}, config)
            if out["messages"][-1].content != ANSWER:
                raise AssertionError(f"LangGraph answered {out['messages'][-1]!r}")

        samples = await time_turns(
            sizes.plain_threads * sizes.turns_per_thread, sizes.warmup, plain
        )
        rows.append(Row("LangGraph", backend, "plain", *samples))
        app = build(CHAIN, checkpointer)

        async def chain(i: int) -> None:
            config = {"configurable": {"thread_id": f"chain-{i}"}, "recursion_limit": 100}
            out = await app.ainvoke({"messages": [{"role": "user", "content": USER_CHAIN}]}, config)
            if out.get("active_agent") != "a10":
                raise AssertionError(f"LangGraph chain ended at {out.get('active_agent')!r}")

        samples = await time_turns(sizes.chain_turns, sizes.warmup, chain)
        rows.append(Row("LangGraph", backend, "chain10", *samples))
        return rows

    rows = await run("memory", InMemorySaver())
    async with AsyncSqliteSaver.from_conn_string(str(tmp / "langgraph.db")) as saver:
        rows += await run("sqlite", saver)
    return rows


# --------------------------------------------------------------------------- Agents SDK


async def bench_agents_sdk(sizes: Sizes, tmp: Path) -> list[Row]:
    try:
        from agents import Agent, Runner, SQLiteSession, set_tracing_disabled
        from agents.items import ModelResponse
        from agents.models.interface import Model
        from agents.testing import assistant_message, function_call
        from agents.usage import Usage
    except ImportError as exc:
        return _skipped("OpenAI Agents SDK", exc)

    set_tracing_disabled(True)

    class FakeModel(Model):
        """Returns the next scripted output; shared by every agent."""

        def __init__(self, script: list[Step]) -> None:
            self._next = self._outputs(script)

        @staticmethod
        def _outputs(script: list[Step]) -> Iterator[list[Any]]:
            ids = itertools.count()
            for kind, value in itertools.cycle(script):
                if kind == "text":
                    yield [assistant_message(value, item_id=f"msg_{next(ids)}")]
                else:
                    yield [function_call(f"transfer_to_{value}", {}, call_id=f"call_{next(ids)}")]

        async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
            return ModelResponse(output=next(self._next), usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError("the benchmark runs the Agents SDK non-streamed")

    def build(script: list[Step]) -> Any:
        model = FakeModel(script)
        agent = Agent(name="a10", instructions="You are a10.", model=model)
        for name in reversed(["main", *AGENTS[:-1]]):
            agent = Agent(name=name, instructions=f"You are {name}.", model=model, handoffs=[agent])
        return agent

    async def run(backend: str, db: str) -> list[Row]:
        rows = []
        main = build(PLAIN)
        sessions: dict[int, Any] = {}

        async def plain(i: int) -> None:
            n = i // sizes.turns_per_thread
            if n not in sessions:
                sessions.clear()
                sessions[n] = SQLiteSession(f"plain-{n}", db_path=db)
            result = await Runner.run(main, USER_PLAIN, session=sessions[n])
            if result.final_output != ANSWER:
                raise AssertionError(f"Agents SDK answered {result.final_output!r}")

        samples = await time_turns(
            sizes.plain_threads * sizes.turns_per_thread, sizes.warmup, plain
        )
        rows.append(Row("Agents SDK", backend, "plain", *samples))
        main = build(CHAIN)

        async def chain(i: int) -> None:
            session = SQLiteSession(f"chain-{i}", db_path=db)
            result = await Runner.run(main, USER_CHAIN, session=session, max_turns=30)
            if result.last_agent.name != "a10":
                raise AssertionError(f"Agents SDK chain ended at {result.last_agent.name!r}")

        samples = await time_turns(sizes.chain_turns, sizes.warmup, chain)
        rows.append(Row("Agents SDK", backend, "chain10", *samples))
        return rows

    return await run("memory", ":memory:") + await run("sqlite", str(tmp / "agents.db"))


# --------------------------------------------------------------------------- ours


@dataclass
class Ours:
    """Our harness on one backend, ready to play turns: ``plain(i)`` and ``chain(i)``."""

    host: Any
    plain: Callable[[int], Awaitable[None]]
    chain: Callable[[int], Awaitable[None]]
    desk: Callable[[int], Awaitable[None]]
    """A support-desk turn on a new thread: an app tool call, a handoff, billing's reply."""


def open_ours(backend: str, tmp: Path, sizes: Sizes) -> Ours:
    """A host on ``backend`` with scripted replies for the plain and chain turns of ``sizes``."""
    from agent_mem_vault.harness import (
        HarnessHost,
        Routing,
        define_agent,
        define_harness,
        memory_persistence,
        sqlite_persistence,
    )
    from agent_mem_vault.harness.testing import ScriptedModel, text, tool_call

    def replies(script: list[Step], turns: int) -> list[Any]:
        out = []
        for kind, value in scripted_steps(script, turns):
            if kind == "text":
                out.append(text(value))
            else:
                out.append(tool_call("handoff", {"to": value, "note": f"Over to {value}."}))
        return out

    def build(script: list[Step], turns: int) -> Any:
        model = ScriptedModel(replies(script, turns))

        def agent(name: str) -> Any:
            async def run(ctx: Any) -> str:
                return str(await ctx.chat(model=model, system_prompts=[f"You are {name}."]))

            return define_agent(name=name, description=f"Agent {name}", run=run)

        return define_harness(
            name="bench/desk",
            model=model,
            system_prompts=["You are main."],
            agents=[agent(name) for name in AGENTS],
            routing=Routing(),
        )

    persistence = (
        memory_persistence() if backend == "memory" else sqlite_persistence(tmp / "amv.db")
    )
    host = HarnessHost(persistence=persistence)
    plain_harness = build(PLAIN, sizes.plain_threads * sizes.turns_per_thread + sizes.warmup)
    chain_harness = build(CHAIN, sizes.chain_turns + sizes.warmup)
    desk = desk_harness()
    sessions: dict[int, Any] = {}

    async def plain(i: int) -> None:
        n = i // sizes.turns_per_thread
        session = sessions.get(n)
        if session is None:
            sessions.clear()
            session = sessions[n] = await host.open(plain_harness, thread_id=f"plain-{n}")
        result = await session.send(USER_PLAIN)
        if result.text != ANSWER:
            raise AssertionError(f"agent-mem-vault answered {result!r}")

    async def chain(i: int) -> None:
        session = await host.open(chain_harness, thread_id=f"chain-{i}")
        result = await session.send(USER_CHAIN)
        if not result.text.startswith("a10:"):
            raise AssertionError(f"agent-mem-vault chain ended with {result!r}")

    async def desk_turn(i: int) -> None:
        session = await host.open(desk, thread_id=f"desk-{i}")
        result = await session.send(USER_CHAIN)
        if "refunded order 42" not in result.text:
            raise AssertionError(f"agent-mem-vault desk answered {result!r}")

    return Ours(host, plain, chain, desk_turn)


async def bench_ours(
    sizes: Sizes,
    tmp: Path,
    *,
    framework: str = "agent-mem-vault",
    backends: tuple[str, ...] = ("memory", "sqlite"),
) -> list[Row]:
    try:
        import agent_mem_vault.harness  # noqa: F401
    except ImportError as exc:
        return _skipped("agent-mem-vault", exc)
    rows = []
    for backend in backends:
        ours = open_ours(backend, tmp, sizes)
        plain_turns = sizes.plain_threads * sizes.turns_per_thread
        samples = await time_turns(plain_turns, sizes.warmup, ours.plain)
        rows.append(Row(framework, backend, "plain", *samples))
        samples = await time_turns(sizes.chain_turns, sizes.warmup, ours.chain)
        rows.append(Row(framework, backend, "chain10", *samples))
        await ours.host.close()
    return rows


TRACING = ("tracing off", "tracing API only", "tracing no-op exp.", "tracing in-memory")


def tracing_provider(label: str) -> Any:
    """The SDK provider of the set-up ``label`` (None for "off" and "API only").

    "off" is the cost without ``opentelemetry-api``; "API only" has the API and
    no SDK (no provider installed: nothing could be recorded); "no-op exp."
    records every span with the SDK and hands it to an exporter that drops it;
    "in-memory" keeps every span (the SDK's ``InMemorySpanExporter``). Spans go
    through a ``SimpleSpanProcessor``, so exporting is inside the measured turn.
    """
    if label not in ("tracing no-op exp.", "tracing in-memory"):
        return None
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    provider = TracerProvider()
    exporter = _drop_exporter() if label == "tracing no-op exp." else InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider


def use_tracing(label: str, provider: Any) -> None:
    from agent_mem_vault.core import tracing

    tracing.use_tracer_provider(provider, off=label == "tracing off")


def tracing_setup(label: str) -> Any:
    """Sets tracing up as ``label`` says; returns the provider to shut down after (or None)."""
    provider = tracing_provider(label)
    use_tracing(label, provider)
    return provider


def tracing_teardown(provider: Any) -> None:
    from agent_mem_vault.core import tracing

    tracing.use_tracer_provider(None)
    if provider is not None:
        provider.shutdown()


def _drop_exporter() -> Any:
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class Drop(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    return Drop()


async def bench_tracing(sizes: Sizes, tmp: Path) -> list[Row]:
    """Ours on both backends with tracing off, API only, and on with two exporters.

    Each set-up has its own host; they take turns, one turn each (in a rotating
    order), so a slow phase of a busy machine hits all four alike.
    """
    try:
        import opentelemetry.sdk.trace  # noqa: F401

        import agent_mem_vault.core.tracing  # noqa: F401
    except ImportError as exc:
        return _skipped("tracing (otlp extra)", exc)
    providers = {label: tracing_provider(label) for label in TRACING}
    rows: list[Row] = []
    try:
        for backend in ("memory", "sqlite"):
            hosts = {}
            for n, label in enumerate(TRACING):
                folder = tmp / f"{backend}-{n}"
                folder.mkdir()
                hosts[label] = open_ours(backend, folder, sizes)
            plain_turns = sizes.plain_threads * sizes.turns_per_thread
            for scenario, turns in (
                ("plain", plain_turns),
                ("desk", plain_turns),
                ("chain10", sizes.chain_turns),
            ):
                wall: dict[str, list[float]] = {label: [] for label in TRACING}
                cpu: dict[str, list[float]] = {label: [] for label in TRACING}
                gc.collect()
                for i in range(sizes.warmup + turns):
                    # Each turn in another order (every label goes first, second, ...
                    # in turn), so neither a warm cache nor a slow phase favours one.
                    order = TRACING[i % 4 :] + TRACING[: i % 4]
                    for label in order if (i // 4) % 2 == 0 else order[::-1]:
                        use_tracing(label, providers[label])
                        ours = hosts[label]
                        turn = {"plain": ours.plain, "desk": ours.desk, "chain10": ours.chain}[
                            scenario
                        ]
                        start, start_cpu = time.perf_counter(), time.process_time()
                        await turn(i)
                        if i >= sizes.warmup:
                            wall[label].append(time.perf_counter() - start)
                            cpu[label].append(time.process_time() - start_cpu)
                rows += [Row(t, backend, scenario, wall[t], cpu[t]) for t in TRACING]
            for ours in hosts.values():
                await ours.host.close()
    finally:
        for provider in providers.values():
            tracing_teardown(provider)
    return rows


# --------------------------------------------------------------------------- scale

SCALE_POINTS = (100, 1_000, 10_000, 100_000)
QUICK_SCALE_POINTS = (100, 1_000)


class Cycle:
    """A model that answers from a fixed script, round and round, and keeps nothing.

    ``ScriptedModel`` records every request (a test reads them back); over
    100,000 turns that record would be most of the memory measured.
    """

    name = "cycle"

    def __init__(self, replies: list[list[Any]]) -> None:
        self._replies = replies
        self._next = 0

    async def stream(self, request: Any) -> Any:
        reply = self._replies[self._next % len(self._replies)]
        self._next += 1
        for event in reply:
            yield event


def desk_harness(name: str = "bench/desk") -> Any:
    """The support desk: main looks an order up (an app tool) and hands off; billing replies."""
    from pydantic import BaseModel

    from agent_mem_vault.harness import Routing, define_agent, define_harness, tool
    from agent_mem_vault.harness.model import TextDelta, ToolCallRequest, Usage, UsageReport

    class Order(BaseModel):
        orderId: str

    def lookup(args: Order) -> str:
        return f"order {args.orderId}: paid twice"

    done = UsageReport(Usage(10, 5))
    ids = itertools.count()
    main = Cycle(
        [
            [ToolCallRequest(f"c{next(ids)}", "lookup_order", {"orderId": "42"}), done],
            [
                ToolCallRequest(f"c{next(ids)}", "handoff", {"to": "billing", "note": "Refund 42"}),
                done,
            ],
        ]
    )
    billing_model = Cycle([[TextDelta("I have refunded order 42."), done]])

    async def billing(ctx: Any) -> str:
        return str(await ctx.chat(model=billing_model, system_prompts=["You are billing."]))

    return define_harness(
        name=name,
        model=main,
        system_prompts=["You are the support desk."],
        tools=[tool(name="lookup_order", description="Look an order up", input=Order, run=lookup)],
        agents=[define_agent(name="billing", description="Refunds", run=billing)],
        routing=Routing(router=lambda ctx: None),
    )


def plain_harness(name: str = "bench/plain") -> Any:
    from agent_mem_vault.harness import define_harness
    from agent_mem_vault.harness.model import TextDelta, Usage, UsageReport

    return define_harness(name=name, model=Cycle([[TextDelta(ANSWER), UsageReport(Usage(10, 5))]]))


def rss_mb() -> float:
    """This process's resident memory now, in MiB (Linux; 0 elsewhere)."""
    status = Path("/proc/self/status")
    if not status.exists():
        return 0.0
    for line in status.read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


@dataclass
class ScalePoint:
    backend: str
    threads: int
    """Threads this host had touched (opened and written) when the window started."""
    samples: list[float]
    rss_mb: float
    cached: int
    leases: int


async def scale_curve(
    backend: str, tmp: Path, points: tuple[int, ...], window: int
) -> list[ScalePoint]:
    """One host touches ever more threads (one turn each, default lease and cache settings).

    At each point ``window`` more new threads are opened and sent a plain
    turn, each timed (``open`` + ``send``): the turn a growing support desk
    makes all day. Between points, threads are touched the same way, untimed.
    """
    from agent_mem_vault.harness import HarnessHost, memory_persistence, sqlite_persistence

    persistence = (
        memory_persistence() if backend == "memory" else sqlite_persistence(tmp / "scale.db")
    )
    host = HarnessHost(persistence=persistence)
    harness = plain_harness()
    touched = 0
    out: list[ScalePoint] = []

    async def turn() -> None:
        nonlocal touched
        session = await host.open(harness, thread_id=f"t{touched}")
        touched += 1
        if (await session.send(USER_PLAIN)).text != ANSWER:
            raise AssertionError("the scale turn did not answer")

    for point in points:
        while touched < point:
            await turn()
        gc.collect()
        samples = []
        for _ in range(window):
            start = time.perf_counter()
            await turn()
            samples.append(time.perf_counter() - start)
        gc.collect()
        out.append(
            ScalePoint(
                backend,
                point,
                samples,
                rss_mb(),
                host.threads.cached,
                host.threads.leases_without_state,
            )
        )
    await host.close()
    await persistence.close()
    return out


def scale_child(backend: str, quick: bool) -> None:
    """One backend's curve in this (fresh) process; prints one JSON line per point."""
    import json

    points = QUICK_SCALE_POINTS if quick else SCALE_POINTS
    with tempfile.TemporaryDirectory() as tmp:
        curve = asyncio.run(scale_curve(backend, Path(tmp), points, 50 if quick else 300))
    for p in curve:
        print(json.dumps({**p.__dict__}))


def scale(quick: bool) -> None:
    """A turn's cost as a host touches 100 .. 100,000 threads; a process per backend."""
    import json
    import subprocess

    print(
        "scale: one host, default lease_ttl (30 s) and max_cached_threads (1,000); "
        "each point: the median of a window of new-thread turns (open + send)"
    )
    print()
    print(
        f"{'backend':<8} {'threads':>8} {'median ms/turn':>15} {'vs first':>9} {'p90 ms':>8} "
        f"{'RSS MiB':>8} {'cached':>7} {'leases':>7}"
    )
    print("-" * 80)
    for backend in ("memory", "sqlite"):
        command = [
            sys.executable,
            __file__,
            "--scale-child",
            backend,
            *(["--quick"] if quick else []),
        ]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"the {backend} scale run failed:\n{done.stderr[-3000:]}")
        first = None
        for line in done.stdout.splitlines():
            p = json.loads(line)
            median = statistics.median(p["samples"]) * 1000
            first = first or median
            p90 = quantile(p["samples"], 0.9) * 1000
            print(
                f"{backend:<8} {p['threads']:>8,} {median:>15.3f} {median / first:>8.2f}x "
                f"{p90:>8.3f} {p['rss_mb']:>8.1f} {p['cached']:>7,} {p['leases']:>7,}"
            )
    print()
    print("cached: threads whose state the host keeps; leases: threads whose state it forgot")
    print("while it still holds their lease (a few bytes each, dropped when the lease lapses).")
    print("RSS on memory includes the in-memory store itself (every thread's log).")
    print(f"load average at the end: {load(3)}")


# --------------------------------------------------------------------------- instructions


SDK_STEPS = {
    "plain": ["chat"],
    "desk": ["chat", "tool", "chat", "handoff", "chat"],
    "chain10": ["chat", "handoff"] * len(AGENTS) + ["chat"],
}
"""The spans inside each scenario's turn, in order, as the harness makes them."""


def sdk_alone(tracer: Any, steps: list[str]) -> None:
    """The spans of one turn (``steps``: chat, tool, handoff), made with the SDK directly.

    The same spans, attributes, link and nesting as the harness makes (turn;
    per model call a ``chat`` span with usage; per app tool call an
    ``execute_tool`` span; per handoff a ``harness.handoff`` span), with
    nothing of ours around them: the SDK's own cost of a turn's spans, the
    floor no code of ours can go under.
    """
    from opentelemetry import context, trace

    link = trace.Link(
        trace.SpanContext(0x5CE4E5B9D1A6F2E9B8C7D6E5F4A3B2C1, 0xB7AD6B7169203331, True)
    )
    turn = tracer.start_span(
        "harness.turn",
        attributes={
            "agent_mem_vault.harness": "bench/desk",
            "agent_mem_vault.thread_id": "plain-0",
            "agent_mem_vault.turn.kind": "user",
            "agent_mem_vault.agent": "main",
        },
        links=[link],
    )
    token = context.attach(trace.set_span_in_context(turn))
    for i, step in enumerate(steps):
        if step == "chat":
            span = tracer.start_span(
                "chat scripted",
                kind=trace.SpanKind.CLIENT,
                attributes={
                    "gen_ai.operation.name": "chat",
                    "gen_ai.system": "_OTHER",
                    "gen_ai.request.model": "scripted",
                },
            )
        elif step == "tool":
            span = tracer.start_span(
                "execute_tool lookup_order",
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "lookup_order",
                    "gen_ai.tool.call.id": f"call_{i}",
                    "agent_mem_vault.agent": "main",
                },
            )
        else:
            span = tracer.start_span(
                "harness.handoff",
                attributes={
                    "agent_mem_vault.handoff.from": "main",
                    "agent_mem_vault.handoff.to": AGENTS[i % len(AGENTS)],
                    "agent_mem_vault.handoff.kind": "tool",
                    "agent_mem_vault.handoff.has_note": True,
                    "gen_ai.tool.call.id": f"call_{i}",
                },
            )
        inner = context.attach(trace.set_span_in_context(span))
        if step == "chat":
            span.set_attributes({"gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 5})
        context.detach(inner)
        span.end()
    turn.set_attributes(
        {
            "agent_mem_vault.run_id": "01JBENCHRUN0000000000000000",
            "agent_mem_vault.turn.status": "x",
        }
    )
    context.detach(token)
    turn.end()


def counted(out: Path, sizes: Sizes) -> None:
    """Runs under callgrind (``--instructions``): each measured part is one profile dump.

    A part runs inside ``functools.reduce`` and callgrind collects and dumps
    exactly inside that C function (``--toggle-collect``, ``--dump-after``), so
    start-up, imports, warm-up turns and set-up are not counted.
    """
    import functools
    import json

    labels: list[str] = []

    def measure(label: str, turns: int, part: Callable[[], Any]) -> None:
        gc.collect()
        labels.append(f"{label}\t{turns}")
        functools.reduce(lambda _a, _b: part(), [0, 0])

    loop = asyncio.new_event_loop()

    def play(turn: Callable[[int], Awaitable[None]], first: int, count: int) -> Callable[[], None]:
        async def turns() -> None:
            for i in range(first, first + count):
                await turn(i)

        return lambda: loop.run_until_complete(turns())

    plain_turns = sizes.plain_threads * sizes.turns_per_thread
    # A first pass, not counted, does what happens once per process (caches,
    # the allocator's arenas), so the first set-up counted pays none of it.
    for round_no, label in enumerate(("tracing off", *TRACING)):
        provider = tracing_setup(label)
        for backend in ("memory", "sqlite"):
            folder = out / f"{round_no}-{backend}"
            folder.mkdir()
            ours = open_ours(backend, folder, sizes)
            for scenario, turn, turns in (
                ("plain", ours.plain, plain_turns),
                ("desk", ours.desk, plain_turns),
                ("chain10", ours.chain, sizes.chain_turns),
            ):
                play(turn, 0, sizes.warmup)()
                if round_no == 0:
                    play(turn, sizes.warmup, turns)()
                else:
                    label_ = f"{backend}\t{scenario}\t{label}"
                    measure(label_, turns, play(turn, sizes.warmup, turns))
            loop.run_until_complete(ours.host.close())
        tracing_teardown(provider)
    loop.close()

    provider = tracing_setup("tracing no-op exp.")
    tracer = provider.get_tracer("agent_mem_vault")

    def spans(steps: list[str], turns: int) -> Callable[[], None]:
        def run() -> None:
            for _ in range(turns):
                sdk_alone(tracer, steps)

        return run

    for scenario, turns in (("plain", 200), ("desk", 100), ("chain10", 20)):
        spans(SDK_STEPS[scenario], 5)()
        measure(f"-\t{scenario}\tSDK alone", turns, spans(SDK_STEPS[scenario], turns))
    tracing_teardown(provider)
    (out / "labels.json").write_text(json.dumps(labels))


def instructions(sizes: Sizes, quick: bool) -> None:
    """Counts instructions per turn under ``valgrind --tool=callgrind`` and prints them."""
    import json
    import os
    import shutil
    import subprocess

    if shutil.which("valgrind") is None:
        sys.exit("--instructions needs valgrind (apt-get install valgrind)")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        command = [
            "valgrind",
            "--tool=callgrind",
            "--collect-atstart=no",
            "--toggle-collect=functools_reduce",
            "--dump-after=functools_reduce",
            f"--callgrind-out-file={out / 'cg.out'}",
            sys.executable,
            __file__,
            "--counted",
            str(out),
            *(["--quick"] if quick else []),
        ]
        print(f"counting under callgrind (a few minutes): {' '.join(command[:5])} ...")
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        done = subprocess.run(command, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"the counted run failed:\n{done.stderr[-3000:]}")
        labels = json.loads((out / "labels.json").read_text())
        dumps = sorted(out.glob("cg.out.*"), key=lambda p: int(p.suffix[1:]))
        if len(dumps) != len(labels):
            sys.exit(
                f"callgrind wrote {len(dumps)} dumps for {len(labels)} parts: this Python's "
                "functools_reduce symbol is not visible to valgrind (a stripped build?)"
            )
        counts: dict[tuple[str, str, str], float] = {}
        for label, dump in zip(labels, dumps, strict=True):
            backend, scenario, framework, turns = label.split("\t")
            total = next(
                int(line.split()[1])
                for line in dump.read_text().splitlines()
                if line.startswith(("totals:", "summary:"))
            )
            counts[(backend, scenario, framework)] = total / int(turns)
    report_instructions(counts)


def report_instructions(counts: dict[tuple[str, str, str], float]) -> None:
    print()
    print(f"{'backend':<8} {'scenario':<9} {'tracing':<18} {'instr/turn':>12} {'vs off':>7}")
    print("-" * 58)
    for backend in ("memory", "sqlite"):
        for scenario in ("plain", "desk", "chain10"):
            off = counts[(backend, scenario, "tracing off")]
            for label in TRACING:
                n = counts[(backend, scenario, label)]
                print(f"{backend:<8} {scenario:<9} {label:<18} {n:>12,.0f} {n / off:>6.2f}x")
    for scenario in ("plain", "desk", "chain10"):
        sdk = counts[("-", scenario, "SDK alone")]
        print(f"{'-':<8} {scenario:<9} {'SDK alone':<18} {sdk:>12,.0f}")
    print()
    print("vs off: instructions per turn divided by those with tracing off (same backend).")
    print("SDK alone: the same spans made with the SDK directly (no-op exporter), nothing of")
    print("ours around them; vs the memory turn with tracing off:")
    for scenario in ("plain", "desk", "chain10"):
        sdk = counts[("-", scenario, "SDK alone")]
        ours = counts[("memory", scenario, "tracing no-op exp.")]
        off = counts[("memory", scenario, "tracing off")]
        print(
            f"  {scenario}: SDK alone {sdk / off:.0%} of the turn; tracing's cost beyond the "
            f"SDK's {(ours - off - sdk) / off:+.1%} of the turn"
        )


# --------------------------------------------------------------------------- report


def _skipped(framework: str, exc: ImportError) -> list[Row]:
    print(
        f"skipping {framework}: {exc}. Install the competitors with: pip install -e '.[bench]'",
        file=sys.stderr,
    )
    return [Row(framework, "-", "-", [], note=f"not installed ({exc.name})")]


def pool(rows: list[Row]) -> list[Row]:
    """Joins the samples of the same framework, backend and scenario over all rounds."""
    pooled: dict[tuple[str, str, str], Row] = {}
    for r in rows:
        key = (r.framework, r.backend, r.scenario)
        if key in pooled:
            pooled[key].samples.extend(r.samples)
            pooled[key].cpu.extend(r.cpu)
        else:
            pooled[key] = Row(
                r.framework, r.backend, r.scenario, list(r.samples), list(r.cpu), r.note
            )
    order = {"agent-mem-vault": 0, "LangGraph": 1, "Agents SDK": 2}
    order.update({label: 3 + i for i, label in enumerate(TRACING)})
    return sorted(pooled.values(), key=lambda r: (r.backend, r.scenario, order.get(r.framework, 9)))


def report(rows: list[Row]) -> None:
    def bases(framework: str) -> dict[tuple[str, str], Row]:
        return {(r.backend, r.scenario): r for r in rows if r.framework == framework}

    ours, off = bases("agent-mem-vault"), bases("tracing off")
    print()
    header = f"{'backend':<8} {'scenario':<9} {'framework':<18} {'median ms/turn':>15} {'turns':>6}"
    print(f"{header} {'vs ours':>8} {'CPU ms/turn':>12} {'vs ours':>8}")
    print("-" * 88)
    for r in rows:
        if r.median_ms is None or r.cpu_ms is None:
            print(f"{'':<8} {'':<9} {r.framework:<18} {'skipped':>15}        {r.note}")
            continue
        tracing_row = r.framework in TRACING
        base = (off if tracing_row else ours).get((r.backend, r.scenario))
        ratio = cpu_ratio = ""
        if base and base.median_ms and base.cpu_ms and base is not r:
            digits = 2 if tracing_row else 1
            ratio = f"{r.median_ms / base.median_ms:.{digits}f}x"
            cpu_ratio = f"{r.cpu_ms / base.cpu_ms:.{digits}f}x"
        print(
            f"{r.backend:<8} {r.scenario:<9} {r.framework:<18} {r.median_ms:>15.3f} "
            f"{len(r.samples):>6} {ratio:>8} {r.cpu_ms:>12.3f} {cpu_ratio:>8}"
        )
    print()
    print("vs ours: the competitor's median divided by ours (higher means ours is faster);")
    print("for the tracing rows, divided by ours with tracing off (same backend and scenario).")
    print("CPU: this process's CPU time per turn (no waiting for the disk or for a core).")
    print(f"load average at the end: {load(3)}")


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument(
        "--rounds",
        type=int,
        default=None,
        help="run the frameworks in turn this many times and pool the samples, so that "
        "slow phases of the machine hit all of them alike (default 5, 1 with --quick)",
    )
    parser.add_argument(
        "--only",
        choices=["ours", "langgraph", "agents", "tracing"],
        action="append",
        help="run only these frameworks (repeatable)",
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="instead of timing, count the instructions per turn of ours with each tracing "
        "set-up under valgrind's callgrind (repeatable on a busy machine; a few minutes)",
    )
    parser.add_argument(
        "--scale",
        action="store_true",
        help="instead, the cost of a turn as one host touches 100, 1k, 10k and 100k threads "
        "(memory and SQLite, with RSS; a few minutes; --quick: 100 and 1k)",
    )
    parser.add_argument(
        "--counted", metavar="DIR", help=argparse.SUPPRESS
    )  # the child of the above
    parser.add_argument("--scale-child", metavar="BACKEND", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def sizes_of(args: argparse.Namespace) -> Sizes:
    if args.quick:
        return Sizes(plain_threads=2, turns_per_thread=5, chain_turns=5, warmup=2)
    return Sizes(plain_threads=2, turns_per_thread=10, chain_turns=8, warmup=2)


async def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    sizes = sizes_of(args)
    if args.instructions:
        instructions(sizes, args.quick)
        return
    if args.scale:
        scale(args.quick)
        return
    rounds = args.rounds or (1 if args.quick else 5)
    chosen = args.only or ["ours", "langgraph", "agents", "tracing"]
    benches = {
        "ours": bench_ours,
        "langgraph": bench_langgraph,
        "agents": bench_agents_sdk,
        "tracing": bench_tracing,
    }
    print(
        f"plain: {sizes.plain_threads} threads x {sizes.turns_per_thread} turns; "
        f"chain of {len(AGENTS)} handoffs: {sizes.chain_turns} turns; warmup {sizes.warmup}; "
        f"{rounds} round(s); Python {sys.version.split()[0]}"
    )
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        # Competitors warn about their own deprecations; that is not what is measured.
        warnings.simplefilter("ignore")
        for round_no in range(rounds):
            for name in chosen:
                folder = Path(tmp) / f"{name}-{round_no}"
                folder.mkdir()
                rows += await benches[name](sizes, folder)
    report(pool(rows))


if __name__ == "__main__":
    arguments = parse(None)
    if arguments.counted:
        counted(Path(arguments.counted), sizes_of(arguments))  # runs its own event loop
    elif arguments.scale_child:
        scale_child(arguments.scale_child, arguments.quick)
    else:
        asyncio.run(main())
