"""One machine of ``bench_team.py``: a long-lived process holding one ``Vault``, as an
agent is, told what to do by the coordinator one JSON line at a time on stdin.

    python benchmarks/team_machine.py VAULT BARRIER_FD     # its HOME is in the environment

Each timed command is answered twice: ``{"ready": true}`` once what is not timed is
done (joining, fetching what is pending, making the floor's commits), then the
result once the work is over. Between the two the machine waits on the team's
barrier, a pipe every machine of the team reads one byte from: the coordinator
writes one byte per machine when every machine is ready, so the whole team starts
at once. Times are ``time.monotonic()``, which every process of the machine reads
from the same clock, so the coordinator can set them against its own start.

A failed call is retried and counted by its error code: the figures are of work
done, and the counts say what it cost to get there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from agent_mem_vault.core.errors import AgentMemVaultError
from agent_mem_vault.vault import Vault

COMMANDS = ("join", "leave", "writes", "claims", "floor")
RETRIES = 50
"""Attempts at one step before the machine gives up and says so (the run fails)."""


class Machine:
    """The vault of one machine, the clone its floor pushes go through, and the barrier."""

    def __init__(self, vault: Path, barrier: int) -> None:
        self.vault = Vault(vault)
        self.barrier = barrier
        self.clone = vault.parent / (vault.name + "-floor.git")
        self.floor_tip = ""
        self.pushed = 0
        self.errors: Counter[str] = Counter()

    def wait_for_the_team(self) -> float:
        say({"ready": True})
        os.read(self.barrier, 1)
        return time.monotonic()

    def sync(self) -> None:
        """``Vault.sync()`` until the remote took what this vault holds."""
        for _ in range(RETRIES):
            report = self.vault.sync()
            if report.ok:
                return
            for route in report.routes:
                if route.error is not None:
                    self.errors[route.error.code] += 1
            time.sleep(0.05)
        raise RuntimeError(f"{self.vault.path}: sync failed {RETRIES} times: {self.errors}")

    def join(self, url: str) -> dict[str, Any]:
        self.vault.init()
        start = time.monotonic()
        report = self.vault.join_remote(url)
        if not report.ok:
            self.sync()
        return {"seconds": time.monotonic() - start}

    def leave(self, namespace: str, count: int) -> dict[str, Any]:
        """``count`` pending handoffs for codex, on the remote (not timed)."""
        ids = [
            self.vault.create_handoff(
                to="codex", summary=f"pending {i}", context="C", namespace=namespace
            ).id
            for i in range(count)
        ]
        self.sync()
        return {"ids": ids}

    def writes(self, namespace: str, count: int, name: str) -> dict[str, Any]:
        """Row 1: ``count`` handoffs for codex, each followed by ``Vault.sync()``."""
        self.errors.clear()
        self.wait_for_the_team()
        ids = []
        for i in range(count):
            handoff = self.vault.create_handoff(
                to="codex", summary=f"{name} {i}", context="C", namespace=namespace
            )
            self.sync()
            ids.append(handoff.id)
        return {"ids": ids, "end": time.monotonic(), "errors": dict(self.errors)}

    def claims(self, namespace: str) -> dict[str, Any]:
        """Row 2: ``read_handoff`` until it returns None; each call's latency."""
        self.errors.clear()
        self.sync()  # the pending set is here, as after a session start
        self.wait_for_the_team()
        ids: list[str] = []
        latencies: list[float] = []
        failures = 0
        while True:
            start = time.monotonic()
            try:
                handoff = self.vault.read_handoff(agent="codex", namespace=namespace)
            except AgentMemVaultError as exc:
                self.errors[exc.code] += 1
                failures += 1
                if failures > RETRIES:
                    raise
                time.sleep(0.05)
                continue
            latencies.append(time.monotonic() - start)
            if handoff is None:
                break
            ids.append(handoff.id)
        return {
            "ids": ids,
            "latencies": latencies,
            "end": time.monotonic(),
            "errors": dict(self.errors),
        }

    def floor(self, url: str, count: int, ref: str) -> dict[str, Any]:
        """Row 3: ``count`` plain ``git push``es, each of one small commit of its own to ``ref``
        (the machine's own), from the machine's own clone."""
        for attempt in range(RETRIES + 1):  # not timed: 32 clones at once, on one daemon
            if self.clone.exists():
                break
            done = subprocess.run(
                ["git", "clone", "--quiet", "--bare", url, str(self.clone)],
                capture_output=True,
                check=False,
            )
            if done.returncode != 0 and attempt == RETRIES:
                raise RuntimeError(f"git clone {url}: {done.stderr.decode()}")
            if done.returncode != 0:
                shutil.rmtree(self.clone, ignore_errors=True)
                time.sleep(0.1)
        commits = self.commits(count)
        self.wait_for_the_team()
        for sha in commits:
            for attempt in range(RETRIES + 1):
                pushed = subprocess.run(
                    [
                        "git",
                        "--git-dir",
                        str(self.clone),
                        "push",
                        "--quiet",
                        "origin",
                        f"{sha}:{ref}",
                    ],
                    capture_output=True,
                    check=False,
                )
                if pushed.returncode == 0:
                    break
                if attempt == RETRIES:
                    raise RuntimeError(pushed.stderr.decode())
        return {"end": time.monotonic()}

    def commits(self, count: int) -> list[str]:
        """``count`` commits in a line after the last one pushed, each changing one small
        file: made in one ``git fast-import``, before the clock starts."""
        stream = []
        for i in range(count):
            body = f"push {self.pushed + i} from {self.vault.path.name}\n"
            stream.append(
                f"commit refs/heads/floor\ncommitter m <m@m> {1_700_000_000 + i} +0000\n"
                f"data {len(body)}\n{body}"
            )
            if i == 0 and self.floor_tip:
                stream.append(f"from {self.floor_tip}\n")
            stream.append(f"M 644 inline note.txt\ndata {len(body)}\n{body}\n")
        subprocess.run(
            ["git", "--git-dir", str(self.clone), "fast-import", "--quiet", "--force"],
            input="".join(stream).encode(),
            check=True,
            capture_output=True,
        )
        shas = git(
            "--git-dir",
            str(self.clone),
            "rev-list",
            "--reverse",
            f"--max-count={count}",
            "refs/heads/floor",
        ).split()
        self.pushed += count
        self.floor_tip = shas[-1]
        return shas


def git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, check=True, text=True).stdout


def say(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main(argv: list[str]) -> int:
    machine = Machine(Path(argv[0]), int(argv[1]))
    for line in sys.stdin:
        command = json.loads(line)
        do = command.pop("do")
        if do == "quit":
            break
        if do not in COMMANDS:
            raise SystemExit(f"team_machine: no command {do!r}")
        say(getattr(machine, do)(**command))
    machine.vault.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
