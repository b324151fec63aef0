"""MCP calls while several agents write to one vault at once, beside commit c2e8df2.

    .venv/bin/python benchmarks/bench_mcp_contention.py                 # 4 agents
    .venv/bin/python benchmarks/bench_mcp_contention.py --agents 2 8 --calls 40

Several coding agents on one machine share one vault: each has its own client
and its own ``agent-mem-vault serve`` over stdio, and their writes meet at the
vault's lock. Here each agent is a process of its own running the SDK's client
(``mcp.Client``, its default settings) against its own server, all on one vault
of 2,000 handoffs + 2,000 memories; they start together (a barrier) and each
makes ``--calls`` rounds of ``create_handoff`` (to the next agent) then
``read_handoff`` (its own, which marks one read: a write too). Every figure is
per call, as the agent waits for it: median, p90 and p99 over every agent's
calls, and the calls per second the vault served in all.

This checkout (installed as a user installs it, ``pip install .``) and commit
c2e8df2 (the build the per-call figures are held to) run in turn on fresh
copies of the same vault, three times each, the order alternating, so a busy
moment on the machine falls on both alike. Both are installed into the cache
``bench_mcp_peers.py`` keeps (``--install-only`` there sets it up).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_mcp import cached_vault
from bench_mcp_peers import BASELINE, NS, TEXT, install
from measure import quantile

AGENTS = ("claude-code", "codex", "gemini", "opencode", "aider", "cursor", "goose", "amp")


def _agent(
    exe: str, root: str, index: int, agents: int, calls: int, barrier: Any, out: Any
) -> None:
    """One agent: its client and its server; sends back (op, ms) for every call."""
    import anyio

    from mcp import Client, StdioServerParameters

    me, to = AGENTS[index], AGENTS[(index + 1) % agents]
    params = StdioServerParameters(
        command=exe,
        args=["serve", "--agent", me, "--namespace", NS, "--vault", root],
        env={**os.environ, "AGENT_MEM_VAULT_WARM": "0"},
    )

    async def run() -> list[tuple[str, float]]:
        took: list[tuple[str, float]] = []
        async with Client(params) as client:
            await client.call_tool("peek_handoff", {})  # started and listed, as after launch
            barrier.wait()
            for i in range(calls):
                for op, tool, args in (
                    (
                        "create",
                        "create_handoff",
                        {"to": to, "summary": f"{me} {i}", "context": TEXT},
                    ),
                    ("read", "read_handoff", {}),
                ):
                    start = time.perf_counter()
                    result = await client.call_tool(tool, args)
                    took.append((op, (time.perf_counter() - start) * 1000))
                    if result.is_error:
                        raise RuntimeError(f"{me} {tool}: {result.content}")
        return took

    out.put(anyio.run(run))


def phase(exe: Path, agents: int, calls: int) -> tuple[dict[str, list[float]], float]:
    """All agents at once on a fresh copy of the vault: per-op milliseconds, and calls/s."""
    work = Path(tempfile.mkdtemp(prefix="amv-contention-"))
    root = work / "vault"
    shutil.copytree(cached_vault(2_000), root, symlinks=True)
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(agents + 1)
    out = ctx.Queue()
    procs = [
        ctx.Process(target=_agent, args=(str(exe), str(root), i, agents, calls, barrier, out))
        for i in range(agents)
    ]
    try:
        for p in procs:
            p.start()
        barrier.wait(timeout=120)
        start = time.perf_counter()
        results = [out.get(timeout=600) for _ in procs]
        elapsed = time.perf_counter() - start
        for p in procs:
            p.join(timeout=60)
            if p.exitcode != 0:
                raise RuntimeError(f"an agent failed (exit status {p.exitcode})")
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
        shutil.rmtree(work, ignore_errors=True)
    samples: dict[str, list[float]] = {}
    for took in results:
        for op, ms in took:
            samples.setdefault(op, []).append(ms)
    return samples, 2 * agents * calls / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, nargs="*", default=[4])
    parser.add_argument("--calls", type=int, default=40, help="create + read rounds per agent")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if max(args.agents) > len(AGENTS):
        parser.error(f"--agents: at most {len(AGENTS)}")
    paths = install()
    builds = {
        "this checkout": paths["this checkout"] / "bin" / "agent-mem-vault",
        BASELINE: paths[BASELINE] / "bin" / "agent-mem-vault",
    }
    print(
        f"{platform.node()} · {os.cpu_count()} CPUs · Python {platform.python_version()} · "
        f"load at start {os.getloadavg()[0]:.2f}"
    )
    for agents in args.agents:
        samples: dict[str, dict[str, list[float]]] = {name: {} for name in builds}
        rates: dict[str, list[float]] = {name: [] for name in builds}
        for repeat in range(args.repeats):
            order = list(builds.items())
            for name, exe in order if repeat % 2 == 0 else order[::-1]:
                got, rate = phase(exe, agents, args.calls)
                for op, values in got.items():
                    samples[name].setdefault(op, []).extend(values)
                rates[name].append(rate)
        print(
            f"\n{agents} agents on one vault, {args.calls} create + read rounds each, "
            f"{args.repeats} runs per build; load at end {os.getloadavg()[0]:.2f}\n"
        )
        print("| ms per call: median · p90 · p99 | create | read | calls/s in all |")
        print("|---|---:|---:|---:|")
        for name in builds:
            cells = [
                f"{statistics.median(v):.1f} · {quantile(v, 0.9):.1f} · {quantile(v, 0.99):.1f}"
                for v in (samples[name]["create"], samples[name]["read"])
            ]
            cells.append(f"{statistics.median(rates[name]):.0f}")
            print(f"| agent-mem-vault {name} | " + " | ".join(cells) + " |")
        ours, base = samples["this checkout"], samples[BASELINE]
        ratios = [
            f"×{statistics.median(ours[op]) / statistics.median(base[op]):.2f}"
            for op in ("create", "read")
        ]
        rate = statistics.median(rates["this checkout"]) / statistics.median(rates[BASELINE])
        print(
            f"| this checkout ÷ {BASELINE} (medians) | " + " | ".join(ratios) + f" | ×{rate:.2f} |"
        )


if __name__ == "__main__":
    sys.exit(main())
