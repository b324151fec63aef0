"""What signing costs a push: the same write sent unsigned and signed, interleaved.

    .venv/bin/python benchmarks/bench_signing.py            # 60 rounds
    .venv/bin/python benchmarks/bench_signing.py --quick    # 15

Three vaults in one process, each with a bare remote of its own, as a user gets
them: one unsigned (git that does not sign commits), one that signs through an
``ssh-agent`` holding a passphrase key (``sync init --sign --key key::…``), one
that signs with a key file that opens without a passphrase. Each round writes a
handoff in each vault, then times each vault's ``sync()`` (commit, fetch, push:
what a person waits for) in a rotating order. A push signs one commit (the log
entry), so the difference between the rows is the signature's cost. Keys are
made with ``ssh-keygen`` in a temporary HOME; nothing of the person running it
is used or changed.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from measure import elapsed, ms_p95

if TYPE_CHECKING:
    from agent_mem_vault.vault import Vault

PASSPHRASE = "bench passphrase"


def _run(*argv: str | Path, env: dict[str, str] | None = None) -> None:
    subprocess.run(
        [str(a) for a in argv],
        check=True,
        capture_output=True,
        env=env,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )


def _agent(base: Path, key: Path) -> tuple[subprocess.Popen[bytes], Path]:
    """An ``ssh-agent`` holding ``key`` (its passphrase typed by an askpass program)."""
    sock = base / "agent.sock"
    agent = subprocess.Popen(
        ["ssh-agent", "-D", "-a", str(sock)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    while not sock.exists():
        time.sleep(0.01)
    askpass = base / "askpass"
    askpass.write_text(f"#!/bin/sh\necho '{PASSPHRASE}'\n")
    askpass.chmod(0o755)
    env = {
        **os.environ,
        "SSH_AUTH_SOCK": str(sock),
        "SSH_ASKPASS": str(askpass),
        "SSH_ASKPASS_REQUIRE": "force",
        "DISPLAY": ":0",
    }
    _run("ssh-add", key, env=env)
    return agent, sock


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="15 rounds, not 60")
    args = parser.parse_args()
    rounds = 15 if args.quick else 60
    with tempfile.TemporaryDirectory(prefix="bench-signing-") as folder:
        base = Path(folder)
        home = base / "home"
        (home / ".ssh").mkdir(parents=True)
        os.environ.update(
            HOME=str(home),
            GIT_CONFIG_NOSYSTEM="1",
            AGENT_MEM_VAULT_SYNC_AUTO="off",  # each push is the benchmark's
            AGENT_MEM_VAULT_EMBEDDINGS="off",
        )
        _run("git", "config", "--global", "user.name", "Ada Lovelace")
        _run("git", "config", "--global", "user.email", "ada@example.com")
        locked, plain = home / ".ssh" / "locked", home / ".ssh" / "plain"
        _run("ssh-keygen", "-q", "-t", "ed25519", "-N", PASSPHRASE, "-f", locked)
        _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", plain)
        agent, sock = _agent(base, locked)
        os.environ["SSH_AUTH_SOCK"] = str(sock)
        try:
            _measure(base, rounds, f"key::{(home / '.ssh' / 'locked.pub').read_text().strip()}")
        finally:
            os.killpg(agent.pid, signal.SIGTERM)
            agent.wait(10)


def _measure(base: Path, rounds: int, agent_key: str) -> None:
    from agent_mem_vault.vault import Vault
    from agent_mem_vault.vault.sync.syncer import stop_syncer

    kinds = {
        "unsigned": None,
        "signed, ssh-ed25519 in ssh-agent": agent_key,
        "signed, ssh-ed25519 key file": str(base / "home" / ".ssh" / "plain"),
    }
    vaults: dict[str, Vault] = {}
    for i, (kind, key) in enumerate(kinds.items()):
        remote = base / f"remote-{i}.git"
        _run("git", "init", "--quiet", "--bare", "--initial-branch=main", remote)
        vault = Vault(base / f"vault-{i}")
        vault.init()
        chosen = None if key is None else vault.signing_key(key)
        vault.create_handoff(to="codex", summary="first", context="C", namespace="bench/sign")
        assert vault.join_remote(str(remote), sign=chosen).ok
        vaults[kind] = vault
    times: dict[str, list[float]] = {kind: [] for kind in kinds}
    names = list(kinds)
    for r in range(rounds + 2):
        for kind in names:
            vaults[kind].create_handoff(
                to="codex", summary=f"round {r}", context="C", namespace="bench/sign"
            )
        order = names[r % len(names) :] + names[: r % len(names)]
        for kind in order:
            taken = elapsed(lambda v=vaults[kind]: _synced(v))
            if r >= 2:  # two rounds to warm up
                times[kind].append(taken)
    floor = statistics.median(times["unsigned"])
    print(f"{rounds} rounds, interleaved; a write, then sync() (commit, fetch, push)")
    print("| push of one handoff | median (p95) | over unsigned |")
    print("| --- | --- | --- |")
    for kind in names:
        extra = statistics.median(times[kind]) - floor
        over = "" if kind == "unsigned" else f"+{extra:.1f} ms"
        print(f"| {kind} | {ms_p95(times[kind])} | {over} |")
    for vault in vaults.values():
        stop_syncer(vault.path)
        vault.close()


def _synced(vault: Vault) -> None:
    report = vault.sync()
    assert report.ok, report


if __name__ == "__main__":
    main()
