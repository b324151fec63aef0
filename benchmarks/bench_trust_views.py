"""What `trust policy require` costs the views an agent starts from, against `label`.

    .venv/bin/python benchmarks/bench_trust_views.py               # 1,000 pending, 5 rounds
    .venv/bin/python benchmarks/bench_trust_views.py --pending 200

Two vaults in one process, as a team gets them: Ada writes ``--pending`` handoffs
(2 KB each) and as many decisions, and syncs them through a bare remote; Bob checks
what arrives against a signers file listing them both (keys made by ``ssh-keygen``
in a temporary HOME). Each round times, on Bob's vault, ``peek_handoff``, a page of
``list_handoffs``, the session-start text, a ``search_memory`` and a page of
``list_memories`` (which under ``require`` leave out what no listed key signed) and
a ``read_handoff``, under ``label`` and then under ``require`` (rounds alternate
which goes first). "cold" is a
process that has not looked at these notes yet; "warm" asks again (the MCP
server and the hooks of one session do).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

NS = "project/harbor-api"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pending", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="amv-bench-trust-") as folder:
        base = Path(folder)
        os.environ.update(
            HOME=str(base),
            GIT_CONFIG_NOSYSTEM="1",
            AGENT_MEM_VAULT_SYNC_AUTO="off",
            AGENT_MEM_VAULT_EMBEDDINGS="off",
        )
        run(base, args.pending, args.rounds)


def run(base: Path, pending: int, rounds: int) -> None:
    from agent_mem_vault.integrations.session_hook import HookInput, render_session_start
    from agent_mem_vault.vault import Vault
    from agent_mem_vault.vault.sync import port
    from agent_mem_vault.vault.sync.signing import Chosen

    remote = base / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    signers = base / "allowed_signers"
    vaults = {}
    for name in ("ada", "bob"):
        key = base / f"{name}_key"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
        public = key.with_suffix(".pub").read_text().strip()
        with signers.open("a") as file:
            file.write(f'{name}@example.com namespaces="git" {" ".join(public.split()[:2])}\n')
        vault = Vault(base / name, durable=False)
        vault.init()
        assert vault.join_remote(str(remote), sign=Chosen(str(key), public)).ok
        config = base / name / ".agent-mem-vault-sync" / "vault.git" / "config"
        for setting, value in (("user.name", name), ("user.email", f"{name}@example.com")):
            subprocess.run(["git", "config", "--file", str(config), setting, value], check=True)
        vaults[name] = vault
    ada, bob = vaults["ada"], vaults["bob"]
    bob.trust_signers(None, str(signers))
    for i in range(pending):
        ada.create_handoff(to="codex", summary=f"task {i}", context="x" * 2000, namespace=NS)
        ada.save_memory(
            namespace=NS,
            title=f"Batch {i}",
            content=f"Backfill batch {i}: 1000 rows",
            kind="decision",
        )
    assert ada.sync().ok and bob.sync().ok
    hook = HookInput(cwd=str(bob.path))
    calls: dict[str, Callable[[], object]] = {
        "peek_handoff": lambda: bob.peek_handoff(agent="codex", namespace=NS),
        "list_handoffs (a page of 50)": lambda: bob.page_handoffs(namespace=NS, agent="codex"),
        "session start (the hook's text)": lambda: render_session_start(
            bob, hook, agent="codex", namespace=NS
        ),
        "search_memory (words, a page of 10)": lambda: bob.search_page(
            query="backfill batch", namespace=NS, mode="fts"
        ),
        "list_memories (a page of 50)": lambda: bob.page_memories(namespace=NS),
        "read_handoff (claim and push)": lambda: bob.read_handoff(agent="codex", namespace=NS),
    }
    times: dict[tuple[str, str, str], list[float]] = {}
    for r in range(rounds):
        policies = ["label", "require"] if r % 2 == 0 else ["require", "label"]
        for policy in policies:
            bob.trust_policy(None, policy)
            for what, call in calls.items():
                port._seen.clear()
                for heat in ("cold", "warm"):
                    started = time.perf_counter()
                    call()
                    took = time.perf_counter() - started
                    times.setdefault((what, policy, heat), []).append(took)
    print(
        f"{pending} pending handoffs and {pending} decisions, {rounds} rounds, "
        f"load {os.getloadavg()[0]:.1f}"
    )
    print("| call | label cold · warm | require cold · warm |")
    print("|---|---|---|")
    for what in calls:
        cells = []
        for policy in ("label", "require"):
            cold = statistics.median(times[(what, policy, "cold")]) * 1000
            warm = statistics.median(times[(what, policy, "warm")]) * 1000
            cells.append(f"{cold:.0f} · {warm:.0f} ms")
        print(f"| {what} | {cells[0]} | {cells[1]} |")
    for vault in vaults.values():
        vault.close()


if __name__ == "__main__":
    main()
