"""Row 4 of ``bench_team.py``: what a session start costs, cold, on one machine of the
team, by the state of its remote.

Each kind of remote is a machine of its own (its HOME, its vault), and each
session start is a process of its own, ``agent-mem-vault hook session-start --agent codex``
process, given the hook JSON on stdin with its ``cwd`` in a clone named
``harbor-api`` (the namespace ``project/harbor-api``, which the vault's remote
carries), spawn → exit. One session start per machine comes first, untimed: the
earlier session of that machine. Then the kinds take turns, one session start
each per round, so a change in the machine's load falls on all of them alike.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tests.git_remote import bare_repo, git_env

from agent_mem_vault.vault.index.keeper_link import stop_keeper
from agent_mem_vault.vault.sync.syncer import stop_syncer, syncer_running
from measure import EXE, MS

__all__ = ["KINDS", "Relay", "machine_env", "session_starts"]

NS = "project/harbor-api"
KINDS = {
    "syncer": "an answering remote, the syncer watching",
    "no syncer": "an answering remote, no syncer (`AGENT_MEM_VAULT_SYNC_AUTO=off`)",
    "refusing": "a refusing remote (a closed port)",
    "silent": "a silent remote (accepts, never answers)",
    "gone": "a gone remote (a path that does not exist)",
    "none": "no remote (for reference)",
}
"""The kinds of remote, in the order of the table."""
LINK = Path(__file__).resolve().with_name("team_link.py")


def machine_env(home: Path, name: str, vault: Path, **extra: str) -> dict[str, str]:
    """A machine's environment: its own HOME and git identity (``git_env``), its vault,
    embeddings off as on a plain install."""
    env = {**os.environ, **git_env(home)}
    for who in ("AUTHOR", "COMMITTER"):
        env[f"GIT_{who}_NAME"] = name
        env[f"GIT_{who}_EMAIL"] = f"{name}@team.example"
    env.update(AGENT_MEM_VAULT=str(vault), AGENT_MEM_VAULT_EMBEDDINGS="off", **extra)
    return env


class Relay:
    """A ``team_link.py`` process in front of ``git daemon``: ``url(repo)`` reaches the
    daemon through it, ``delay_ms`` each way."""

    def __init__(self, daemon_port: int, delay_ms: int) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(LINK), str(daemon_port), str(delay_ms)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.proc.stdout is not None
        self.port = int(self.proc.stdout.readline())

    def url(self, repo: str) -> str:
        return f"git://127.0.0.1:{self.port}/{repo}"

    def fall_silent(self) -> None:
        self.proc.send_signal(signal.SIGUSR1)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait()


@dataclass
class HookMachine:
    vault: Path
    env: dict[str, str]

    def cli(self, *args: str, setting_up: bool = False) -> str:
        """``agent-mem-vault ARGS`` on this machine; ``setting_up``: with no syncer, so the
        session starts are the first to start one."""
        env = {**self.env, "AGENT_MEM_VAULT_SYNC_AUTO": "off"} if setting_up else self.env
        done = subprocess.run(
            [str(EXE), *args], env=env, capture_output=True, text=True, timeout=120
        )
        if done.returncode != 0:
            raise RuntimeError(f"agent-mem-vault {' '.join(args)}: {done.stderr}")
        return done.stdout

    def session_start(self, project: Path) -> tuple[float, str]:
        """One session start, as the client runs it: spawn → exit in ms, and the hook's
        first line."""
        start = time.perf_counter()
        done = subprocess.run(
            [str(EXE), "hook", "session-start", "--agent", "codex"],
            input=json.dumps({"cwd": str(project), "source": "startup"}),
            cwd=project,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if done.returncode != 0:  # the hook always exits 0: anything else is a fault
            raise RuntimeError(f"hook session-start exited {done.returncode}: {done.stderr}")
        return (time.perf_counter() - start) * MS, done.stdout.partition("\n")[0]

    def leave_handoffs(self) -> None:
        for i in range(3):
            self.cli(
                "create", "--from", "claude-code", "--to", "codex", "-n", NS,
                "-s", f"pending {i}", "-c", "Left for the next session.", setting_up=True,
            )  # fmt: skip


def session_starts(
    root: Path, base: Path, port: int, daemon_port: int, delay_ms: int, runs: int
) -> tuple[dict[str, list[float]], list[str]]:
    """``runs`` session starts of each kind (ms), and what the run saw on the way: how
    the syncer came to watch, the line a session is told on a remote that failed.

    ``base`` holds the daemon's repositories; ``port`` is where the answering remote
    is reached (the daemon, or a relay in front of it); ``daemon_port`` is the daemon's
    own, behind the relays made here for the remotes that refuse and fall silent."""
    project = root / "harbor-api"
    project.mkdir(parents=True)
    subprocess.run(["git", "init", "--quiet", str(project)], check=True)
    bare_repo(base / "hooks.git")
    answering = f"git://127.0.0.1:{port}/hooks.git"
    refusing, silent = Relay(daemon_port, delay_ms), Relay(daemon_port, delay_ms)
    gone = bare_repo(root / "gone.git")
    remotes = {
        "syncer": answering,
        "no syncer": answering,
        "refusing": refusing.url("hooks.git"),
        "silent": silent.url("hooks.git"),
        "gone": str(gone),
        "none": "",
    }
    idle = {"AGENT_MEM_VAULT_SYNC_IDLE": "3600"}
    machines = {
        kind: HookMachine(
            root / f"vault-{i}",
            machine_env(
                root / f"home-{i}",
                f"hooks-{i}",
                root / f"vault-{i}",
                **({"AGENT_MEM_VAULT_SYNC_AUTO": "off"} if kind == "no syncer" else idle),
            ),
        )
        for i, kind in enumerate(KINDS)
    }
    seen: list[str] = []
    try:
        for kind, machine in machines.items():  # "syncer" first: it leaves the handoffs
            remote = ["--remote", remotes[kind]] if remotes[kind] else []
            machine.cli("init", *remote, setting_up=True)
            if kind in ("syncer", "gone", "none"):
                machine.leave_handoffs()
                if remote:
                    machine.cli("sync", setting_up=True)
        refusing.stop()
        silent.fall_silent()
        shutil.rmtree(gone)
        seen.extend(_earlier_sessions(machines, project))
        taken: dict[str, list[float]] = {kind: [] for kind in KINDS}
        said: dict[str, str] = {}
        for _ in range(runs):
            for kind, machine in machines.items():
                ms, said[kind] = machine.session_start(project)
                taken[kind].append(ms)
        if syncer_running(machines["syncer"].vault) is None:
            seen.append("the syncer was gone by the end of the run: the first row is not its")
        for kind in ("refusing", "silent", "gone"):
            seen.append(f"a session on {KINDS[kind].split(' (')[0]} is told: {said[kind]}")
        return taken, seen
    finally:
        silent.stop()
        refusing.stop()
        for machine in machines.values():
            stop_syncer(machine.vault)
            stop_keeper(machine.vault)


def _earlier_sessions(machines: dict[str, HookMachine], project: Path) -> list[str]:
    """One session start on each machine, untimed; then the syncer of the first kind must
    be watching (the earlier session started it, or else a write does): what happened."""
    for machine in machines.values():
        machine.session_start(project)
    watched = machines["syncer"]
    if syncer_running(watched.vault) is not None:
        return ["the earlier session start started the syncer"]
    watched.cli(
        "create", "--from", "claude-code", "--to", "aider", "-n", NS,
        "-s", "wakes the syncer", "-c", "C",
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while syncer_running(watched.vault) is None:
        if time.monotonic() > deadline:
            raise RuntimeError("a write on a synced vault started no syncer within 30 s")
        time.sleep(0.05)
    return [
        "the earlier session start started no syncer (nothing of its own to send); a write "
        "(`create`) then did"
    ]
