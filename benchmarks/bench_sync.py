"""What a vault that travels with git costs, at 1,000, 10,000 and 100,000 notes.

    .venv/bin/python benchmarks/bench_sync.py                 # 1k, 10k and 100k notes
    .venv/bin/python benchmarks/bench_sync.py --quick         # 1k and 10k, fewer calls
    .venv/bin/python benchmarks/bench_sync.py --sizes 10000

A size N is N notes (N/2 handoffs, N/2 memories over ten namespaces, written by
``bench_vault.generate``) in vault A, joined to a bare repository on the local disk
(the "local remote"); vault B, a second machine, joins the same remote. Every
figure is a median (p95 in brackets) through what a user runs, with defaults:

- join: A's first commit and push of all its notes; B's join (fetch, write every
  note, index them);
- ``sync`` with nothing new (``Vault.sync``: commit what the journal names, fetch,
  nothing to merge or push);
- a session start that fetches one new handoff: A leaves one and pushes it; B's
  session-start hook fetches, merges and lists it (``render_session_start`` on a
  new ``Vault`` object: the vault's part of the hook), and the same as a fresh
  ``agent-mem-vault hook session-start`` process (spawn → exit);
- a claim (``read_handoff`` on B): commit, push, taken; and with one refusal
  (A pushed first: fetch, merge, claim again, push);
- a write on A until it is on the remote, by the background syncer (create →
  the remote's ref moved).

The load average is printed with the table: the machine may be shared.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench_vault import NAMESPACES, generate, load  # noqa: E402

from agent_mem_vault.integrations.session_hook import HookInput, render_session_start  # noqa: E402
from agent_mem_vault.vault import Vault  # noqa: E402
from agent_mem_vault.vault.sync.syncer import stop_syncer  # noqa: E402

EXE = Path(sys.executable).parent / "agent-mem-vault"
NS = NAMESPACES[0]


def ms(samples: list[float]) -> str:
    samples = sorted(samples)
    p95 = samples[min(len(samples) - 1, int(len(samples) * 0.95))]
    return f"{statistics.median(samples):.1f} ms (p95 {p95:.1f})"


def once(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def remote_head(remote: Path) -> str:
    return subprocess.run(
        ["git", "rev-parse", "refs/heads/main"],
        cwd=remote,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def bench_size(work: Path, n: int, calls: int) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    root = work / f"size-{n}"
    a_path, b_path, remote = root / "a", root / "b", root / "remote.git"
    root.mkdir()
    subprocess.run(["git", "init", "-q", "--bare", "--initial-branch=main", remote], check=True)
    generate(a_path, n // 2, n // 2)
    a = Vault(a_path)
    a.rescan()
    rows.append((f"join, first commit and push of {n:,} notes", f"{once(lambda: a.join_remote(str(remote))) / 1000:.1f} s"))
    b = Vault(b_path)
    b.init()
    rows.append((f"join on a second machine ({n:,} notes arrive)", f"{once(lambda: b.join_remote(str(remote))) / 1000:.1f} s"))
    rows.append(("`sync` with nothing new", ms([once(a.sync) for _ in range(calls)])))

    # A session start on B that fetches one new handoff (A left it and pushed it).
    hook = HookInput(cwd=str(root))
    inside: list[float] = []
    for i in range(calls):
        a.create_handoff(to="codex", summary=f"new {i}", context="C", namespace=NS)
        a.sync()
        fresh = Vault(b_path)
        inside.append(once(lambda: render_session_start(fresh, hook, agent="codex", namespace=NS)))  # noqa: B023
        fresh.close()
    rows.append(("session start that fetches one new handoff, the hook's vault part", ms(inside)))
    spawned: list[float] = []
    env = {**os.environ, "AGENT_MEM_VAULT": str(b_path), "AGENT_MEM_VAULT_EMBEDDINGS": "off"}
    argv = [str(EXE), "hook", "session-start", "--agent", "codex", "--namespace", NS]
    for i in range(max(3, calls // 2)):
        a.create_handoff(to="codex", summary=f"spawned {i}", context="C", namespace=NS)
        a.sync()
        spawned.append(
            once(lambda: subprocess.run(argv, env=env, capture_output=True, check=True, input=""))
        )
    rows.append(("session start that fetches one new handoff, `hook session-start` spawn → exit", ms(spawned)))

    # Claims on B: uncontended, then each after A pushed first.
    rows.append(("claim (`read_handoff`: commit, push)", ms([once(lambda: b.read_handoff(agent="codex", namespace=NS)) for _ in range(calls)])))
    refused: list[float] = []
    for i in range(calls):
        a.create_handoff(to="aider", summary=f"moves the remote {i}", context="C", namespace=NS)
        a.sync()  # B's next push is refused: it fetches, merges, claims again
        refused.append(once(lambda: b.read_handoff(agent="codex", namespace=NS)))
    rows.append(("claim with one refusal (commit, push refused, fetch, merge, commit, push)", ms(refused)))

    # A write until the background syncer has it on the remote.
    out: list[float] = []
    for i in range(calls):
        before = remote_head(remote)
        start = time.perf_counter()
        a.create_handoff(to="codex", summary=f"bg {i}", context="C", namespace=NS)
        while remote_head(remote) == before:
            time.sleep(0.005)
        out.append((time.perf_counter() - start) * 1000)
    rows.append(("write until it is on the remote (background syncer)", ms(out)))
    for vault in (a, b):
        stop_syncer(vault.path)
        vault.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=None)
    parser.add_argument("--calls", type=int, default=None)
    parser.add_argument("--quick", action="store_true", help="1k and 10k notes, fewer calls")
    args = parser.parse_args()
    sizes = args.sizes or ([1_000, 10_000] if args.quick else [1_000, 10_000, 100_000])
    calls = args.calls or (5 if args.quick else 15)
    os.environ.setdefault("AGENT_MEM_VAULT_EMBEDDINGS", "off")
    work = Path(tempfile.mkdtemp(prefix="bench-sync-"))
    try:
        table: dict[str, dict[int, str]] = {}
        for n in sizes:
            for what, figure in bench_size(work, n, calls):
                table.setdefault(what, {})[n] = figure
                print(f"{n:>7,}  {what}: {figure}", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nload average {load()} · git {subprocess.run(['git', '--version'], capture_output=True, text=True).stdout.split()[-1]} · Python {sys.version.split()[0]}\n")
    print("| what | " + " | ".join(f"{n:,} notes" for n in sizes) + " |")
    print("|---|" + "---:|" * len(sizes))
    for what, figures in table.items():
        print(f"| {what} | " + " | ".join(figures.get(n, "–") for n in sizes) + " |")


if __name__ == "__main__":
    main()
