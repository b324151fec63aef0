"""Per-call speed over stdio beside the peers and an older build of our own, in one run.

    .venv/bin/python benchmarks/bench_mcp_peers.py                  # 2,000 and 20,000 items
    .venv/bin/python benchmarks/bench_mcp_peers.py --sizes 2000 --calls 20
    .venv/bin/python benchmarks/bench_mcp_peers.py --install-only   # just set up the cache

One command: the first run installs what it compares into a cache outside the
repository (``~/.cache/agent-mem-vault-bench``, or ``$AGENT_MEM_VAULT_BENCH_CACHE``),
each pinned, each in its own environment, never in the project's:

- ``@modelcontextprotocol/server-memory`` (the official MCP memory server, Node,
  with npm), ``handoff-mcp`` and ``ai-handoff`` (Python, each in its own venv);
- this checkout as a user gets it: ``pip install .`` into a venv of its own,
  without the dev extras (refreshed on every run);
- commit ``c2e8df2`` of this repository (``git worktree add`` into the cache, with
  its own plain venv), the build the per-call figures are held to.

Every server is started once per size and kept running, as an agent's client
keeps its server. Calls are interleaved: for each operation, each round calls
every server once, in an order that rotates, so a busy moment on the machine
falls on all of them alike. The SDK's own client (``mcp.Client``) makes the
calls; then the same calls are made again as bare JSON-RPC lines over the same
kind of pipes (no SDK on the client side), in the same protocol era, which shows
what is the server's and what is the client's.

The era: the SDK 2 client, left to choose (its default), speaks the 2026-07-28
exchange to a server that offers it (ours does), and the handshake era
(``initialize``) to one that does not (the peers, on SDK 1). So that a reader can
tell what the era costs from what is ours, this checkout is measured twice, each
server on its own copy of the store: as the client chooses (the headline row), and
with the client held to the handshake era (``Client(mode="legacy")``), as the
peers are spoken to.

The operations and each server's nearest tool (``PROFILES``): create (ours:
``create_handoff``, fsync'd twice, the default), peek (``peek_handoff``), read
(``read_handoff``, which marks the handoff read and so writes), search
(``search_memory``, 10 results) and a 10-item list (``list_handoffs``). A "-"
is an operation the server has no tool for. Stores: ours holds N handoffs + N
memories over ten namespaces (``bench_vault.generate``); server-memory a graph
of 2N entities; handoff-mcp and ai-handoff N writes made through their own
tool before timing. ``AGENT_MEM_VAULT_WARM=0`` for our servers: per-call time
is after start-up, and the warm process only changes start-up.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from bench_mcp import RawStdio, write_graph
from bench_vault import NAMESPACES, generate
from mcp import Client, StdioServerParameters

REPO = Path(__file__).resolve().parents[1]
CACHE = Path(
    os.environ.get("AGENT_MEM_VAULT_BENCH_CACHE", Path.home() / ".cache" / "agent-mem-vault-bench")
)
BASELINE = "c2e8df2"
MEMORY_SERVER = ("@modelcontextprotocol/server-memory", "2026.8.31")
PY_PEERS = {"handoff-mcp": "0.4.1", "ai-handoff": "0.3.3"}
HANDSHAKE = "agent-mem-vault (this checkout), handshake era"
NS = NAMESPACES[0]
TEXT = "Batch the orders backfill; start with 1000 rows and measure lock time."

Args = Callable[[int], dict[str, Any]]

TOOLS: dict[str, tuple[str, Args]] = {
    "create": (
        "create_handoff",
        lambda i: {"to": "reader", "summary": f"bench {i}", "context": TEXT},
    ),
    "peek": ("peek_handoff", lambda i: {"agent": "codex"}),
    "read": ("read_handoff", lambda i: {"agent": "reader"}),
    "search": ("search_memory", lambda i: {"query": "backfill lock", "limit": 10}),
    "list 10": ("list_handoffs", lambda i: {"limit": 10}),
}
"""Our tool for each operation, and its arguments for the call numbered ``i``."""
OPS = tuple(TOOLS)


@dataclass
class Profile:
    """How one server is started and which of its tools stands for each operation."""

    name: str
    argv: list[str]
    env: dict[str, str]
    tools: dict[str, tuple[str, Args]] = field(default_factory=dict)
    fill: tuple[str, Args] | None = None
    """The tool that fills the store (``None``: the store is written before the start)."""
    mode: str = "auto"
    """The SDK client's ``mode``: ``auto`` (its default) or ``legacy`` (handshake era)."""
    modern: bool = False
    """Whether the bare driver speaks the 2026-07-28 exchange (as the SDK client does
    with this server when left to choose)."""

    def params(self) -> StdioServerParameters:
        return StdioServerParameters(
            command=self.argv[0], args=self.argv[1:], env={**os.environ, **self.env}
        )


# -- the cache -------------------------------------------------------------------------


def _run(argv: list[str], **kw: Any) -> None:
    print("+", " ".join(argv), file=sys.stderr)
    subprocess.run(argv, check=True, **kw)


def _venv(folder: Path, *spec: str) -> Path:
    """A venv at ``folder`` with ``spec`` pip-installed (plain: no extras)."""
    python = folder / "bin" / "python"
    if not python.exists():
        _run([sys.executable, "-m", "venv", str(folder)])
    _run([str(python), "-m", "pip", "install", "-q", *spec])
    return folder


def install() -> dict[str, Path]:
    """Everything compared, installed into ``CACHE`` if missing; their paths."""
    CACHE.mkdir(parents=True, exist_ok=True)
    out: dict[str, Path] = {}
    name, version = MEMORY_SERVER
    folder = CACHE / f"server-memory-{version}"
    entry = folder / "node_modules" / name / "dist" / "index.js"
    if not entry.exists():
        _run(["npm", "install", "--prefix", str(folder), f"{name}@{version}", "--no-audit"])
    out["server-memory"] = entry
    for peer, version in PY_PEERS.items():
        folder = CACHE / f"{peer}-{version}"
        if not (folder / "bin" / "python").exists() or not (folder / ".installed").exists():
            _venv(folder, f"{peer}=={version}")
            (folder / ".installed").touch()
        out[peer] = folder
    tree = CACHE / f"tree-{BASELINE}"
    if not (tree / "pyproject.toml").exists():
        _run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(tree), BASELINE])
    folder = CACHE / f"venv-{BASELINE}"
    if not (folder / ".installed").exists():
        _venv(folder, str(tree))
        (folder / ".installed").touch()
    out[BASELINE] = folder
    # This checkout, installed as a user installs it (no dev extras), every run.
    folder = CACHE / "venv-this-checkout"
    if not (folder / ".installed").exists():
        _venv(folder, str(REPO))
        (folder / ".installed").touch()
    else:
        _venv(folder, "--no-deps", "--force-reinstall", str(REPO))
    out["this checkout"] = folder
    return out


# -- the servers -----------------------------------------------------------------------


def _ours(name: str, venv: Path, root: Path, *, handshake: bool = False) -> Profile:
    exe = venv / "bin" / "agent-mem-vault"
    return Profile(
        name=name,
        argv=[str(exe), "serve", "--agent", "codex", "--namespace", NS, "--vault", str(root)],
        env={"AGENT_MEM_VAULT_WARM": "0"},
        mode="legacy" if handshake else "auto",
        modern=not handshake,
        tools=TOOLS,
    )


def profiles(paths: dict[str, Path], work: Path, size: int) -> list[Profile]:
    """The servers compared at ``size`` items, their stores made under ``work``."""
    notes = _notes(size)
    subjects = []
    code = "import sys; from agent_mem_vault.vault import Vault; Vault(sys.argv[1]).reindex()"
    for name in ("this checkout", BASELINE):
        root = work / name.replace(" ", "-")
        shutil.copytree(notes, root, symlinks=True)
        _run([str(paths[name] / "bin" / "python"), "-c", code, str(root)])
        label = f"agent-mem-vault ({name})" if name != BASELINE else f"agent-mem-vault {BASELINE}"
        subjects.append(_ours(label, paths[name], root))
    root = work / "this-checkout-handshake"
    shutil.copytree(work / "this-checkout", root, symlinks=True)
    subjects.append(
        _ours(HANDSHAKE, paths["this checkout"], root, handshake=True),
    )
    graph = work / "graph.jsonl"
    write_graph(graph, size, lambda i: f"{TEXT} Part {i}.")
    subjects.append(
        Profile(
            name=f"server-memory {MEMORY_SERVER[1]}",
            argv=["node", str(paths["server-memory"])],
            env={"MEMORY_FILE_PATH": str(graph)},
            tools={
                "create": (
                    "create_entities",
                    lambda i: {
                        "entities": [
                            {"name": f"new-{i}", "entityType": "handoff", "observations": [TEXT]}
                        ]
                    },
                ),
                "read": ("open_nodes", lambda i: {"names": [f"note-{i % size}"]}),
                "search": ("search_nodes", lambda i: {"query": "backfill"}),
            },
        )
    )
    log = ("log_event", lambda i: {"type": "decision", "content": f"{i}: {TEXT}"})
    subjects.append(
        Profile(
            name=f"handoff-mcp {PY_PEERS['handoff-mcp']}",
            argv=[str(paths["handoff-mcp"] / "bin" / "handoff-mcp")],
            env={"HANDOFF_VAULT": str(work / "hm-vault"), "HANDOFF_PROJECT": "bench"},
            tools={
                "create": log,
                "read": ("get_brief", lambda i: {}),
                "search": ("search_memory", lambda i: {"query": "backfill lock", "limit": 10}),
            },
            fill=log,
        )
    )
    project = work / "ah-project"
    project.mkdir()
    save = (
        "memory_save",
        lambda i: {
            "project_path": str(project),
            "summary": f"{i}: {TEXT}",
            "next_actions": "measure",
            "agent": "codex",
        },
    )
    subjects.append(
        Profile(
            name=f"ai-handoff {PY_PEERS['ai-handoff']}",
            argv=[str(paths["ai-handoff"] / "bin" / "handoff"), "serve"],
            env={"HANDOFF_HOME": str(work / "ah-home")},
            tools={
                "create": save,
                "read": ("memory_get", lambda i: {"project_path": str(project)}),
                "list 10": (
                    "memory_history",
                    lambda i: {"project_path": str(project), "limit": 10},
                ),
            },
            fill=save,
        )
    )
    return subjects


def _notes(size: int) -> Path:
    """The generated notes for ``size`` (no index), made once into the cache."""
    folder = CACHE / "stores" / f"notes-{size}"
    if not (folder / ".complete").exists():
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        generate(folder, size, size)
        (folder / ".complete").touch()
    return folder


def fill(profile: Profile, size: int) -> None:
    """``size`` writes through the server's own tool: the first alone, then 200 at a
    time without waiting for each answer (the store's content is what matters
    here, not the time); a write the server refused meanwhile is made again alone."""
    if profile.fill is None:
        return
    tool, make = profile.fill
    raw = RawStdio(profile.params())
    assert raw.proc.stdin and raw.proc.stdout
    try:
        raw.initialize()
        raw.call(tool, make(0))  # alone: a store set up by its first call is set up once
        for start in range(1, size, 200):
            ids = []
            for i in range(start, min(size, start + 200)):
                raw.next_id += 1
                ids.append(raw.next_id)
                body = {"name": tool, "arguments": make(i)}
                line = {"jsonrpc": "2.0", "id": raw.next_id, "method": "tools/call", "params": body}
                raw.proc.stdin.write(json.dumps(line).encode() + b"\n")
            raw.proc.stdin.flush()
            waiting = dict(zip(ids, range(start, start + len(ids)), strict=True))
            again = []
            while waiting:
                reply = json.loads(raw.proc.stdout.readline())
                if reply.get("id") in waiting:
                    i = waiting.pop(reply["id"])
                    if "error" in reply or reply["result"].get("isError"):
                        again.append(i)  # e.g. "database is locked": calls run at once
            for i in again:
                raw.call(tool, make(i))  # alone; raises if it fails again
    finally:
        raw.close()


# -- timing ----------------------------------------------------------------------------

Samples = dict[str, dict[str, list[float]]]
"""server name → operation → milliseconds per call."""


def _rounds(subjects: list[Profile], op: str, calls: int, warmup: int) -> list[list[Profile]]:
    """Per round, the servers that have a tool for ``op``, in a rotating order."""
    able = [s for s in subjects if op in s.tools]
    return (
        [able[r % len(able) :] + able[: r % len(able)] for r in range(warmup + calls)]
        if able
        else []
    )


async def sdk_run(subjects: list[Profile], calls: int, warmup: int) -> Samples:
    samples: Samples = {s.name: {} for s in subjects}
    async with contextlib.AsyncExitStack() as stack:
        clients = {
            s.name: await stack.enter_async_context(Client(s.params(), mode=s.mode))
            for s in subjects
        }
        for op in OPS:
            for r, order in enumerate(_rounds(subjects, op, calls, warmup)):
                for s in order:
                    tool, make = s.tools[op]
                    start = time.perf_counter()
                    result = await clients[s.name].call_tool(tool, make(r))
                    took = (time.perf_counter() - start) * 1000
                    if result.is_error:
                        raise RuntimeError(f"{s.name} {tool}: {result.content}")
                    if r >= warmup:
                        samples[s.name].setdefault(op, []).append(took)
    return samples


def raw_run(subjects: list[Profile], calls: int, warmup: int) -> Samples:
    samples: Samples = {s.name: {} for s in subjects}
    raws = {s.name: RawStdio(s.params(), modern=s.modern) for s in subjects}
    try:
        for raw in raws.values():
            raw.initialize()
        for op in OPS:
            for r, order in enumerate(_rounds(subjects, op, calls, warmup)):
                for s in order:
                    tool, make = s.tools[op]
                    args = make(r + 100_000)  # new names: the SDK run made the first ones
                    start = time.perf_counter()
                    raws[s.name].call(tool, args)
                    took = (time.perf_counter() - start) * 1000
                    if r >= warmup:
                        samples[s.name].setdefault(op, []).append(took)
    finally:
        for raw in raws.values():
            raw.close()
    return samples


def _median(values: list[float] | None) -> float | None:
    return statistics.median(values) if values else None


def table(sdk: Samples, raw: Samples, ours: str, baseline: str) -> list[str]:
    """Medians (SDK client · bare JSON-RPC), and ours against the best peer and the baseline."""
    names = list(sdk)
    lines = [
        "| median ms (SDK client · bare JSON-RPC) | " + " | ".join(OPS) + " |",
        "|---|" + "---:|" * len(OPS),
    ]
    for name in names:
        cells = []
        for op in OPS:
            a, b = _median(sdk[name].get(op)), _median(raw[name].get(op))
            cells.append("-" if a is None or b is None else f"{a:.2f} · {b:.2f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    peers = [n for n in names if not n.startswith("agent-mem-vault")]
    rows = [
        ("SDK client", sdk, ours),
        ("bare JSON-RPC", raw, ours),
        ("SDK client, handshake era", sdk, HANDSHAKE),
    ]
    for label, run, mine_name in rows:
        cells = []
        for op in OPS:
            mine = _median(run[mine_name].get(op))
            base = _median(run[baseline].get(op))
            peer_times = [(m, n) for n in peers if (m := _median(run[n].get(op))) is not None]
            best = min(peer_times) if peer_times else None
            text = f"×{mine / base:.2f} of {BASELINE}" if mine and base else "-"
            if best and mine:
                text += f", ×{mine / best[0]:.2f} of {best[1].split()[0]}"
            cells.append(text)
        lines.append(f"| ours, {label} | " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[2_000, 20_000])
    parser.add_argument("--calls", type=int, default=50, help="timed calls per server and op")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--install-only", action="store_true")
    parser.add_argument("--dir", type=Path, default=None, help="where to make the stores")
    args = parser.parse_args()
    paths = install()
    if args.install_only:
        return
    print(
        f"{platform.node()} · {platform.machine()} · {os.cpu_count()} CPUs · "
        f"Python {platform.python_version()} · load at start {os.getloadavg()[0]:.2f}"
    )
    for size in args.sizes:
        work = Path(tempfile.mkdtemp(prefix="amv-peers-", dir=args.dir))
        try:
            subjects = profiles(paths, work, size)
            for s in subjects:
                fill(s, size)
            sdk = anyio.run(sdk_run, subjects, args.calls, args.warmup)
            raw = raw_run(subjects, args.calls, args.warmup)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        print(
            f"\n{size:,} items, {args.calls} interleaved calls per figure, "
            f"load at end {os.getloadavg()[0]:.2f}\n"
        )
        print("\n".join(table(sdk, raw, subjects[0].name, subjects[1].name)))


if __name__ == "__main__":
    main()
