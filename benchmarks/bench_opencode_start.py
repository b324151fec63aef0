"""How long the real opencode takes to ask its model, with and without the vault's plugin.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_opencode_start.py            # 5 runs each
    PYTHONPATH=src .venv/bin/python benchmarks/bench_opencode_start.py --runs 9

The pinned opencode (``tests/coding_agents/node_modules/.bin/opencode``, which
``scripts/test-env.sh`` installs) runs ``opencode run "<request>"`` against the
scripted model of the real-agent tests, each run in a fresh throw-away HOME and
repository, with npm pointed at a local registry that answers every request
503 (a machine where no registry is reachable). Two setups, interleaved run by
run so a change in the machine's load falls on both:

* ``A opencode alone``: no plugin;
* ``B with the plugin``: after ``agent-mem-vault install opencode`` in the
  repository (the plugin and the ``.npmrc`` next to it). Whenever a plugin is
  present opencode installs its plugin SDK into each config folder with npm
  before the first request; the ``.npmrc`` makes that fail at once.

Times are from the spawn of ``opencode run`` to the first POST the scripted
model receives (``first request``, the session title or the session's turn,
whichever comes first), to the first request that offers tools (``session
turn``, the one the plugin's session-start hook adds the vault's text to), and
to the process's exit; in seconds. The model answers "ok", so each run ends by
itself; a run that outlives ``--timeout`` has its process group killed.
One untimed run of each setup comes first (``--warmup``), for the file cache.
The vault's helper processes (the warm process of ``cli/warm.py``) keep their
sockets in a folder of the benchmark's own, and whatever the runs started that
is still running at the end is stopped.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent)]

from tests.coding_agents.conftest import BIN, make_world  # noqa: E402
from tests.coding_agents.model_server import Reply, ScriptedModel, Seen  # noqa: E402
from tests.coding_agents.no_registry import NoRegistry  # noqa: E402
from tests.coding_agents.test_gemini_opencode import OPENCODE_QUIET  # noqa: E402
from tests.coding_agents.test_transcripts_gemini_opencode import _opencode_config  # noqa: E402

OPENCODE = BIN / "opencode"
REQUEST = "Continue the work."
MARK = "AMV_BENCH_OPENCODE_START"
"""Set in every command's environment, so whatever a run left behind can be found and stopped."""
SETUPS = {"A": "opencode alone", "B": "with the plugin"}


@dataclass(frozen=True)
class Run:
    first: float
    turn: float | None
    exit: float
    registry_requests: int
    killed: bool


def one_run(root: Path, setup: str, runtime: Path, timeout: float) -> Run:
    root.mkdir()
    world = make_world(root)
    world.env.update({MARK: str(runtime.parent), "AGENT_MEM_VAULT_RUNTIME_DIR": str(runtime)})
    if "PYTHONPATH" in os.environ:  # the hooks import the same package as this script
        world.env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    if setup == "B":
        world.amv("install", "opencode")
    with ScriptedModel("chat", _answer) as model, NoRegistry() as registry:
        _opencode_config(world, model)
        env = {**world.env, **OPENCODE_QUIET, "npm_config_registry": registry.url}
        log = (root / "opencode.log").open("w")
        start = time.monotonic()
        proc = subprocess.Popen(
            [str(OPENCODE), "run", REQUEST],
            cwd=world.repo,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        killed = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            killed = True
        finally:
            end = time.monotonic()
            _stop_group(proc)
            log.close()
        asked = model.model_requests()
        paths = list(registry.paths)
    if not asked:
        said = (root / "opencode.log").read_text()[-3000:]
        raise SystemExit(
            f"setup {setup}: opencode never asked the model (exit {proc.returncode})\n{said}"
        )
    turns = [s.at for s in asked if _offers_tools(s)]
    return Run(
        first=min(s.at for s in asked) - start,
        turn=min(turns) - start if turns else None,
        exit=end - start,
        registry_requests=len(paths),
        killed=killed,
    )


def _answer(seen: Seen) -> Reply:
    return Reply(text="ok")


def _offers_tools(seen: Seen) -> bool:
    return isinstance(seen.body, dict) and bool(seen.body.get("tools"))


def _stop_group(proc: subprocess.Popen[bytes]) -> None:
    """opencode's process group, whether it is still running or left children behind."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)
            if sig == signal.SIGTERM:
                time.sleep(0.2)  # children that outlive the leader get the SIGKILL


def _left_running(mark: str) -> list[int]:
    """Processes of this user whose environment carries this benchmark's mark."""
    needle = f"{MARK}={mark}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
    return found


def _stop_left(mark: str) -> int:
    pids = _left_running(mark)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and _left_running(mark):
            time.sleep(0.1)
        pids = _left_running(mark)
        if not pids:
            break
    return len(pids)


def _row(label: str, values: list[float]) -> str:
    if not values:
        return f"{label:<16}{'-':>8}"
    return f"{label:<16}{statistics.median(values):>8.2f}{min(values):>8.2f}{max(values):>8.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs of each setup")
    parser.add_argument("--warmup", type=int, default=1, help="untimed runs of each setup first")
    parser.add_argument("--timeout", type=float, default=120, help="seconds before a run is killed")
    args = parser.parse_args()
    if args.runs < 1 or args.warmup < 0:
        parser.error("--runs must be at least 1 and --warmup at least 0")
    if not OPENCODE.exists():
        raise SystemExit(f"{OPENCODE} is missing: scripts/test-env.sh installs the pinned clients")

    results: dict[str, list[Run]] = {"A": [], "B": []}
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="amv-bench-opencode-") as tmp:
        base = Path(tmp)
        runtime = base / "runtime"
        runtime.mkdir(mode=0o700)
        try:
            for i in range(args.warmup + args.runs):
                for setup in ("A", "B"):
                    run = one_run(base / f"{setup}{i}", setup, runtime, args.timeout)
                    timed = i >= args.warmup
                    if timed:
                        results[setup].append(run)
                    turn = f"{run.turn:.2f}" if run.turn is not None else "-"
                    print(
                        f"{'run' if timed else 'warm-up'} {i - args.warmup + 1 if timed else i + 1}"
                        f" {setup}: first request {run.first:.2f} s, session turn {turn} s,"
                        f" exit {run.exit:.2f} s, npm asked {run.registry_requests}x"
                        + (" (killed)" if run.killed else ""),
                        flush=True,
                    )
        finally:
            left = _stop_left(str(base))
    load_after = os.getloadavg()

    package = json.loads((BIN.parent / "opencode-ai" / "package.json").read_text())
    print(f"\nopencode {package['version']}, {args.runs} runs each, seconds")
    print(f"{'':<16}{'median':>8}{'min':>8}{'max':>8}")
    for setup, runs in results.items():
        print(f"{setup} {SETUPS[setup]}")
        print(_row("  first request", [r.first for r in runs]))
        print(_row("  session turn", [r.turn for r in runs if r.turn is not None]))
        print(_row("  exit", [r.exit for r in runs]))
    a, b = (statistics.median(r.first for r in results[k]) for k in ("A", "B"))
    print(f"B/A first request: {b / a:.2f} ({b - a:+.2f} s)")
    turns = [[r.turn for r in results[k] if r.turn is not None] for k in ("A", "B")]
    if all(turns):
        a, b = (statistics.median(t) for t in turns)
        print(f"B/A session turn:  {b / a:.2f} ({b - a:+.2f} s)")
    print("load average before: {:.2f} {:.2f} {:.2f}".format(*load_before))
    print("load average after:  {:.2f} {:.2f} {:.2f}".format(*load_after))
    if left:
        print(f"{left} processes this benchmark started would not stop", file=sys.stderr)
        raise SystemExit(1)


if __name__ == "__main__":
    main()
