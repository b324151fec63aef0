"""Where one MCP call's time goes, from the agent's client down to the disk.

    .venv/bin/python benchmarks/bench_mcp_call.py               # 2,000 items
    .venv/bin/python benchmarks/bench_mcp_call.py --size 20000 --calls 100

Each operation is timed end to end through the real stdio server started as a
user's client starts it (``agent-mem-vault serve``, default settings: the
watch on), with the SDK's client and with bare JSON-RPC lines in each of the
two protocol eras (the 2026-07-28 exchange the SDK 2 client speaks, and the
handshake era an older client speaks); then, in this
process, on the same vault watched the same way, each layer below it alone:
the tool called on the server object (no JSON-RPC, no pipes), the argument
checks, the vault call, its change detection (``IndexUpkeep.sync``), and the
durable write a note costs (write, fsync, rename, fsync of the folder). The
table gives each part as the difference of two of those medians:

- SDK client: SDK client − bare JSON-RPC in the same era, 2026-07-28 (the
  client's own work: its session, its validation of the result against the
  tool's output schema);
- 2026-07-28 exchange: bare JSON-RPC in that era − in the handshake era (the
  server's reading of each request's ``_meta`` and stamping of each answer,
  in the SDK's server runner);
- JSON-RPC and stdio: bare JSON-RPC (handshake era) − the tool on the server object − the
  argument check middleware (the SDK's parsing, dispatch and serialisation,
  the pipes, read and written by the event loop: ``mcp/stdio_loop.py``);
- argument checks: the middleware's check plus the SDK's own model validation;
- response building: the tool on the server object − the vault call − the SDK's
  validation (rendering the text and the structured result; a call runs on the
  event loop, and hops to the vault's worker thread only when that is busy or,
  for a write, when another holder has the vault lock);
- change detection: ``IndexUpkeep.sync`` for the call's scope (the look at the
  watch, and what it reports applied);
- file I/O: the durable write of one note (for the calls that write);
- index: the vault call − change detection − file I/O (the SQLite query or
  update, reading notes back, building the models).

Medians of interleaved rounds (each round makes every kind of call once); the
differences of medians are estimates and a small negative one means zero.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

from agent_mem_vault.mcp import ServerSettings, build_server
from agent_mem_vault.mcp.arguments import ArgumentCheck
from agent_mem_vault.vault import Vault
from bench_mcp import RawStdio
from bench_mcp_peers import TEXT, TOOLS
from bench_vault import NAMESPACES, generate
from mcp import Client, StdioServerParameters
from measure import EXE

NS = NAMESPACES[0]
WRITES = {"create", "read"}
"""The operations that write a note durably."""


def _vault_call(vault: Vault, op: str, i: int) -> object:
    if op == "create":
        return vault.create_handoff(
            to="reader", summary=f"bench {i}", context=TEXT, namespace=NS, from_="codex"
        )
    if op == "peek":
        return vault.peek_handoff(agent="codex", namespace=NS)
    if op == "read":
        return vault.read_handoff(agent="reader", namespace=NS)
    if op == "search":
        return vault.search_memory(query="backfill lock", namespace=NS, limit=10)
    return vault.list_handoffs(namespace=NS, limit=10)


def _scope(op: str) -> list[tuple[str, str]]:
    return [(NS, "memories" if op == "search" else "handoffs")]


def _durable_write(folder: Path, i: int) -> None:
    """What writing one note costs the disk: as ``records.py`` writes, without the vault."""
    tmp = folder / f".bench-{i}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, TEXT.encode() * 8)
        os.fsync(fd)
    finally:
        os.close(fd)
    final = folder / f".bench-{i}.md.done"
    os.replace(tmp, final)
    dfd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
    final.unlink()


Timings = dict[str, dict[str, list[float]]]


def _add(out: Timings, what: str, op: str, start: float) -> None:
    out.setdefault(what, {}).setdefault(op, []).append((time.perf_counter() - start) * 1000)


def _params(root: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=str(EXE),
        args=["serve", "--agent", "codex", "--namespace", NS, "--vault", str(root)],
        env={**os.environ, "AGENT_MEM_VAULT_WARM": "0"},
    )


async def over_stdio(root: Path, twins: tuple[Path, Path], calls: int, out: Timings) -> None:
    """The SDK client's server on ``root``, the bare drivers' on ``twins`` (copies):
    none sees another's writes."""
    raw = RawStdio(_params(twins[0]))
    raw.initialize()
    modern = RawStdio(_params(twins[1]), modern=True)
    modern.initialize()
    try:
        async with Client(_params(root)) as client:

            async def sdk(tool: str, args: dict[str, Any]) -> None:
                result = await client.call_tool(tool, args)
                if result.is_error:
                    raise RuntimeError(f"{tool}: {result.content}")

            async def bare_modern(tool: str, args: dict[str, Any]) -> None:
                modern.call(tool, args)

            async def bare(tool: str, args: dict[str, Any]) -> None:
                raw.call(tool, args)

            drivers = [
                ("sdk", sdk, 0),
                ("raw modern", bare_modern, 100_000),
                ("raw", bare, 100_000),
            ]
            for r in range(calls + 3):
                # The order rotates: none always follows another's write (whose journal
                # commit the next fsync may meet).
                turn = drivers[r % 3 :] + drivers[: r % 3]
                for op, (tool, make) in TOOLS.items():
                    for what, driver, offset in turn:
                        start = time.perf_counter()
                        await driver(tool, make(r + offset))
                        if r >= 3:
                            _add(out, what, op, start)
    finally:
        raw.close()
        modern.close()


async def in_process(root: Path, calls: int, out: Timings) -> None:
    vault = Vault(root)
    if not vault.watch(wait=30):
        raise RuntimeError("the watch did not start: the figures would be the stat path's")
    server = build_server(vault, ServerSettings(agent="codex", namespace=NS))
    check = next(m for m in server.middleware if isinstance(m, ArgumentCheck))
    tools = server._tool_manager
    folder = root / NS / "handoffs"
    steps: list[tuple[str, str, Callable[[int], Awaitable[object] | object]]] = []
    for op, (tool_name, make) in TOOLS.items():
        tool = tools.get_tool(tool_name)
        assert tool is not None
        meta = tool.fn_metadata

        def middleware(i: int, make: Any = make, name: str = tool_name) -> None:
            check.problems(name, make(i))

        def validate(i: int, make: Any = make, meta: Any = meta) -> None:
            meta.arg_model.model_validate(meta.pre_parse_json(make(i)))

        def on_server(i: int, name: str = tool_name, make: Any = make) -> Awaitable[object]:
            return server.call_tool(name, make(i + 200_000))

        def in_vault(i: int, op: str = op) -> object:
            return _vault_call(vault, op, i + 300_000)

        def sync(i: int, op: str = op) -> object:
            return vault._upkeep.sync(_scope(op))

        steps += [
            ("tool", op, on_server),
            ("middleware", op, middleware),
            ("validate", op, validate),
            ("vault", op, in_vault),
            ("sync", op, sync),
        ]
        if op in WRITES:
            steps.append(("io", op, lambda i: _durable_write(folder, i)))
    try:
        for r in range(calls + 3):
            for what, op, step in steps:
                start = time.perf_counter()
                done = step(r)
                if isinstance(done, Awaitable):
                    await done
                if r >= 3:
                    _add(out, what, op, start)
    finally:
        vault.close()


def breakdown(out: Timings) -> list[str]:
    def m(what: str, op: str) -> float:
        values = out.get(what, {}).get(op)
        return statistics.median(values) if values else 0.0

    rows: list[tuple[str, Callable[[str], float]]] = [
        ("end to end, SDK client", lambda op: m("sdk", op)),
        ("end to end, bare JSON-RPC, 2026-07-28", lambda op: m("raw modern", op)),
        ("end to end, bare JSON-RPC, handshake era", lambda op: m("raw", op)),
        ("· SDK client", lambda op: m("sdk", op) - m("raw modern", op)),
        ("· 2026-07-28 exchange (server)", lambda op: m("raw modern", op) - m("raw", op)),
        ("· JSON-RPC and stdio", lambda op: m("raw", op) - m("tool", op) - m("middleware", op)),
        ("· argument checks", lambda op: m("middleware", op) + m("validate", op)),
        ("· response building", lambda op: m("tool", op) - m("vault", op) - m("validate", op)),
        ("· change detection", lambda op: m("sync", op)),
        ("· file I/O (durable write)", lambda op: m("io", op)),
        (
            "· index (query or update, models)",
            lambda op: m("vault", op) - m("sync", op) - m("io", op),
        ),
    ]
    lines = ["| median ms | " + " | ".join(TOOLS) + " |", "|---|" + "---:|" * len(TOOLS)]
    for label, value in rows:
        lines.append(
            f"| {label} | " + " | ".join(f"{max(0.0, value(op)):.2f}" for op in TOOLS) + " |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=2_000, help="handoffs and memories each")
    parser.add_argument("--calls", type=int, default=60, help="rounds timed")
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="amv-bench-call-", dir=args.dir))
    out: Timings = {}
    try:
        root = base / "vault"
        root.mkdir()
        generate(root, args.size, args.size)
        Vault(root).reindex()
        twins = (base / "twin", base / "twin-modern")
        for twin in twins:
            shutil.copytree(root, twin, symlinks=True)
        load = os.getloadavg()[0]
        anyio.run(over_stdio, root, twins, args.calls, out)
        anyio.run(in_process, root, args.calls, out)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(
        f"{args.size:,} handoffs + {args.size:,} memories, {args.calls} rounds; "
        f"{platform.node()}, {os.cpu_count()} CPUs, load {load:.2f} → {os.getloadavg()[0]:.2f}\n"
    )
    print("\n".join(breakdown(out)))


if __name__ == "__main__":
    main()
