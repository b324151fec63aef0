"""Two revisions' MCP servers side by side, each call made to both in turn: the ratio per tool.

    .venv/bin/python benchmarks/ab_mcp.py --a main --b .
    .venv/bin/python benchmarks/ab_mcp.py --a v0.9 --b HEAD --calls 500

``ab.py`` interleaves whole runs of a benchmark; a tool call of a few
milliseconds still moves with what the machine did in the minute each run had,
and each revision runs its own copy of the script. Here one script, one SDK
client (the official ``mcp``, as a client program uses it) and one moment serve
both: the two revisions' ``agent-mem-vault serve`` run at once over stdio, each
on its own ``src/`` (checked out as ``ab.py`` does) with this environment's
dependencies, each on a vault of its own holding the same notes, and every call
goes to A then B, or B then A, in turn. The figure is each tool's median over
``--calls`` calls per side; the ratio B ÷ A above 1 is B slower.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

from ab import checkout, revisions_parser
from mcp import Client, StdioServerParameters

NS = "project/bench"
Call = Callable[[Client, int], Awaitable[Any]]


def server(src: Path, vault: Path, runtime: Path) -> StdioServerParameters:
    """``serve`` of the revision whose package is in ``src``, on ``vault``."""
    env = {
        **os.environ,
        "PYTHONPATH": str(src),
        "XDG_RUNTIME_DIR": str(runtime),
        "AGENT_MEM_VAULT_EMBEDDINGS": "off",
    }
    runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "agent_mem_vault.cli.main"]
    subprocess.run([*argv, "init", "--vault", str(vault)], env=env, check=True, capture_output=True)
    args = ["-m", "agent_mem_vault.cli.main", "serve", "--agent", "codex", "--namespace", NS]
    return StdioServerParameters(
        command=sys.executable, args=[*args, "--vault", str(vault)], env=env
    )


CALLS: dict[str, Call] = {
    "create_handoff": lambda c, i: c.call_tool(
        "create_handoff", {"to": "next", "summary": f"step {i}", "context": "batch it " * 20}
    ),
    "read_handoff": lambda c, i: c.call_tool("read_handoff", {"agent": "reader"}),
    "peek_handoff": lambda c, i: c.call_tool("peek_handoff", {"agent": "reader"}),
    "list_handoffs (50)": lambda c, i: c.call_tool("list_handoffs", {"status": "all", "limit": 50}),
    "save_memory": lambda c, i: c.call_tool(
        "save_memory", {"title": f"note {i}", "content": "lock time stayed low " * 5}
    ),
    "search_memory": lambda c, i: c.call_tool(
        "search_memory", {"query": "backfill lock", "limit": 10}
    ),
    "get_project_brief": lambda c, i: c.call_tool("get_project_brief", {}),
}


async def fill(client: Client, memories: int, handoffs: int) -> None:
    """The same notes on each side: memories to search, handoffs for ``reader`` to take."""
    for i in range(memories):
        await client.call_tool(
            "save_memory", {"title": f"backfill {i}", "content": f"batch {i}: lock time " * 5}
        )
    for i in range(handoffs):
        await client.call_tool(
            "create_handoff", {"to": "reader", "summary": f"task {i}", "context": "do it " * 20}
        )


async def compare(a: StdioServerParameters, b: StdioServerParameters, calls: int) -> list[str]:
    rows = ["| tool | A ms | B ms | B ÷ A |", "|---|---:|---:|---:|"]
    async with Client(a) as first, Client(b) as second:
        sides = {"A": first, "B": second}
        for client in sides.values():
            await fill(client, memories=200, handoffs=calls + 10)
        for name, call in CALLS.items():
            times: dict[str, list[float]] = {"A": [], "B": []}
            for i in range(-3, calls):  # three warm-up rounds, not counted
                for side in ("A", "B") if i % 2 == 0 else ("B", "A"):
                    start = time.perf_counter()
                    result = await call(sides[side], i)
                    took = (time.perf_counter() - start) * 1000
                    if result.is_error:
                        raise SystemExit(f"ab_mcp: {name} failed on {side}: {result.content}")
                    if i >= 0:
                        times[side].append(took)
            ma, mb = statistics.median(times["A"]), statistics.median(times["B"])
            rows.append(f"| {name} | {ma:.2f} | {mb:.2f} | {mb / ma:.2f} |")
            print(f"ab_mcp: {name} done", file=sys.stderr)
    return rows


def main() -> None:
    parser = revisions_parser(__doc__)
    parser.add_argument("--calls", type=int, default=300, help="calls of each tool per side")
    opts = parser.parse_args()
    if opts.calls < 1:
        parser.error("--calls must be at least 1")
    folders = checkout(opts.a, opts.work), checkout(opts.b, opts.work)
    with tempfile.TemporaryDirectory(prefix="ab-mcp-") as tmp:
        a, b = (
            server(folder / "src", Path(tmp) / side, opts.work / f"run-mcp-{side}")
            for side, folder in zip("ab", folders, strict=True)
        )
        rows = anyio.run(compare, a, b, opts.calls)
    print(
        f"\nMCP over stdio, SDK client: A = {opts.a}, B = {opts.b}, median of {opts.calls} "
        "calls each, alternating\n"
    )
    print("\n".join(rows))


if __name__ == "__main__":
    main()
