"""Vault speed at scale: the figures issue 2 asks for, measured through the real API.

    .venv/bin/python benchmarks/bench_vault.py            # 100,000 handoffs + 100,000 memories
    .venv/bin/python benchmarks/bench_vault.py --quick    # 2,000 + 2,000, a few seconds

The vault is generated quickly by writing note files directly (rendered with
the same functions the service uses), then indexed with ``Vault.reindex``;
every figure after that goes through the public ``Vault`` methods, one
long-lived ``Vault`` per process as the MCP server holds it. Each figure is the
median of many calls (p95 in brackets). The multi-process test starts 8 OS
processes that create handoffs at once and then counts, from the note files,
how many writes were lost.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from agent_mem_vault.core.clock import format_datetime
from agent_mem_vault.core.errors import UnavailableError
from agent_mem_vault.core.ids import TidGenerator
from agent_mem_vault.vault import Handoff, Memory, Vault
from agent_mem_vault.vault.notes import (
    handoff_meta,
    memory_meta,
    parse_note,
    render_body,
    render_note,
)

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
    """Write notes straight to disk, the way a vault looks after months of use."""
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


def timed(fn: Callable[[], object], n: int) -> tuple[float, float]:
    """(median, p95) in milliseconds over ``n`` calls."""
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return statistics.median(samples), samples[min(len(samples) - 1, int(len(samples) * 0.95))]


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--handoffs", type=int, default=None)
    parser.add_argument("--memories", type=int, default=None)
    parser.add_argument("--calls", type=int, default=None, help="calls per figure")
    parser.add_argument("--dir", type=Path, default=None, help="where to build the vault")
    parser.add_argument("--keep", action="store_true", help="keep the generated vault")
    args = parser.parse_args()
    n_handoffs = args.handoffs or (2_000 if args.quick else 100_000)
    n_memories = args.memories or (2_000 if args.quick else 100_000)
    calls = args.calls or (50 if args.quick else 300)
    per_writer = 20 if args.quick else 100

    base = Path(tempfile.mkdtemp(prefix="amv-bench-", dir=args.dir))
    root = base / "vault"
    root.mkdir()
    results: list[tuple[str, str]] = []
    try:
        start = time.perf_counter()
        generate(root, n_handoffs, n_memories)
        print(
            f"generated {n_handoffs:,} handoffs + {n_memories:,} memories "
            f"in {time.perf_counter() - start:.1f} s",
            file=sys.stderr,
        )

        vault = Vault(root)
        start = time.perf_counter()
        report = vault.reindex()
        reindex_s = time.perf_counter() - start
        assert report.handoffs == n_handoffs and report.memories == n_memories, report
        results.append(("full reindex", f"{reindex_s:.1f} s"))

        rescans = []
        for _ in range(5):
            start = time.perf_counter()
            vault.rescan()
            rescans.append(time.perf_counter() - start)
        results.append(
            (
                "rescan, unchanged vault (stat every note)",
                f"{statistics.median(rescans) * 1000:.0f} ms",
            )
        )
        walk = []
        for _ in range(3):
            start = time.perf_counter()
            n = sum(len(files) for _d, _s, files in os.walk(root))
            walk.append(time.perf_counter() - start)
        results.append(
            (
                f"  for scale: os.walk of the {n:,} files, no stat",
                f"{statistics.median(walk) * 1000:.0f} ms",
            )
        )

        ns = NAMESPACES[0]
        rng = random.Random(1)

        def fmt(pair: tuple[float, float]) -> str:
            return f"{pair[0]:.2f} ms (p95 {pair[1]:.2f})"

        results.append(
            (
                "peek_handoff",
                fmt(timed(lambda: vault.peek_handoff(agent="codex", namespace=ns), calls)),
            )
        )
        results.append(
            (
                "read_handoff (fsync)",
                fmt(timed(lambda: vault.read_handoff(agent="codex", namespace=ns), calls)),
            )
        )
        results.append(
            (
                "list_handoffs, 50 pending",
                fmt(
                    timed(
                        lambda: vault.list_handoffs(namespace=ns, status="pending", limit=50), calls
                    )
                ),
            )
        )
        results.append(
            (
                "get_handoff",
                fmt(
                    timed(
                        lambda: vault.get_handoff(vault.list_handoffs(namespace=ns, limit=1)[0].id),
                        calls,
                    )
                ),
            )
        )

        def create() -> None:
            vault.create_handoff(
                to="codex", summary="bench", context=_sentence(rng, 40), namespace=ns, from_="bench"
            )

        results.append(("create_handoff (fsync)", fmt(timed(create, calls))))
        fast = Vault(root, durable=False)
        results.append(
            (
                "create_handoff (durable=False)",
                fmt(
                    timed(
                        lambda: fast.create_handoff(
                            to="codex", summary="b", context="c", namespace=ns, from_="bench"
                        ),
                        calls,
                    )
                ),
            )
        )
        results.append(
            (
                "read_handoff (durable=False)",
                fmt(timed(lambda: fast.read_handoff(agent="claude-code", namespace=ns), calls)),
            )
        )
        queries = ["backfill", "lock latency", "invoice refund customer", "shard", "flaky test"]
        results.append(
            (
                f"search_memory, a word in most memories ({COMMON!r})",
                fmt(
                    timed(lambda: vault.search_memory(query=COMMON, limit=10), max(5, calls // 10))
                ),
            )
        )
        qi = iter(range(10**9))
        results.append(
            (
                "search_memory",
                fmt(
                    timed(
                        lambda: vault.search_memory(
                            query=queries[next(qi) % len(queries)], limit=10
                        ),
                        calls,
                    )
                ),
            )
        )
        results.append(
            (
                "get_project_brief",
                fmt(timed(lambda: vault.get_project_brief(namespace=ns), calls)),
            )
        )
        start = time.perf_counter()
        Vault(root).peek_handoff(agent="codex", namespace=ns)
        results.append(
            ("open a Vault + first peek", f"{(time.perf_counter() - start) * 1000:.1f} ms")
        )

        c = concurrent_writes(root, 8, per_writer)
        results.append(
            (
                f"8 processes x {per_writer} creates at once (fsync)",
                f"{c['rate']:.0f} writes/s ({c['seconds']:.1f} s); "
                f"{c['acknowledged']:.0f} acknowledged, lost: {c['lost']:.0f}, "
                f"missing from index: {c['not_indexed']:.0f}, lock timeouts: {c['refused']:.0f}",
            )
        )
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
        else:
            print(f"vault kept at {root}", file=sys.stderr)

    print(
        f"\nVault at {n_handoffs:,} handoffs + {n_memories:,} memories "
        f"({os.cpu_count()} CPUs, medians of {calls} calls)\n"
    )
    print("| operation | median |")
    print("|---|---|")
    for name, value in results:
        print(f"| {name} | {value} |")


if __name__ == "__main__":
    main()
