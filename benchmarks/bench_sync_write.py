"""What one write costs a sync: git processes, wall time and CPU, per write.

    .venv/bin/python benchmarks/bench_sync_write.py
    .venv/bin/python benchmarks/bench_sync_write.py --vaults 4 --writes 40 --rounds 3
    .venv/bin/python benchmarks/ab.py --a main --b . bench_sync_write.py

Four vaults (each a machine) join one bare repository on the local disk and take
turns: a handoff, then ``Vault.sync()`` (commit, fetch what the others sent,
merge, push). Each git process a sync starts is counted; the CPU is this
process's and its children's (git at both ends of the file remote). The syncer is
off, so nothing else writes meanwhile. Medians over ``--rounds`` runs, each in a
new folder.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

os.environ["AGENT_MEM_VAULT_SYNC_AUTO"] = "off"

from agent_mem_vault.vault import Vault
from agent_mem_vault.vault.sync import gitcmd


def _cpu() -> tuple[float, float]:
    me = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, children.ru_utime + children.ru_stime


def one_run(vaults: int, writes: int) -> dict[str, float]:
    """Per write: git processes, wall ms, Python CPU ms, git CPU ms."""
    with tempfile.TemporaryDirectory(prefix="bench-sync-write-") as folder:
        root = Path(folder)
        remote = root / "remote.git"
        subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
        team = []
        for i in range(vaults):
            vault = Vault(root / f"machine-{i}" / "vault")
            vault.init()
            vault.join_remote(str(remote))
            team.append(vault)
        for vault in team * 2:  # every log on the remote, every machine has fetched
            vault.create_handoff(to="codex", summary="warm", context="C", namespace="team")
            vault.sync()
        started = gitcmd.Git.run
        count = 0

        def counted(self: gitcmd.Git, *args: str, **kwargs: object) -> gitcmd.GitResult:
            nonlocal count
            count += 1
            return started(self, *args, **kwargs)  # type: ignore[arg-type]

        gitcmd.Git.run = counted  # type: ignore[method-assign]
        try:
            before, clock = _cpu(), time.perf_counter()
            for n in range(writes):
                vault = team[n % vaults]
                vault.create_handoff(to="codex", summary=f"w {n}", context="C", namespace="team")
                if not vault.sync().ok:
                    raise RuntimeError(f"{vault.path}: the sync failed")
            wall, after = time.perf_counter() - clock, _cpu()
        finally:
            gitcmd.Git.run = started  # type: ignore[method-assign]
    return {
        "git": count / writes,
        "wall": wall / writes * 1000,
        "python": (after[0] - before[0]) / writes * 1000,
        "children": (after[1] - before[1]) / writes * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vaults", type=int, default=4)
    parser.add_argument("--writes", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    runs = [one_run(options.vaults, options.writes) for _ in range(options.rounds)]

    def median(key: str) -> float:
        return statistics.median(r[key] for r in runs)

    print(
        f"\n{options.vaults} vaults on a file remote, {options.writes} writes, load "
        f"{os.getloadavg()[0]:.1f}; medians of {options.rounds}\n"
    )
    print("| per write (`create_handoff` + `Vault.sync()`) | figure |")
    print("|---|---:|")
    print(f"| git processes | {median('git'):.1f} |")
    print(f"| wall | {median('wall'):.0f} ms |")
    print(f"| CPU, Python | {median('python'):.0f} ms |")
    print(f"| CPU, git (both ends) | {median('children'):.0f} ms |")


if __name__ == "__main__":
    main()
