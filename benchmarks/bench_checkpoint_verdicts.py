"""What a checkpoint's verdicts cost: written by the machine that makes the checkpoint,
taken by one that joins from it (``vault/sync/checkpoint_verdicts.py``).

    .venv/bin/python benchmarks/bench_checkpoint_verdicts.py            # 1k, 10k, 100k notes
    .venv/bin/python benchmarks/bench_checkpoint_verdicts.py --quick    # 1k, 10k notes

A verdict store (a real SQLite file) recording N notes as a team's checking machine
holds them: written ten to an entry, the handoffs among them (half) read ten to an
entry, so 100,000 notes come with 15,000 entries. Each round: the
record a checkpoint carries is made from it and serialised (what the checkpoint's
writer adds to each checkpoint), then parsed and taken into a fresh store (what a
joiner adds to its first sync). Medians of 5 rounds (3 with --quick), and the size
of the file the checkpoint carries.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from agent_mem_vault.vault.sync.checkpoint_verdicts import _export, _rows
from agent_mem_vault.vault.sync.verdicts import VerdictStore


def _store(path: Path, n: int) -> dict[str, str]:
    """A store recording ``n`` notes as a team's checking machine holds them: written ten
    to an entry (a sync sends what changed within a second together), the handoffs among
    them (half) read ten to an entry; their path → blob."""
    blobs = {f"project/x/{kind}/{i:013d}.md": f"{i:040x}" for i in range(n) for kind in
             ("handoffs" if i % 2 else "memories",)}  # fmt: skip
    entries: dict[str, tuple[object, ...]] = {}
    changes, touches, notes = [], [], []
    for i, (path_, blob) in enumerate(blobs.items()):
        seq = i // 10
        made = f"{seq:040x}"
        entries[made] = (made, "m1", seq, "Ada <ada@x>", 1, None, "SHA256:k", "ada@x", 1.0)
        changes.append((path_, seq, "m1", seq, made))
        last = (path_, seq, "m1", seq, made)
        if "/handoffs/" in path_:
            rseq = n + i // 20
            read = f"{rseq:040x}"
            entries[read] = (read, "m2", rseq, "Bob <bob@x>", 1, None, "SHA256:j", "bob@x", 2.0)
            last = (path_, rseq, "m2", rseq, read)
        touches.append(last)
        notes.append((path_, f"{i:032x}", blob))
    with VerdictStore(path) as store:
        store.add_rows(
            {
                "entries": list(entries.values()),
                "changes": changes,
                "touches": touches,
                "notes": notes,
            }
        )
    return blobs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1k and 10k notes, 3 rounds")
    args = parser.parse_args()
    sizes, rounds = ((1_000, 10_000), 3) if args.quick else ((1_000, 10_000, 100_000), 5)
    print("| notes | written with a checkpoint | taken by a joiner | file |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="amv-bench-cpv-") as folder:
        for n in sizes:
            source = Path(folder, f"{n}.trust.sqlite")
            blobs = _store(source, n)
            wrote, took, size = [], [], 0
            for r in range(rounds):
                started = time.perf_counter()
                with VerdictStore(source, read_only=True) as store:
                    text = json.dumps(_export(store, blobs), separators=(",", ":"))
                wrote.append(time.perf_counter() - started)
                size = len(text.encode())
                target = Path(folder, f"{n}-{r}.trust.sqlite")
                started = time.perf_counter()
                data = json.loads(text)
                rows = _rows(data["entries"], data["notes"], blobs)
                with VerdictStore(target) as store:
                    store.add_rows(rows)
                took.append(time.perf_counter() - started)
            print(
                f"| {n:,} | {statistics.median(wrote) * 1000:.0f} ms "
                f"| {statistics.median(took) * 1000:.0f} ms | {size / 1e6:.1f} MB |"
            )


if __name__ == "__main__":
    main()
