"""What a vault that travels with git costs, at 1,000, 10,000 and 100,000 notes.

    .venv/bin/python benchmarks/bench_sync.py                 # 1k, 10k and 100k notes
    .venv/bin/python benchmarks/bench_sync.py --quick         # 1k and 10k, fewer rounds
    .venv/bin/python benchmarks/bench_sync.py --sizes 1000 100000 --rounds 30

A size N is N notes (N/2 handoffs, N/2 memories over ten namespaces, written by
``bench_vault.generate``) in vault A, joined to a bare repository on the local disk
(the "local remote"); vault B, a second machine, joins the same remote. Both run
their keeper (as a vault of that size does after its first call), so what is
measured is the sync, not the vault's own check of a namespace by ``stat``.

The rounds are interleaved: each round measures every figure once at every size,
so a change in the machine's load falls on all sizes alike. Medians (p95 in
brackets), through what a user runs, with defaults:

- join: A's first commit and push of all its notes; B's join (fetch, write every
  note, index them);
- ``sync`` with nothing new (``Vault.sync``: commit what the journal names, fetch,
  nothing to merge or push);
- a session start after A left one handoff and pushed it: B's session-start
  hook lists the pending handoffs (``render_session_start`` on a new ``Vault``
  object, as a fresh process's first call), and the same as an ``agent-mem-vault
  hook session-start`` process (spawn → exit). B's syncer runs, as it does on a
  machine whose agent is in use, so the hook lists what the syncer last fetched
  and asks nothing of the remote (docs/sync.md);
- a claim (``read_handoff`` on B) of a handoff already here (B synced first):
  commit, push, taken; and with one refusal (A pushed first: the push is refused,
  B fetches, merges, claims again, pushes);
- a session start and then a claim, on one new ``Vault`` object, of a handoff A
  pushed a moment before: what an agent's first turn costs when its task has just
  arrived (B's view is behind: the claim fetches first); and the same once B's
  syncer, watching the remote while B is in use, has fetched it (a task sent a
  few seconds before the session starts);
- a write on A until it is on the remote, by the background syncer (create →
  the remote's ref moved).

The load average is printed with the table: the machine may be shared.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from agent_mem_vault.integrations.session_hook import HookInput, render_session_start
from agent_mem_vault.vault import Vault
from agent_mem_vault.vault.index.keeper_link import stop_keeper
from agent_mem_vault.vault.sync.syncer import stop_syncer
from bench_vault import NAMESPACES, generate
from measure import EXE, elapsed, load, ms_p95

NS = NAMESPACES[0]
ROWS = (
    "`sync` with nothing new",
    "session start after another machine pushed one handoff, the hook's vault part",
    "session start after another machine pushed one handoff, `hook session-start` spawn → exit",
    "claim of a handoff already here (`read_handoff`: commit, push)",
    "claim with one refusal (push refused, fetch, merge, claim again, push)",
    "session start, then claim of the handoff another machine pushed a moment before",
    "the same, of one B's watching syncer has fetched meanwhile",
    "a write until it is on the remote (background syncer)",
)


@dataclass
class Pair:
    """Vault A and vault B of one size, and the remote they share."""

    n: int
    a: Vault
    b: Vault
    remote: Path
    samples: dict[str, list[float]] = field(default_factory=dict)

    def add(self, row: str, ms: float) -> None:
        self.samples.setdefault(row, []).append(ms)


def env_of(vault: Path) -> dict[str, str]:
    return {**os.environ, "AGENT_MEM_VAULT": str(vault), "AGENT_MEM_VAULT_EMBEDDINGS": "off"}


def remote_head(remote: Path) -> str:
    """The remote's log: every push moves it (docs/sync.md)."""
    return (remote / "refs" / "agent-mem-vault-log" / "vault").read_text().strip()


def setup(work: Path, n: int) -> tuple[Pair, list[tuple[str, str]]]:
    root = work / f"size-{n}"
    root.mkdir()
    remote = root / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "--initial-branch=main", remote], check=True)
    generate(root / "a", n // 2, n // 2)
    a = Vault(root / "a")
    a.rescan()
    joined = elapsed(lambda: a.join_remote(str(remote)))
    b = Vault(root / "b")
    b.init()
    arrived = elapsed(lambda: b.join_remote(str(remote)))
    for vault in (a, b):
        subprocess.run(
            [str(EXE), "keeper", "--start", "--vault", str(vault.path)],
            check=True,
            capture_output=True,
            env=env_of(vault.path),
        )
    rows = [
        (f"join: first commit and push of {n:,} notes", f"{joined / 1000:.1f} s"),
        (f"join on a second machine: {n:,} notes arrive", f"{arrived / 1000:.1f} s"),
    ]
    return Pair(n, a, b, remote), rows


def one_round(pair: Pair, i: int) -> None:
    a, b = pair.a, pair.b
    pair.add(ROWS[0], elapsed(a.sync))
    a.create_handoff(to="codex", summary=f"new {i}", context="C", namespace=NS)
    a.sync()
    fresh = Vault(b.path)
    hook = HookInput(cwd=str(b.path))
    pair.add(
        ROWS[1], elapsed(lambda: render_session_start(fresh, hook, agent="codex", namespace=NS))
    )
    fresh.close()
    a.create_handoff(to="codex", summary=f"spawned {i}", context="C", namespace=NS)
    a.sync()
    argv = [str(EXE), "hook", "session-start", "--agent", "codex", "--namespace", NS]
    pair.add(
        ROWS[2],
        elapsed(
            lambda: subprocess.run(
                argv, env=env_of(b.path), capture_output=True, check=True, input=""
            )
        ),
    )
    b.sync()  # the claim below finds the handoff here and the remote where B saw it
    pair.add(ROWS[3], elapsed(lambda: b.read_handoff(agent="codex", namespace=NS)))
    a.create_handoff(to="aider", summary=f"moves the remote {i}", context="C", namespace=NS)
    a.sync()  # B's next push is refused: it fetches, merges and claims again
    pair.add(ROWS[4], elapsed(lambda: b.read_handoff(agent="codex", namespace=NS)))
    a.create_handoff(to="codex", summary=f"next task {i}", context="C", namespace=NS)
    a.sync()
    fresh = Vault(b.path)

    def start_then_claim() -> None:
        render_session_start(fresh, hook, agent="codex", namespace=NS)
        if fresh.read_handoff(agent="codex", namespace=NS) is None:
            raise SystemExit(f"bench_sync: B's claim found nothing in round {i}")

    pair.add(ROWS[5], elapsed(start_then_claim))
    fresh.close()
    watched = a.create_handoff(to="codex", summary=f"watched {i}", context="C", namespace=NS)
    a.sync()
    deadline = time.monotonic() + 30
    while not (b.path / watched.path).exists():  # B's syncer fetches while B is in use
        if time.monotonic() > deadline:
            raise SystemExit("bench_sync: B's syncer did not fetch a new handoff within 30 s")
        time.sleep(0.01)
    fresh = Vault(b.path)
    pair.add(ROWS[6], elapsed(start_then_claim))
    fresh.close()
    before = remote_head(pair.remote)
    start = time.perf_counter()
    # For another agent: codex's queue stays empty for the next round's claims.
    a.create_handoff(to="aider", summary=f"in the background {i}", context="C", namespace=NS)
    while remote_head(pair.remote) == before:
        time.sleep(0.002)
    pair.add(ROWS[7], (time.perf_counter() - start) * 1000)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=None)
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--quick", action="store_true", help="1k and 10k notes, fewer rounds")
    args = parser.parse_args()
    sizes = args.sizes or ([1_000, 10_000] if args.quick else [1_000, 10_000, 100_000])
    rounds = args.rounds or (5 if args.quick else 21)
    os.environ.setdefault("AGENT_MEM_VAULT_EMBEDDINGS", "off")
    work = Path(tempfile.mkdtemp(prefix="bench-sync-"))
    pairs: list[Pair] = []
    joins: dict[str, dict[int, str]] = {}
    try:
        for n in sizes:
            pair, rows = setup(work, n)
            pairs.append(pair)
            for what, figure in rows:
                joins.setdefault(what.split(":")[0], {})[n] = figure
                print(f"{n:>7,}  {what}: {figure}", file=sys.stderr)
        for i in range(rounds):
            for pair in pairs:
                one_round(pair, i)
            print(f"round {i + 1} of {rounds}, load {load()}", file=sys.stderr)
    finally:
        for pair in pairs:
            for vault in (pair.a, pair.b):
                stop_syncer(vault.path)
                stop_keeper(vault.path)
                vault.close()
        shutil.rmtree(work, ignore_errors=True)
    git = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.split()[-1]
    print(f"\nload average {load()} · git {git} · Python {sys.version.split()[0]}\n")
    print("| what | " + " | ".join(f"{n:,} notes" for n in sizes) + " |")
    print("|---|" + "---:|" * len(sizes))
    for what, figures in joins.items():
        print(f"| {what} | " + " | ".join(figures.get(n, "–") for n in sizes) + " |")
    for row in ROWS:
        cells = [ms_p95(p.samples[row]) if row in p.samples else "–" for p in pairs]
        print(f"| {row} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
