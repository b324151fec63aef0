"""Vault speed at scale, with the defaults a user gets, at the sizes its goals name.

    .venv/bin/python benchmarks/bench_vault.py                     # 2k, 20k and 100k
    .venv/bin/python benchmarks/bench_vault.py --sizes 2000        # one size, a minute
    .venv/bin/python benchmarks/bench_vault.py --quick             # 2k, few calls

A size N is N handoffs + N memories over ten namespaces (so N/10 notes in each
namespace folder), written as note files (rendered with the functions the
service uses) once and kept in ``--cache`` (default ``.benchmarks/``, ignored
by git) with their index, so a re-run starts measuring at once. The bench
edits one generated note in place and puts it back, reopens the handoffs it
reads, and removes the notes it creates, so the cached vault stays as built.

Every figure goes through what a user runs, with the defaults: the CLI and the
session hook as real subprocesses, the MCP server (``serve``, stdio) as a real
subprocess, and ``Vault`` objects with their default settings (no periodic
rescan; the MCP server's file watcher, as ``serve`` sets it up). Search is
full-text (BM25 over every match): embeddings are turned off
(``AGENT_MEM_VAULT_EMBEDDINGS=off``) because hybrid search has its own
benchmark (``bench_search.py``). The fresh-process figures are given both ways:
with a keeper running (started by the first call where a namespace is big
enough, by hand otherwise: a process asks it only where that is cheaper than
checking by ``stat``) and with none (``AGENT_MEM_VAULT_KEEPER=off``). Each
figure is a median (p95 in brackets) of many calls; a fresh-process figure is
the median of ``--runs`` processes. The load average is printed with the
table: the machine may be shared.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from agent_mem_vault.core.clock import format_datetime
from agent_mem_vault.core.errors import UnavailableError
from agent_mem_vault.core.ids import TidGenerator
from agent_mem_vault.vault import Handoff, Memory, Vault
from agent_mem_vault.vault.format.notes import (
    handoff_meta,
    memory_meta,
    parse_note,
    render_body,
    render_note,
)
from agent_mem_vault.vault.index.keeper_link import keeper_status
from measure import EXE, call_times, elapsed, load, ms_p95

NAMESPACES = [f"project/service-{i}" for i in range(10)]
AGENTS = ["codex", "claude-code", "gemini", "aider"]
WORDS = [
    "backfill",
    "batch",
    "orders",
    "migration",
    "lock",
    "index",
    "query",
    "latency",
    "cache",
    "retry",
    "queue",
    "deploy",
    "rollback",
    "schema",
    "column",
    "table",
    "replica",
    "shard",
    "partition",
    "timeout",
    "budget",
    "alert",
    "metric",
    "trace",
    "span",
    "error",
    "handler",
    "worker",
    "cron",
    "release",
    "branch",
    "review",
    "test",
    "fixture",
    "flaky",
    "coverage",
    "lint",
    "format",
    "typing",
    "config",
    "secret",
    "token",
    "session",
    "cookie",
    "header",
    "payload",
    "webhook",
    "stripe",
    "invoice",
    "refund",
    "customer",
    "ledger",
    "balance",
    "currency",
    "rounding",
    "tax",
    "report",
]


class _Clock:
    """A clock that starts in the past and advances 1 ms per call, for generated notes."""

    def __init__(self) -> None:
        self.t = datetime(2025, 1, 1, tzinfo=UTC)

    def now(self) -> datetime:
        self.t += timedelta(milliseconds=1)
        return self.t

    def monotonic(self) -> float:
        return time.monotonic()


def _vocabulary(size: int = 20_000) -> tuple[list[str], list[float]]:
    """Words with Zipf frequencies, as in real prose; the domain words sit at ranks 500+,
    so each is in about 1-2 % of memories (a word people actually search for)."""
    rng = random.Random(3)
    consonants, vowels = "bcdfghjklmnprstvwz", "aeiou"
    words: list[str] = []
    seen = set(WORDS)
    while len(words) < size:
        word = "".join(
            rng.choice(consonants) + rng.choice(vowels) for _ in range(rng.randint(1, 4))
        )
        if word not in seen:
            seen.add(word)
            words.append(word)
    words[500:500] = WORDS
    cum, total = [], 0.0
    for rank in range(len(words)):
        total += 1.0 / (rank + 1) ** 1.07
        cum.append(total)
    return words, cum


VOCAB, CUM = _vocabulary()
COMMON = VOCAB[0]  # the most frequent word: in nearly every memory, like "the"


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choices(VOCAB, cum_weights=CUM, k=n))


def generate(root: Path, handoffs: int, memories: int, seed: int = 7) -> None:
    """Write notes straight to disk, the way a vault looks after months of use.

    The folder is made a vault first (every command refuses a folder that is not
    one), and its index removed again: the index is built from the notes by the
    reindex row, or by the first call, as before."""
    Vault(root, durable=False).init()
    for index in (root / ".agent-mem-vault").glob("index.sqlite3*"):
        index.unlink()
    rng = random.Random(seed)
    clock = _Clock()
    tids = TidGenerator(clock, clock_id=1)
    for ns in NAMESPACES:
        for sub in ("handoffs", "memories"):
            (root / ns / sub).mkdir(parents=True, exist_ok=True)
    for i in range(handoffs):
        ns = NAMESPACES[i % len(NAMESPACES)]
        hid = tids.next()
        pending = rng.random() < 0.5
        created = format_datetime(clock.now())
        h = Handoff(
            id=hid,
            namespace=ns,
            sender=rng.choice(AGENTS),
            recipient=rng.choice(AGENTS),
            summary=_sentence(rng, 8),
            context=_sentence(rng, 60),
            status="pending" if pending else "read",
            created_at=created,
            read_at=None if pending else created,
        )
        text = render_note(handoff_meta(h), render_body(h.summary, h.context))
        (root / ns / "handoffs" / f"{hid}.md").write_text(text, encoding="utf-8")
    for i in range(memories):
        ns = NAMESPACES[i % len(NAMESPACES)]
        mid = tids.next()
        m = Memory(
            id=mid,
            namespace=ns,
            title=_sentence(rng, 6),
            content=_sentence(rng, 80),
            kind=rng.choice(["decision", "note", "task", "risk"]),
            created_at=format_datetime(clock.now()),
            tags=(rng.choice(WORDS),),
            agent=rng.choice(AGENTS),
        )
        text = render_note(memory_meta(m), render_body(m.title, m.content))
        (root / ns / "memories" / f"{mid}.md").write_text(text, encoding="utf-8")


def _writer(root: str, sender: str, count: int, barrier: Any, out: Any) -> None:
    vault = Vault(root)
    acknowledged, refused = [], 0
    barrier.wait()
    for i in range(count):
        try:
            h = vault.create_handoff(
                to="codex",
                summary=f"write {i} from {sender}",
                context="concurrent writer",
                namespace="bench/concurrent",
                from_=sender,
            )
        except UnavailableError:
            refused += 1  # lock_timeout: the caller was told, nothing was written
            continue
        acknowledged.append(h.id)
    out.put((acknowledged, refused))


def concurrent_writes(root: Path, processes: int, per_process: int) -> dict[str, float]:
    """Throughput of ``processes`` writers at once, and writes lost (acknowledged, not on disk)."""
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(processes + 1)
    out = ctx.Queue()
    workers = [
        ctx.Process(target=_writer, args=(str(root), f"writer-{p}", per_process, barrier, out))
        for p in range(processes)
    ]
    for w in workers:
        w.start()
    barrier.wait()
    start = time.perf_counter()
    results = [out.get() for _ in workers]
    elapsed = time.perf_counter() - start
    for w in workers:
        w.join()
    acknowledged = {i for ids, _ in results for i in ids}
    refused = sum(r for _, r in results)
    # Count from the notes themselves, the source of truth, not from the index.
    on_disk: set[str] = set()
    for path in (root / "bench" / "concurrent" / "handoffs").glob("*.md"):
        note = parse_note(path.read_text(encoding="utf-8"))
        assert note is not None
        on_disk.add(str(note.meta["id"]))
    indexed = {
        h.id
        for h in Vault(root).list_handoffs(namespace="bench/concurrent", status="all", limit=1000)
    }
    return {
        "rate": len(acknowledged) / elapsed,
        "seconds": elapsed,
        "acknowledged": len(acknowledged),
        "lost": len(acknowledged - on_disk),
        "not_indexed": len(acknowledged - indexed),
        "refused": refused,
    }


CACHE = Path(__file__).resolve().parents[1] / ".benchmarks"
NS = NAMESPACES[3]
SCRATCH = "bench/scratch"
"""Where the bench creates notes; removed at the end of each size."""
GENERATOR_VERSION = "2"
"""Bumped when ``generate`` changes what it leaves: cached vaults are made again."""

_FRESH = r"""
import json, sys, time
from agent_mem_vault.vault import Vault
from agent_mem_vault.integrations.session_hook import HookInput, render_session_start
root, what, ns = sys.argv[1], sys.argv[2], sys.argv[3]
start = time.perf_counter()
vault = Vault(root)
if what == "peek":
    vault.peek_handoff(agent="codex", namespace=ns)
elif what == "read":
    h = vault.read_handoff(agent="codex", namespace=ns)
elif what == "hook":
    render_session_start(vault, HookInput(cwd="."), agent="codex", namespace=ns)
elif what == "search":
    vault.search_memory(query="lock latency", limit=10)
elif what == "search-ns":
    vault.search_memory(query="lock latency", namespace=ns, limit=10)
elif what == "list-memories":
    vault.list_memories(namespace=ns, limit=50)
elif what == "list-memories-all":
    vault.list_memories(limit=50)
elapsed = (time.perf_counter() - start) * 1000
if what == "read" and h is not None:
    vault.reopen_handoff(h.id)
print(json.dumps(elapsed))
"""
"""A fresh process's first call, timed inside the process (imports excluded)."""


def env(keeper: bool = True) -> dict[str, str]:
    out = dict(os.environ)
    out.setdefault("AGENT_MEM_VAULT_EMBEDDINGS", "off")
    if not keeper:
        out["AGENT_MEM_VAULT_KEEPER"] = "off"
    return out


def wait_for_keeper(root: Path) -> bool:
    """Whether a call started a keeper (it does from ``START_FROM`` notes checked); once
    it is ready."""
    time.sleep(0.5)
    if not keeper_status(root)["running"]:
        return False
    deadline = time.monotonic() + 120
    while keeper_status(root).get("ready") is not True:
        if time.monotonic() > deadline:
            raise RuntimeError("the keeper was not ready within 120 s")
        time.sleep(0.1)
    return True


def keeper(root: Path, action: str) -> None:
    """``agent-mem-vault keeper --stop`` (or another action); a vault not indexed yet
    has none."""
    if not (root / ".agent-mem-vault").is_dir():
        return
    subprocess.run(
        [str(EXE), "keeper", f"--{action}", "--vault", str(root)],
        check=True,
        capture_output=True,
        env=env(),
    )


def cached_vault(cache: Path, size: int) -> Path:
    """The vault of ``size`` + ``size`` notes, generated once (notes only; the index is
    built by the reindex row)."""
    base = cache / f"vault-{size}"
    root = base / "vault"
    ready = base / "generated"
    if not ready.exists() or ready.read_text() != GENERATOR_VERSION:
        shutil.rmtree(base, ignore_errors=True)
        root.mkdir(parents=True)
        start = time.perf_counter()
        generate(root, size, size)
        print(
            f"generated {size:,} + {size:,} notes in {time.perf_counter() - start:.0f} s",
            file=sys.stderr,
        )
        ready.write_text(GENERATOR_VERSION)
    shutil.rmtree(root / "bench", ignore_errors=True)
    return root


def wall(argv: list[str], stdin: str | None = None, keeper: bool = True) -> float:
    """Spawn → exit of a command, in ms; it must succeed."""
    return elapsed(
        lambda: subprocess.run(
            argv, input=stdin, text=True, check=True, capture_output=True, env=env(keeper)
        )
    )


def fresh(root: Path, what: str, ns: str = NS, keeper: bool = True) -> float:
    """The vault's part of a fresh process's first call (ms), timed inside it."""
    out = subprocess.run(
        [sys.executable, "-c", _FRESH, str(root), what, ns],
        text=True,
        check=True,
        capture_output=True,
        env=env(keeper),
    )
    return float(out.stdout)


def mcp_first_call(root: Path, keeper: bool = True) -> tuple[float, float]:
    """``serve`` on stdio, as a client starts it: (spawn → initialize answered,
    initialized → first peek_handoff answered), in ms."""
    argv = [str(EXE), "serve", "--agent", "codex", "--namespace", NS, "--vault", str(root)]
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env(keeper),
    )
    assert proc.stdin is not None and proc.stdout is not None

    def send(body: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", **body}).encode() + b"\n")
        proc.stdin.flush()

    def answer(id_: int) -> None:
        assert proc.stdout is not None
        while True:
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError("serve closed stdout")
            reply = json.loads(line)
            if reply.get("id") == id_:
                if "error" in reply or reply["result"].get("isError"):
                    raise RuntimeError(f"request {id_} failed: {reply}")
                return

    init = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"},
    }
    try:
        start = time.perf_counter()
        send({"id": 1, "method": "initialize", "params": init})
        answer(1)
        ready = time.perf_counter()
        send({"method": "notifications/initialized"})
        args = {"agent": "codex", "namespace": NS}
        send(
            {"id": 2, "method": "tools/call", "params": {"name": "peek_handoff", "arguments": args}}
        )
        answer(2)
        done = time.perf_counter()
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    return (ready - start) * 1000, (done - ready) * 1000


def edit_by_hand(note: Path, i: int) -> None:
    """Change a note in place (no rename: the folder's mtime stays), as Obsidian saves."""
    text = note.read_text(encoding="utf-8")
    marker = "\nedited by hand "
    head = text.split(marker)[0].rstrip("\n")
    with open(note, "r+", encoding="utf-8") as fh:
        fh.write(f"{head}{marker}{i}\n")
        fh.truncate()


def disk(root: Path, n: int) -> list[tuple[str, str]]:
    """Bytes per note file and per index entry (the index file, FTS tables included)."""
    import sqlite3

    sizes = blocks = files = 0
    for ns in NAMESPACES:
        for sub in ("handoffs", "memories"):
            for entry in os.scandir(root / ns / sub):
                st = entry.stat()
                sizes += st.st_size
                blocks += st.st_blocks * 512
                files += 1
    db = root / ".agent-mem-vault" / "index.sqlite3"
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    index = db.stat().st_size
    return [
        (
            "disk: a note file (bytes of text / allocated on disk)",
            f"{sizes / files:.0f} B / {blocks / files:.0f} B",
        ),
        (
            "disk: the index, per note (index file / notes, FTS tables included)",
            f"{index / (2 * n):.0f} B ({index / 1e6:.0f} MB in all)",
        ),
    ]


def bench_size(cache: Path, n: int, calls: int, runs: int) -> list[tuple[str, str]]:
    root = cached_vault(cache, n)
    rows: list[tuple[str, str]] = []
    cli = [str(EXE)]

    # -- reindex, as a user runs it (CLI; the progress bar needs a terminal) -------------
    keeper(root, "stop")
    start = time.perf_counter()
    before = os.times()
    subprocess.run(
        [*cli, "reindex", "--json", "--vault", str(root)],
        check=True,
        env=env(),
        capture_output=True,
    )
    after = os.times()
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    rows.append(
        (
            "full `reindex` (CLI; CPU seconds of all its processes)",
            f"{time.perf_counter() - start:.1f} s (CPU {cpu:.1f} s) [load {load()}]",
        )
    )
    rows.extend(disk(root, n))
    note = sorted((root / NS / "handoffs").iterdir())[len(os.listdir(root / NS / "handoffs")) // 2]
    original = note.read_text(encoding="utf-8")
    try:
        # As a user gets it: a keeper started by an earlier call (if the namespace
        # is big enough to start one); then the same without any keeper.
        wall([*cli, "peek", "--agent", "codex", "-n", NS, "--vault", str(root)])
        keeper_started = wait_for_keeper(root)
        rows.append(("keeper started by the first call", "yes" if keeper_started else "no"))
        if not keeper_started:
            # Started by hand (or by a call on a bigger namespace of the same vault): a
            # fresh process asks it only where that is cheaper than checking by stat.
            keeper(root, "start")
            wait_for_keeper(root)
        rows.extend(fresh_rows(root, cli, runs, note, with_keeper=True))
        rows.extend(process_rows(root, calls, note))
        keeper(root, "stop")
        rows.extend(fresh_rows(root, cli, runs, note, with_keeper=False))
    finally:
        keeper(root, "stop")
        note.write_text(original, encoding="utf-8")
        shutil.rmtree(root / "bench", ignore_errors=True)
        Vault(root).list_handoffs(namespace=SCRATCH)  # the index forgets the scratch notes
    return rows


def fresh_rows(
    root: Path, cli: list[str], runs: int, note: Path, *, with_keeper: bool
) -> list[tuple[str, str]]:
    """A fresh process's first call: with the keeper a user gets (started by an earlier
    call, if any was started), or with none (``AGENT_MEM_VAULT_KEEPER=off``, as the
    first session after the keeper's 30 idle minutes)."""
    rows: list[tuple[str, str]] = []
    k = with_keeper
    tag = "keeper running: " if k else "no keeper: "
    ns_args = ["--agent", "codex", "-n", NS, "--vault", str(root)]
    wall([*cli, "peek", *ns_args], keeper=k)  # warm the page cache and the warm process
    if k:
        rows.append(
            (
                "fresh process: Python + CLI start-up (`--version`)",
                ms_p95([wall([*cli, "--version"]) for _ in range(runs)]),
            )
        )
    rows.append(
        (
            f"{tag}fresh process, first call: CLI `peek` (spawn → exit)",
            ms_p95([wall([*cli, "peek", *ns_args], keeper=k) for _ in range(runs)]),
        )
    )
    hook = [
        *cli,
        "hook",
        "session-start",
        "--agent",
        "codex",
        "--namespace",
        NS,
        "--vault",
        str(root),
    ]
    rows.append(
        (
            f"{tag}fresh process, first call: session hook (spawn → exit)",
            ms_p95([wall(hook, stdin='{"cwd": "."}', keeper=k) for _ in range(runs)]),
        )
    )
    mcp = [mcp_first_call(root, keeper=k) for _ in range(runs)]
    if k:
        rows.append(
            (
                "fresh process: MCP `serve`, spawn → `initialize` answered",
                ms_p95([m[0] for m in mcp]),
            )
        )
    rows.append(
        (
            f"{tag}fresh process, first call: MCP `peek_handoff` (after `initialize`)",
            ms_p95([m[1] for m in mcp]),
        )
    )
    for what, label in (
        ("peek", "`peek_handoff`"),
        ("read", "`read_handoff` (fsync)"),
        ("hook", "session hook (brief + pending list)"),
        ("search", "`search_memory`, whole vault"),
        ("search-ns", "`search_memory`, one namespace"),
        ("list-memories", "`list_memories`, 50 newest of a namespace"),
        ("list-memories-all", "`list_memories`, 50 newest of the vault"),
    ):
        rows.append(
            (
                f"{tag}fresh process, first call, the vault's part: {label}",
                ms_p95([fresh(root, what, keeper=k) for _ in range(runs)]),
            )
        )
    after_edit = []
    for i in range(runs):
        edit_by_hand(note, i)
        after_edit.append(fresh(root, "peek", keeper=k))
    rows.append(
        (
            f"{tag}fresh process after a note was edited by hand, the vault's part: `peek`",
            ms_p95(after_edit),
        )
    )
    return rows


def process_rows(root: Path, calls: int, note: Path) -> list[tuple[str, str]]:
    """A long-lived process: one ``Vault`` with defaults (checks by stat), and one
    watching the folder as the MCP server does."""
    rows: list[tuple[str, str]] = []
    for label, watching in (
        ("long-lived `Vault`", False),
        ("MCP server's `Vault` (watcher)", True),
    ):
        rows.extend(one_process(root, label, watching, calls, note))
    return rows


def one_process(
    root: Path, label: str, watching: bool, calls: int, note: Path
) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    rng = random.Random(1)
    queries = ["backfill", "lock latency", "invoice refund customer", "shard", "flaky test"]
    vault = Vault(root)
    if watching and not vault.watch(wait=60):
        return [(f"{label}: no watcher could start here", "–")]
    vault.peek_handoff(agent="codex", namespace=NS)
    vault.search_memory(query="lock", namespace=NS, limit=1)

    def read_reopen() -> None:
        h = vault.read_handoff(agent="codex", namespace=NS)
        if h is not None:
            vault.reopen_handoff(h.id)

    # Memories whose life the bench changes live in the scratch namespace (removed after).
    live = [vault.save_memory(namespace=SCRATCH, title="bench", content="first").id]
    some_id = vault.list_memories(namespace=NS, limit=1)[0].id

    def update() -> None:
        live.append(vault.update_memory(live[-1], content=_sentence(rng, 20)).id)

    def forget_restore() -> None:
        vault.forget_memory(live[-1])
        vault.restore_memory(live[-1])

    qi = iter(range(10**9))
    figures = [
        ("`peek_handoff`", lambda: vault.peek_handoff(agent="codex", namespace=NS)),
        ("`read_handoff` + `reopen_handoff` (2 fsync'd writes)", read_reopen),
        (
            "`list_handoffs`, 50 pending of a namespace",
            lambda: vault.list_handoffs(namespace=NS, status="pending", limit=50),
        ),
        (
            "`search_memory`, whole vault",
            lambda: vault.search_memory(query=queries[next(qi) % 5], limit=10),
        ),
        (
            "`search_memory`, one namespace",
            lambda: vault.search_memory(query=queries[next(qi) % 5], namespace=NS, limit=10),
        ),
        (
            f"`search_memory`, a word in most memories ({COMMON!r})",
            lambda: vault.search_memory(query=COMMON, limit=10),
        ),
        ("`get_project_brief`", lambda: vault.get_project_brief(namespace=NS)),
        (
            "`list_memories`, 50 newest of a namespace",
            lambda: vault.list_memories(namespace=NS, limit=50),
        ),
        ("`list_memories`, 50 newest of the vault", lambda: vault.list_memories(limit=50)),
        ("`get_memory`", lambda: vault.get_memory(some_id)),
        ("`update_memory` (a new version; 2 fsync'd writes)", update),
        ("`forget_memory` + `restore_memory` (2 fsync'd writes)", forget_restore),
        (
            "`create_handoff` (fsync)",
            lambda: vault.create_handoff(
                to="codex",
                summary="bench",
                context=_sentence(rng, 40),
                namespace=SCRATCH,
                from_="bench",
            ),
        ),
    ]
    for name, fn in figures:
        rows.append((f"{label}: {name}", ms_p95(call_times(lambda _, fn=fn: fn(), calls))))
    after_edit = []
    for i in range(max(5, calls // 10)):
        edit_by_hand(note, 1000 + i)
        time.sleep(0.05)  # the watcher's events arrive within milliseconds
        after_edit.append(elapsed(lambda: vault.peek_handoff(agent="codex", namespace=NS)))
    rows.append((f"{label}: `peek` after a note was edited by hand", ms_p95(after_edit)))
    vault.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes",
        default="2000,20000,100000",
        help="comma-separated sizes (N handoffs + N memories each)",
    )
    parser.add_argument("--quick", action="store_true", help="2k only, few calls")
    parser.add_argument("--calls", type=int, default=100, help="calls per in-process figure")
    parser.add_argument("--runs", type=int, default=15, help="processes per fresh-process figure")
    parser.add_argument("--cache", type=Path, default=CACHE, help="where vaults are kept")
    parser.add_argument(
        "--concurrent", action="store_true", help="also 8 processes creating at once (writes lost?)"
    )
    args = parser.parse_args()
    sizes = [2000] if args.quick else [int(s) for s in args.sizes.split(",")]
    calls, runs = (20, 5) if args.quick else (args.calls, args.runs)
    table: dict[str, dict[int, str]] = {}
    for n in sizes:
        print(f"size {n:,} [load {load()}]", file=sys.stderr)
        for name, value in bench_size(args.cache, n, calls, runs):
            table.setdefault(name, {})[n] = value
        if args.concurrent:
            root = cached_vault(args.cache, n)
            try:
                c = concurrent_writes(root, 8, 50)
            finally:
                shutil.rmtree(root / "bench", ignore_errors=True)
            table.setdefault("8 processes x 50 creates at once (fsync)", {})[n] = (
                f"{c['rate']:.0f}/s; lost {c['lost']:.0f}, unindexed {c['not_indexed']:.0f}"
            )
    print(f"\n{os.cpu_count()} CPUs; load average at the end: {load()}\n")
    print("| what | " + " | ".join(f"{n // 1000}k" for n in sizes) + " |")
    print("|---|" + "---|" * len(sizes))
    for name, by_size in table.items():
        print(f"| {name} | " + " | ".join(by_size.get(n, "–") for n in sizes) + " |")


if __name__ == "__main__":
    main()
