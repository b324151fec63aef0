"""What faults cost: a giant note beside ordinary ones, PostgreSQL connections killed.

    .venv/bin/python benchmarks/bench_faults.py              # everything, a few minutes
    .venv/bin/python benchmarks/bench_faults.py --only note  # the giant note only
    .venv/bin/python benchmarks/bench_faults.py --quick      # a smoke run

**A giant note.** 10,000 memories (generated as ``bench_vault.py`` does, cached
in ``--cache``), and ``memory search`` (``Vault.search_page``, full text) for
two words: ``backfill`` (in about 1 % of the memories) and ``zqxworker`` (in
none), each asked without a giant note, beside a 50 MB log note that holds both
words on every line (over the 1 MiB limit: skipped), and beside a note just
under the limit (about 1 MB of the same lines: indexed, searched, its excerpt
cut). Each figure is the median (p95) of ``--calls`` searches on one
``Vault``; "first" is the first search after the note was written (it syncs
the index with the folder). Only public calls are used, so the script also
measures another checkout (``PYTHONPATH=/path/to/src``).

**PostgreSQL connections.** A private server (``tests/faults/private_postgres.py``):

- *soak*: 20 conversations on one host send 50 messages each (1,000 sends,
  the scripted model thinks 50 ms per turn) while ``pg_terminate_backend``
  ends every connection to the database every 0.5 s; the sends that
  complete, the failures by code, and what the logs hold (inputs twice, turns
  twice, turns left running).
- *restart*: the server is stopped for 5 s while a send waits; from the moment
  ``pg_ctl start`` returns (the server accepts connections), how long until
  that send completes, and how long a new send then takes. Median of
  ``--restarts``.
- *exit*: a process whose connections were all killed (or whose server was
  stopped) returns from ``main`` without closing its store: from that moment
  to the process's exit.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]
os.environ.setdefault("AGENT_MEM_VAULT_EMBEDDINGS", "off")
os.environ.setdefault("AGENT_MEM_VAULT_KEEPER", "off")

from agent_mem_vault.vault import Vault  # noqa: E402
from bench_vault import NAMESPACES, generate  # noqa: E402
from measure import call_times, elapsed, load, ms_p95  # noqa: E402

LINE = "2030-01-01 INFO backfill zqxworker processed a batch of orders in 12 ms\n"
WORDS = ("backfill", "zqxworker")


def vault_of(cache: Path, memories: int) -> Path:
    """``memories`` memories over ten namespaces, generated once and indexed."""
    root = cache / f"faults-{memories}" / "vault"
    ready = root.parent / "ready"
    if not ready.exists():
        shutil.rmtree(root.parent, ignore_errors=True)
        root.mkdir(parents=True)
        generate(root, 0, memories)
        Vault(root, durable=False).reindex()
        ready.write_text("1")
    return root


def log_note(path: Path, size: int) -> None:
    body = LINE * (size // len(LINE))
    path.write_text(
        f"---\ntype: memory\nid: 3zzzzzzzzzzz2\nnamespace: {NAMESPACES[0]}\ntitle: service log\n"
        f"kind: note\ncreated_at: 2030-01-01T00:00:00.000Z\n---\n# service log\n\n{body}",
        encoding="utf-8",
    )


def giant_note(cache: Path, memories: int, calls: int) -> None:
    root = vault_of(cache, memories)
    note = root / NAMESPACES[0] / "memories" / "service-log.md"
    note.unlink(missing_ok=True)
    vault = Vault(root)
    cases = [("no giant note", 0), ("a 50 MB note (skipped)", 50_000_000)]
    cases.append(("a 1.0 MB note (indexed)", (1 << 20) - 4096))
    print(f"\nmemory search beside {memories:,} memories (load {load()})")
    print(f"{'beside':<26} {'word':<10} {'hits':>5} {'first':>10}  {'then, median (p95)':<24}")
    for label, size in cases:
        if size:
            log_note(note, size)
        for word in WORDS:
            first = elapsed(lambda w=word: vault.search_page(query=w, mode="fts"))
            then = call_times(lambda _, w=word: vault.search_page(query=w, mode="fts"), calls)
            hits = vault.search_page(query=word, mode="fts").total
            print(f"{label:<26} {word:<10} {hits:>5} {first:>7.1f} ms  {ms_p95(then, 2):<24}")
        note.unlink(missing_ok=True)
        vault.rescan()


async def restart_once(server: object, dsn: str, down: float) -> tuple[float, float]:
    from tests.faults.soak import desk

    from agent_mem_vault.harness import HarnessHost
    from agent_mem_vault.store.postgres import postgres_persistence

    store = postgres_persistence(dsn, connect_timeout=down + 10)
    host = HarnessHost(persistence=store)
    harness = desk(10)
    try:
        await host.send(harness, "warm", thread_id="t")
        await asyncio.to_thread(server.stop)  # type: ignore[attr-defined]
        waiting = asyncio.create_task(host.send(harness, "while down", thread_id="t"))
        await asyncio.sleep(down)
        await asyncio.to_thread(server.start)  # type: ignore[attr-defined]
        back = time.perf_counter()
        await waiting
        waited = time.perf_counter() - back
        start = time.perf_counter()
        await host.send(harness, "after", thread_id="t")
        return waited * 1000, (time.perf_counter() - start) * 1000
    finally:
        await host.close()
        await store.close()


def exit_once(server: object, dsn: str, fault: str) -> float:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.faults.pg_exit_worker", dsn],
        cwd=HERE.parent,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin and proc.stdout
    with proc:
        proc.stdout.readline()
        if fault == "server stopped":
            server.stop()  # type: ignore[attr-defined]
        else:
            server.terminate(dsn)  # type: ignore[attr-defined]
        proc.stdin.write("go\n")
        proc.stdin.flush()
        proc.stdout.readline()  # the second send answered (or failed): main returns now
        start = time.perf_counter()
        proc.wait(timeout=600)
        took = (time.perf_counter() - start) * 1000
    if fault == "server stopped":
        server.start()  # type: ignore[attr-defined]
    return took


def postgres(sends: int, restarts: int) -> None:
    from tests.faults.private_postgres import PrivatePostgres
    from tests.faults.soak import soak

    server = PrivatePostgres()
    try:
        dsn = server.database()
        result = asyncio.run(soak(server, dsn, conversations=20, sends=sends, kill_every=0.5))
        log = result.log
        print(f"\nPostgreSQL, every connection killed every 0.5 s (load {load()})")
        print(
            f"sends {result.sent}, completed {result.completed} "
            f"({100 * result.completed / result.sent:.1f} %), failed {dict(result.failed)}; "
            f"{result.killed} connections killed in {result.rounds} rounds, "
            f"{result.seconds:.1f} s; "
            f"inputs twice {log.inputs_twice}, turns twice {log.turns_twice}, "
            f"left running {log.left_running}"
        )
        waits, afters = [], []
        for _ in range(restarts):
            waited, after = asyncio.run(restart_once(server, server.database(), 5.0))
            waits.append(waited)
            afters.append(after)
        print(f"server back after 5 s down: the waiting send completes in {ms_p95(waits, 2)};")
        print(f"  a new send then takes {ms_p95(afters, 2)}")
        for fault in ("connections killed", "server stopped"):
            took = [exit_once(server, server.database(), fault) for _ in range(3)]
            print(f"process exit after main returns, {fault}: {ms_p95(took, 2)}")
    finally:
        server.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=["note", "postgres"])
    parser.add_argument("--quick", action="store_true", help="small sizes, few calls")
    parser.add_argument("--cache", type=Path, default=Path(".benchmarks"))
    parser.add_argument("--calls", type=int, help="searches per figure (default 31; 5 quick)")
    args = parser.parse_args()
    memories, calls, sends, restarts = (2000, 5, 5, 1) if args.quick else (10_000, 31, 50, 5)
    calls = args.calls or calls
    if args.only in (None, "note"):
        giant_note(args.cache, memories, calls)
    if args.only in (None, "postgres"):
        postgres(sends, restarts)


if __name__ == "__main__":
    main()
