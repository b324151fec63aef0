"""Soak: an agent polls the vault while a person edits, adds and deletes notes by hand.

    .venv/bin/python benchmarks/bench_vault_soak.py                  # 100k, 10 minutes
    .venv/bin/python benchmarks/bench_vault_soak.py --size 2000 --minutes 1

The vault is the one ``bench_vault.py`` keeps in ``--cache`` (generated and
indexed there if missing). One process plays the agent: a ``Vault`` with the
defaults of the MCP server (the file watcher on, as ``serve`` sets it up) that
calls ``peek_handoff``, ``list_handoffs`` (50 pending), ``search_memory`` in
its namespace and ``search_memory`` over the whole vault, in turn, with 10 ms
between calls (``--no-watch``: the defaults of any other long-lived process,
checks by ``stat``). Meanwhile this process plays the person: every
``--every`` seconds it edits a note in place (as Obsidian saves), adds a note
or deletes the note it added, in turn, in the namespace the agent reads.

It prints, per call, the median (p50), p99 and the slowest of every call made
in the run, with the load average; and whether the agent saw each note added
by hand. Notes it added are removed at the end and the edited note is put back.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from agent_mem_vault.vault import Vault
from bench_vault import CACHE, NS, cached_vault, edit_by_hand, env
from measure import load, quantile

QUERIES = ["backfill", "lock latency", "invoice refund customer", "shard", "flaky test"]


def agent(root: str, seconds: float, watch: bool, out: Any, ready: Any) -> None:
    """Poll until ``seconds`` have passed; send back every call's duration and which
    hand-added notes were seen."""
    os.environ.update(env())
    vault = Vault(root)
    if watch and not vault.watch(wait=120):
        raise SystemExit("no file watcher could start here")
    vault.peek_handoff(agent="codex", namespace=NS)
    ready.set()
    samples: dict[str, list[float]] = {"peek": [], "list 50": [], "search ns": [], "search": []}
    seen: set[str] = set()
    end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < end:
        name = list(samples)[i % 4]
        query = QUERIES[i % len(QUERIES)]
        start = time.perf_counter()
        if name == "peek":
            vault.peek_handoff(agent="codex", namespace=NS)
        elif name == "list 50":
            page = vault.list_handoffs(namespace=NS, status="pending", agent="soak", limit=50)
            seen.update(h.summary for h in page)
        elif name == "search ns":
            vault.search_memory(query=query, namespace=NS, limit=10)
        else:
            vault.search_memory(query=query, limit=10)
        samples[name].append((time.perf_counter() - start) * 1000)
        i += 1
        time.sleep(0.01)
    vault.close()
    out.put((samples, seen))


def hand_id(i: int) -> str:
    """A valid note id (a TID: base32-sortable characters) for the ``i``-th note added."""
    alphabet = "234567abcdefghijklmnopqrstuvwxyz"
    tail = ""
    for _ in range(5):
        i, digit = divmod(i, 32)
        tail = alphabet[digit] + tail
    return f"3zzzzzzz{tail}"


def hand_note(i: int) -> str:
    """A handoff note as a person would write it in Obsidian (for the agent ``soak``)."""
    return (
        "---\n"
        "type: handoff\n"
        f'id: "{hand_id(i)}"\n'
        f"namespace: {NS}\n"
        "from: person\n"
        "to: soak\n"
        "status: pending\n"
        "read: false\n"
        'created_at: "2030-01-01T00:00:00.000Z"\n'
        "---\n"
        f"## Summary\nadded by hand {i}\n\n## Full Context\nwritten in Obsidian during the soak\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000, help="N handoffs + N memories")
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--every", type=float, default=3.0, help="seconds between hand edits")
    parser.add_argument("--no-watch", action="store_true", help="no file watcher (checks by stat)")
    parser.add_argument("--cache", type=Path, default=CACHE)
    args = parser.parse_args()
    root = cached_vault(args.cache, args.size)
    if not (root / ".agent-mem-vault" / "index.sqlite3").exists():
        Vault(root).reindex()
    folder = root / NS / "handoffs"
    notes = sorted(folder.iterdir())
    target = notes[len(notes) // 3]
    original = target.read_text(encoding="utf-8")
    ctx = multiprocessing.get_context("spawn")
    out, ready = ctx.Queue(), ctx.Event()
    seconds = args.minutes * 60
    proc = ctx.Process(target=agent, args=(str(root), seconds, not args.no_watch, out, ready))
    proc.start()
    ready.wait(300)
    added: list[Path] = []
    written: list[str] = []
    loads: list[float] = []
    edits = 0
    start = time.monotonic()
    try:
        while time.monotonic() - start < seconds - args.every:
            time.sleep(args.every)
            loads.append(float(load()))
            step = edits % 3
            if step == 0:
                edit_by_hand(target, edits)
            elif step == 1:
                note = folder / f"{hand_id(edits)}.md"
                note.write_text(hand_note(edits), encoding="utf-8")
                added.append(note)
                written.append(f"added by hand {edits}")
            else:
                added.pop().unlink()
            edits += 1
        samples, seen = out.get(timeout=seconds + 600)
        proc.join()
    finally:
        for note in added:
            note.unlink(missing_ok=True)
        target.write_text(original, encoding="utf-8")
    mode = "no watcher, checks by stat" if args.no_watch else "MCP server defaults, file watcher"
    print(
        f"\nSoak: {args.size:,} + {args.size:,} notes, {args.minutes:g} min, {mode}; "
        f"{edits} hand edits (edit / add / delete, one every {args.every:g} s); "
        f"load average median {statistics.median(loads or [0]):.1f}, max {max(loads or [0]):.1f} "
        f"({os.cpu_count()} CPUs)\n"
    )
    print("| call | calls | p50 | p99 | max |")
    print("|---|---|---|---|---|")
    everything: list[float] = []
    for name, values in samples.items():
        everything.extend(values)
        print(f"| {name} | {len(values)} | {_row(values)} |")
    print(f"| all | {len(everything)} | {_row(everything)} |")
    missed = [w for w in written if w not in seen]
    print(f"\nnotes added by hand seen by the agent: {len(written) - len(missed)}/{len(written)}")
    sys.exit(0)


def _row(values: list[float]) -> str:
    p99 = quantile(values, 0.99)
    return f"{statistics.median(values):.1f} ms | {p99:.1f} ms | {max(values):.1f} ms"


if __name__ == "__main__":
    main()
