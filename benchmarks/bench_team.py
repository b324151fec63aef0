"""A whole team on one git remote: writes, claims, the floor of plain ``git push``, and
what a session start costs by the state of the remote; then all of it again over a
link with 50 ms of round trip.

    .venv/bin/python benchmarks/bench_team.py            # 1, 8 and 32 machines
    .venv/bin/python benchmarks/bench_team.py --quick    # 1 and 8, fewer handoffs
    .venv/bin/python benchmarks/bench_team.py --sizes 1 4 --rounds 2 --writes 3 --pending 40
    .venv/bin/python benchmarks/bench_team.py --quick --sign   # every machine signs
    .venv/bin/python benchmarks/bench_team.py --quick --trust  # …and checks what arrives
    .venv/bin/python benchmarks/bench_team.py --quick --trust-beside  # checking against not
    .venv/bin/python benchmarks/bench_team.py --quick --one-log   # beside a route of one log

On the 2-core VM at load 5–40 the full run measures for 27 minutes, most of it the
32 machines' writes and claims, which go below one a second (``--pending 80``
halves the claims); ``--quick`` takes 2.5 minutes.

The remote is a bare repository served by ``git daemon`` on loopback (no limit on
its connections). Each machine has its own HOME (its own git identity) and its
own vault, joined to that remote, and is an agent: a long-lived process
(``team_machine.py``) holding one ``Vault`` and calling its methods. The team
starts each timed step together, on a barrier (a pipe every machine reads one
byte from). Background syncers are off for the team
(``AGENT_MEM_VAULT_SYNC_AUTO=off``) so that every push is one the row names. Rows,
at each team size:

1. **writes**: each machine creates ``--writes`` handoffs for codex in one
   namespace, each followed by ``Vault.sync()`` (commit, fetch, merge, push;
   retried until the remote took it): handoffs per second for the team, from the
   start to the last sync that returned; then the remote is read to check it
   holds every one.
2. **claims**: ``--pending`` handoffs pending for codex (twice as many at 32
   machines), left by one more machine and fetched by every machine first; then
   every machine calls ``read_handoff(agent="codex", namespace=…)`` until it gets
   None: deliveries per second for the team, the p50 · p99 · max of one call
   (every call, the last one that found nothing included), how many machines got
   at least one, and the check that each pending handoff was delivered exactly
   once (the union of what the machines got is the pending set, with no
   repeats): the run stops with an error if not.
3. **floor**: each machine pushes as many times as it wrote in row 1, each push
   one small commit of its own (made beforehand) to a ref of its own on the same
   daemon, from a clone of its own, with plain ``git push``: pushes per second.
   Rounds interleave the rows (writes, floor, claims, writes, floor, claims …;
   ``--rounds``, one at 32 machines) and each row's figure is the median of its
   rounds; the ratios are row 1 ÷ row 3 and row 2 ÷ row 3.
4. **session start** (``team_hooks.py``): ``agent-mem-vault hook session-start
   --agent codex``, a process of its own each time, spawn → exit, median of
   ``--hooks``, on an answering remote with the syncer watching, the same without
   a syncer, a refusing remote, a silent one, a gone one; and with no remote at
   all. The process hands over to the warm process as for a user
   (docs/agents.md); each half of the run has a runtime folder of its own, so its
   warm process and syncers start, and end, with it.

With ``--sign`` every machine's git signs its commits (a key file of its own,
``commit.gpgsign``), so each entry a vault sends is signed: run it beside a run
without to see what signing costs the team. The floor's commits are made before
its timed pushes, so they are signed outside them.

Then rows 1, 2, 3 and 4 again with 25 ms of delay each way between the machines
and the remote: ``tc qdisc … netem`` on the loopback of a network namespace of
its own when this machine has it (``team_link.netem_works``), else a relay on
loopback that holds every chunk 25 ms each way (``team_link.py``); the tables
say which. The load average is printed at every step: the machine may be shared.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]
os.environ.setdefault("AGENT_MEM_VAULT_EMBEDDINGS", "off")

from tests.git_remote import GitDaemon, bare_repo  # noqa: E402

from agent_mem_vault.vault.index.keeper_link import stop_keeper  # noqa: E402
from agent_mem_vault.vault.sync.syncer import stop_syncer  # noqa: E402
from measure import load, quantile  # noqa: E402
from team_hooks import KINDS, Relay, machine_env, session_starts  # noqa: E402
from team_link import NETEM, netem_works  # noqa: E402

MACHINE = HERE / "team_machine.py"
DELAY_MS = 25
"""Each way: a round trip takes 50 ms more."""


class Broken(RuntimeError):
    """What the team did is wrong (a handoff lost, delivered twice, missing on the
    remote): the run stops, whatever the figures."""


@dataclass
class SizeFigures:
    """What one team size measured, every round of it."""

    writes: list[float] = field(default_factory=list)
    """Handoffs per second, a figure per round."""
    floor: list[float] = field(default_factory=list)
    """Pushes per second, a figure per round."""
    claims: list[float] = field(default_factory=list)
    """Deliveries per second, a figure per round."""
    latencies: list[float] = field(default_factory=list)
    """Seconds, every ``read_handoff`` of every round."""
    reached: list[int] = field(default_factory=list)
    """Machines that got at least one handoff, a figure per round."""
    write_errors: dict[str, int] = field(default_factory=dict)
    claim_errors: dict[str, int] = field(default_factory=dict)


@dataclass
class PhaseFigures:
    """One link's figures: every team size, and the session starts."""

    link: str
    sizes: dict[int, SizeFigures] = field(default_factory=dict)
    one_log: dict[int, SizeFigures] = field(default_factory=dict)
    """``--one-log``: the same rows of a team whose route keeps one log (layout 1)."""
    hooks: dict[str, list[float]] = field(default_factory=dict)
    seen: list[str] = field(default_factory=list)
    loads: list[str] = field(default_factory=list)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PhaseFigures:
        sizes = {int(n): SizeFigures(**f) for n, f in data.pop("sizes").items()}
        one_log = {int(n): SizeFigures(**f) for n, f in data.pop("one_log", {}).items()}
        return cls(sizes=sizes, one_log=one_log, **data)


@dataclass
class Plan:
    sizes: list[int]
    rounds: int
    writes: int
    pending: int
    hooks: int
    sign: bool = False
    """Every machine's git signs its commits (``--sign``): an ssh-ed25519 key file of its
    own, ``commit.gpgsign``, so what its vault sends is signed (``sync/signing.py``)."""
    one_log: bool = False
    """A second team beside the first, its route made with one log (layout 1), its rows
    interleaved with the first's in every round (``--one-log``)."""
    trust: bool = False
    """Every machine signs (as ``sign``) and checks what arrives against one allowed
    signers file listing the whole team (``--trust``: git's ``gpg.ssh.allowedSignersFile``,
    policy ``label``; ``sync/verdicts.py``). With ``one_log``, the team beside it is not a
    route of one log but the same team signing and checking nothing: the cost of the
    checks, round for round."""

    @property
    def beside(self) -> str:
        """How the rows of the team beside the first are named."""
        return "signing, not checking" if self.trust else "one log (layout 1)"

    def pending_at(self, size: int) -> int:
        return self.pending * 2 if size >= 32 else self.pending

    def rounds_at(self, size: int) -> int:
        """One round at 32 machines and more: its claims alone take minutes."""
        return 1 if size >= 32 else self.rounds


def signs_commits(home: Path, env: dict[str, str]) -> None:
    """The git of the machine at ``home`` signs its commits with a key file of its own."""
    key = home / ".ssh" / "id_ed25519"
    key.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True, env=env
    )
    for name, value in (
        ("gpg.format", "ssh"),
        ("user.signingkey", str(key)),
        ("commit.gpgsign", "true"),
    ):
        subprocess.run(["git", "config", "--global", name, value], check=True, env=env)


def lists_every_member(signers: Path, members: list[Member]) -> None:
    """One allowed signers file naming every member's key, which each member's git names
    as its ``gpg.ssh.allowedSignersFile``: so each checks what arrives."""
    lines = []
    for member in members:
        public = (member.home / ".ssh" / "id_ed25519.pub").read_text().split()[:2]
        lines.append(f'{member.name}@team.example namespaces="git" {" ".join(public)}\n')
    signers.write_text("".join(lines))
    for member in members:
        subprocess.run(
            ["git", "config", "--global", "gpg.ssh.allowedSignersFile", str(signers)],
            check=True,
            env=member.env,
        )


class Member:
    """One ``team_machine.py`` process: its vault, and the pipes it is talked to by."""

    def __init__(
        self, root: Path, name: str, barrier: int, sign: bool = False, layout: str | None = None
    ) -> None:
        self.name = name
        self.vault = root / name / "vault"
        self.vault.parent.mkdir(parents=True)
        self.log = root / name / "stderr.log"
        env = machine_env(root / name / "home", name, self.vault, AGENT_MEM_VAULT_SYNC_AUTO="off")
        if layout is not None:
            env["AGENT_MEM_VAULT_SYNC_LAYOUT"] = layout
        self.home, self.env = root / name / "home", env
        if sign:
            signs_commits(root / name / "home", env)
        with self.log.open("w") as log:
            self.proc = subprocess.Popen(
                [sys.executable, str(MACHINE), str(self.vault), str(barrier)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                env=env,
                text=True,
                pass_fds=(barrier,),
            )

    def send(self, command: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()

    def answer(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait()
            tail = self.log.read_text()[-3000:]
            raise Broken(f"{self.name} ended ({self.proc.returncode}):\n{tail}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def ask(self, command: dict[str, Any]) -> dict[str, Any]:
        self.send(command)
        return self.answer()

    def leave(self) -> None:
        if self.proc.poll() is None:
            try:
                self.send({"do": "quit"})
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):  # stuck mid-command: a failed run
                self.proc.kill()
                self.proc.wait()
        stop_syncer(self.vault)
        stop_keeper(self.vault)


class Team:
    """``size`` machines, the barrier they start on, and ``sender``: one more machine,
    outside the team, that leaves the handoffs the claims race for."""

    def __init__(
        self,
        root: Path,
        size: int,
        sign: bool = False,
        layout: str | None = None,
        trust: bool = False,
    ) -> None:
        self.barrier, self.go = os.pipe()
        sign = sign or trust
        self.sender = Member(root, "sender", self.barrier, sign, layout)
        self.machines = [
            Member(root, f"machine-{i}", self.barrier, sign, layout) for i in range(size)
        ]
        if trust:
            lists_every_member(root / "allowed_signers", [self.sender, *self.machines])

    def ask(self, command: Callable[[int], dict[str, Any]]) -> list[dict[str, Any]]:
        for i, machine in enumerate(self.machines):
            machine.send(command(i))
        return [machine.answer() for machine in self.machines]

    def timed(self, command: Callable[[int], dict[str, Any]]) -> tuple[float, list[dict[str, Any]]]:
        """Every machine does ``command(i)``, all starting at once: the start (monotonic
        seconds) and each machine's answer."""
        for i, machine in enumerate(self.machines):
            machine.send(command(i))
        for machine in self.machines:
            if machine.answer() != {"ready": True}:
                raise Broken(f"{machine.name} was not ready")
        start = time.monotonic()
        os.write(self.go, b"." * len(self.machines))
        return start, [machine.answer() for machine in self.machines]

    def close(self) -> None:
        for machine in [self.sender, *self.machines]:
            machine.leave()
        os.close(self.barrier)
        os.close(self.go)


def ids_on_remote(bare: Path, namespace: str) -> set[str]:
    """The handoffs of ``namespace`` the remote holds: the notes its log's entries and
    its checkpoint carry (docs/sync.md), by path."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "--git-dir", str(bare), *args], capture_output=True, text=True, check=False
        ).stdout

    paths = git("log", "--format=", "--name-only", "refs/agent-mem-vault-log/vault").split()
    # Layout 2: every machine's log (each entry's tree holds the notes it set).
    logs = git("for-each-ref", "--format=%(refname)", "refs/agent-mem-vault-sync/_vault/_log/")
    for log in logs.split():
        for commit in git("rev-list", log).split():
            paths += git("ls-tree", "-r", "--name-only", commit).split()
    paths += git("ls-tree", "-r", "--name-only", "refs/heads/main").split()
    prefix = f"{namespace}/handoffs/"
    return {p[len(prefix) : -3] for p in paths if p.startswith(prefix) and p.endswith(".md")}


def team_rows(
    root: Path,
    base: Path,
    port: int,
    size: int,
    plan: Plan,
    out: SizeFigures,
    one_log: SizeFigures | None = None,
) -> None:
    """Rows 1–3 for a team of ``size``, on repositories of its own under ``base``,
    reached on ``port``; with ``one_log``, a second team on a route of one log beside it,
    round for round."""
    name = f"team-{size}"
    url = f"git://127.0.0.1:{port}/{name}.git"
    remote = bare_repo(base / f"{name}.git")
    bare_repo(base / f"{name}-floor.git")
    began = time.monotonic()
    teams = [(Team(root / name, size, plan.sign, trust=plan.trust), remote, url, out)]
    if one_log is not None:
        other = f"{name}-one-log" if not plan.trust else f"{name}-unchecked"
        teams.append(
            (
                Team(root / other, size, sign=True, trust=False)
                if plan.trust
                else Team(root / other, size, plan.sign, layout="1"),
                bare_repo(base / f"{other}.git"),
                f"git://127.0.0.1:{port}/{other}.git",
                one_log,
            )
        )
    try:
        for team, _remote, where, _figures in teams:
            team.sender.ask({"do": "join", "url": where})
            team.ask(_joining(where))
        progress(f"{size:>3} machines joined in {time.monotonic() - began:.0f} s")
        rounds = plan.rounds_at(size)
        first = teams[0][0]
        for r in range(rounds):
            for team, bare, _where, figures in teams:
                _writes(team, bare, r, plan.writes, figures)
            _floor(first, f"git://127.0.0.1:{port}/{name}-floor.git", plan.writes, out)
            for team, _bare, _where, figures in teams:
                _claims(team, r, plan.pending_at(size), figures)
            progress(
                f"{size:>3} machines, round {r + 1} of {rounds}: writes "
                f"{out.writes[-1]:.1f}/s, floor {out.floor[-1]:.1f}/s, claims "
                f"{out.claims[-1]:.1f}/s"
                + (
                    f"; {plan.beside}: writes {one_log.writes[-1]:.1f}/s, claims "
                    f"{one_log.claims[-1]:.1f}/s"
                    if one_log is not None
                    else ""
                )
            )
    finally:
        for team, *_rest in teams:
            team.close()


def _joining(url: str) -> Callable[[int], dict[str, Any]]:
    """Every machine's command to join ``url``."""
    return lambda _i: {"do": "join", "url": url}


def progress(line: str) -> None:
    """A line on stderr while the run goes on, with the time and the load."""
    print(f"{time.strftime('%H:%M:%S')} {line}; load {load()}", file=sys.stderr, flush=True)


def _writes(team: Team, remote: Path, r: int, count: int, out: SizeFigures) -> None:
    namespace = f"project/writes-{r}"
    start, answers = team.timed(
        lambda i: {"do": "writes", "namespace": namespace, "count": count, "name": f"m{i}"}
    )
    out.writes.append(count * len(answers) / (max(a["end"] for a in answers) - start))
    _add(out.write_errors, answers)
    written = {h for a in answers for h in a["ids"]}
    missing = written - ids_on_remote(remote, namespace)
    if len(written) != count * len(answers) or missing:
        raise Broken(f"writes of round {r + 1}: not on the remote: {sorted(missing)}")


def _floor(team: Team, url: str, count: int, out: SizeFigures) -> None:
    start, answers = team.timed(
        lambda i: {"do": "floor", "url": url, "count": count, "ref": f"refs/heads/machine-{i}"}
    )
    out.floor.append(count * len(answers) / (max(a["end"] for a in answers) - start))


def _claims(team: Team, r: int, pending: int, out: SizeFigures) -> None:
    namespace = f"project/claims-{r}"
    began = time.monotonic()
    left = team.sender.ask({"do": "leave", "namespace": namespace, "count": pending})
    pending_ids = set(left["ids"])
    progress(f"{pending} handoffs left pending in {time.monotonic() - began:.0f} s")
    start, answers = team.timed(lambda _i: {"do": "claims", "namespace": namespace})
    delivered = [h for a in answers for h in a["ids"]]
    twice = sorted(h for h, n in Counter(delivered).items() if n > 1)
    lost = sorted(pending_ids - set(delivered))
    strange = sorted(set(delivered) - pending_ids)
    if twice or lost or strange:
        raise Broken(
            f"claims of round {r + 1}: delivered twice {twice}, never {lost}, not pending {strange}"
        )
    out.claims.append(len(delivered) / (max(a["end"] for a in answers) - start))
    out.latencies.extend(t for a in answers for t in a["latencies"])
    out.reached.append(sum(1 for a in answers if a["ids"]))
    _add(out.claim_errors, answers)


def _add(errors: dict[str, int], answers: list[dict[str, Any]]) -> None:
    for answer in answers:
        for code, n in answer["errors"].items():
            errors[code] = errors.get(code, 0) + n


def run_phase(work: Path, link: str, delay_ms: int, plan: Plan) -> PhaseFigures:
    """Every row over one link: the daemon reached directly, or through a relay that
    holds each chunk ``delay_ms`` each way."""
    figures = PhaseFigures(link=link, loads=[load()])
    base = work / "served"
    base.mkdir(parents=True)
    # The phase's own warm process and syncers, started in its network namespace; they
    # leave when this folder goes.
    runtime = work / "runtime"
    runtime.mkdir(mode=0o700)
    os.environ["AGENT_MEM_VAULT_RUNTIME_DIR"] = str(runtime)
    with GitDaemon(base, options=("--max-connections=0",)) as daemon:
        relay = Relay(daemon.port, delay_ms) if delay_ms else None
        port = relay.port if relay is not None else daemon.port
        try:
            for size in plan.sizes:
                figures.sizes[size] = SizeFigures()
                if plan.one_log:
                    figures.one_log[size] = SizeFigures()
                team_rows(
                    work, base, port, size, plan, figures.sizes[size], figures.one_log.get(size)
                )
                figures.loads.append(load())
            figures.hooks, figures.seen = session_starts(
                work / "hooks", base, port, daemon.port, delay_ms, plan.hooks
            )
            progress(f"session starts done ({link})")
            figures.loads.append(load())
        finally:
            if relay is not None:
                relay.stop()
            shutil.rmtree(runtime, ignore_errors=True)
    return figures


def delayed_phase(work: Path, plan: Plan, argv: list[str]) -> PhaseFigures:
    """The rows again with ``DELAY_MS`` each way: by ``tc netem`` in a network namespace
    of its own (this script again, inside it) when this machine has it, else by the
    relay."""
    unshare = netem_works(DELAY_MS)
    if unshare is None:
        link = f"{2 * DELAY_MS} ms round trip, by a relay on loopback ({DELAY_MS} ms each way)"
        return run_phase(work, link, DELAY_MS, plan)
    work.mkdir(parents=True)
    results = work / "netem.json"
    script = NETEM.format(ms=DELAY_MS) + ' && exec "$0" "$@"'
    subprocess.run(
        [*unshare, "sh", "-c", script, sys.executable, __file__, *argv,
         "--inside-netem", str(results)],
        check=True,
    )  # fmt: skip
    return PhaseFigures.from_json(json.loads(results.read_text()))


def per_second(values: list[float]) -> str:
    return f"{statistics.median(values):,.1f}" if values else "–"


def ratio(top: list[float], bottom: list[float]) -> str:
    if not top or not bottom:
        return "–"
    return f"{statistics.median(top) / statistics.median(bottom):.2f}"


def latency(values: list[float]) -> str:
    if not values:
        return "–"
    ms = [v * 1000 for v in values]
    return f"{quantile(ms, 0.5):,.0f} · {quantile(ms, 0.99):,.0f} · {max(ms):,.0f} ms"


def counts(errors: dict[str, int]) -> str:
    return ", ".join(f"{code} {n}" for code, n in sorted(errors.items())) or "none"


def team_table(phase: PhaseFigures, plan: Plan) -> list[str]:
    sizes = plan.sizes
    cells: dict[str, Callable[[int, SizeFigures], str]] = {
        f"writes: handoffs/s for the team ({plan.writes} each, `create_handoff` + "
        "`Vault.sync()`, until the last is on the remote)": lambda _n, f: per_second(f.writes),
        "floor: plain `git push`es/s (one commit each, to the machine's own ref)": (
            lambda _n, f: per_second(f.floor)
        ),
        "writes ÷ floor": lambda _n, f: ratio(f.writes, f.floor),
        "claims: deliveries/s for the team (`read_handoff` until None; "
        f"{plan.pending} pending, {plan.pending_at(32)} at 32)": (
            lambda _n, f: per_second(f.claims)
        ),
        "claims ÷ floor": lambda _n, f: ratio(f.claims, f.floor),
        "one `read_handoff`: p50 · p99 · max": lambda _n, f: latency(f.latencies),
        "machines that got at least one (per round)": (
            lambda n, f: " · ".join(f"{x} of {n}" for x in f.reached) or "–"
        ),
        "errors retried: writes (sync) · claims": (
            lambda _n, f: f"{counts(f.write_errors)} · {counts(f.claim_errors)}"
        ),
    }
    lines = [
        f"**{phase.link}** (load average {' → '.join(phase.loads)})",
        "",
        "| what | " + " | ".join(f"{n}" for n in sizes) + " |",
        "|---|" + "---:|" * len(sizes),
    ]
    for what, cell in cells.items():
        row = [cell(n, phase.sizes[n]) if n in phase.sizes else "–" for n in sizes]
        lines.append(f"| {what} | " + " | ".join(row) + " |")
    other = plan.beside
    beside: dict[str, Callable[[int, SizeFigures, SizeFigures], str]] = {
        f"{other}, same rounds: writes/s": lambda _n, _f, o: per_second(o.writes),
        f"{other}: claims/s": lambda _n, _f, o: per_second(o.claims),
        f"claims: this team ÷ {other}": lambda _n, f, o: ratio(f.claims, o.claims),
        f"writes: this team ÷ {other}": lambda _n, f, o: ratio(f.writes, o.writes),
        f"{other}: one `read_handoff`, p50 · p99 · max": lambda _n, _f, o: latency(o.latencies),
        f"{other}: machines that got at least one": (
            lambda n, _f, o: " · ".join(f"{x} of {n}" for x in o.reached) or "–"
        ),
    }
    if phase.one_log:
        for what, both in beside.items():
            row = [
                both(n, phase.sizes[n], phase.one_log[n]) if n in phase.one_log else "–"
                for n in sizes
            ]
            lines.append(f"| {what} | " + " | ".join(row) + " |")
    lines.append("")
    lines.append(
        "every handoff delivered exactly once, every write on the remote: checked in every round"
    )
    return lines


def hooks_table(phases: list[PhaseFigures], runs: int) -> list[str]:
    lines = [
        f"session start, `hook session-start --agent codex` spawn → exit, median of {runs} (max)",
        "",
        "| remote | " + " | ".join(p.link for p in phases) + " |",
        "|---|" + "---:|" * len(phases),
    ]
    for kind, what in KINDS.items():
        cells = []
        for phase in phases:
            ms = phase.hooks.get(kind, [])
            cells.append(f"{statistics.median(ms):,.0f} ms ({max(ms):,.0f})" if ms else "–")
        lines.append(f"| {what} | " + " | ".join(cells) + " |")
    for phase in phases:
        lines.extend(["", f"{phase.link}:", *(f"- {line}" for line in phase.seen)])
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 and 8 machines, fewer handoffs")
    parser.add_argument("--sizes", type=int, nargs="*", default=None)
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--writes", type=int, default=None, help="handoffs each machine writes")
    parser.add_argument("--pending", type=int, default=None, help="handoffs claimed (×2 at 32)")
    parser.add_argument("--hooks", type=int, default=None, help="session starts of each kind")
    parser.add_argument("--no-delay-phase", action="store_true", help="only the direct link")
    parser.add_argument(
        "--trust",
        action="store_true",
        help="every machine signs, and checks what arrives against a list of the team",
    )
    parser.add_argument(
        "--sign", action="store_true", help="every machine's git signs its commits (ssh key)"
    )
    parser.add_argument(
        "--layout",
        choices=("1", "2"),
        default=None,
        help="the layout the team's route is made in (AGENT_MEM_VAULT_SYNC_LAYOUT)",
    )
    parser.add_argument(
        "--one-log",
        action="store_true",
        help="a second team beside, its route of one log (layout 1), rounds interleaved",
    )
    parser.add_argument(
        "--trust-beside",
        action="store_true",
        help="--trust, and beside it the same team signing but checking nothing, rounds "
        "interleaved",
    )
    parser.add_argument("--inside-netem", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.layout is not None:  # every machine inherits it
        os.environ["AGENT_MEM_VAULT_SYNC_LAYOUT"] = args.layout
    plan = Plan(
        sizes=args.sizes or ([1, 8] if args.quick else [1, 8, 32]),
        rounds=args.rounds or 2,
        writes=args.writes or (2 if args.quick else 4),
        pending=args.pending or (16 if args.quick else 160),
        hooks=args.hooks or (3 if args.quick else 9),
        sign=args.sign,
        one_log=args.one_log or args.trust_beside,
        trust=args.trust or args.trust_beside,
    )
    if args.inside_netem is not None:  # the parent's folder: the parent removes it
        link = f"{2 * DELAY_MS} ms round trip, by `tc netem` ({DELAY_MS} ms each way)"
        figures = run_phase(args.inside_netem.parent / "netem", link, 0, plan)
        args.inside_netem.write_text(json.dumps(asdict(figures)))
        return
    work = Path(tempfile.mkdtemp(prefix="bench-team-"))
    began = time.monotonic()
    try:
        phases = [run_phase(work / "direct", "no delay", 0, plan)]
        if not args.no_delay_phase:
            passed = [a for a in sys.argv[1:] if a != "--no-delay-phase"]
            phases.append(delayed_phase(work / "delayed", plan, passed))
        progress(f"measured in {(time.monotonic() - began) / 60:.1f} min")
        report(phases, plan)
    finally:
        remove(work)


def remove(work: Path) -> None:
    """Remove the run's folder: every machine's vault and git objects, a few thousand
    files each. Each unlink can wait on the disk (ext4 mounted with ``discard`` does),
    so the machines' folders go many at once: minutes become seconds."""
    print(f"removing {work}", file=sys.stderr, flush=True)
    machines: list[Path] = []
    for folder, dirs, _files in os.walk(work):
        mine = [d for d in dirs if d.startswith(("machine-", "sender", "vault-"))]
        machines.extend(Path(folder, d) for d in mine)
        dirs[:] = [d for d in dirs if d not in mine]
    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(lambda folder: shutil.rmtree(folder, ignore_errors=True), machines))
    shutil.rmtree(work, ignore_errors=True)


def report(phases: list[PhaseFigures], plan: Plan) -> None:
    git = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.split()[-1]
    signed = " · every machine signs its commits (ssh-ed25519)" if plan.sign else ""
    if plan.trust:
        signed = " · every machine signs and checks what arrives against the team's list"
    signed += f" · layout {os.environ.get('AGENT_MEM_VAULT_SYNC_LAYOUT') or '2'}"
    signed += f" · beside it, the same team, {plan.beside}" if plan.one_log else ""
    print(f"\nload average {load(3)} · git {git} · Python {sys.version.split()[0]}{signed}\n")
    for phase in phases:
        print("\n".join(team_table(phase, plan)) + "\n")
    print("\n".join(hooks_table(phases, plan.hooks)), flush=True)


if __name__ == "__main__":
    main()
