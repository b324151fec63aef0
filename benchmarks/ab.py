"""One benchmark, two revisions of the code, interleaved in one run: the ratio of each figure.

    .venv/bin/python benchmarks/ab.py --a main --b HEAD --rounds 3 bench_vault.py --quick
    .venv/bin/python benchmarks/ab.py --a v0.9 --b . bench_sync.py --quick --rounds 2

Each revision is checked out once into a folder of its own (``--work``, default
``.benchmarks/ab/``; ``.`` means the working tree as it is), and the benchmark
script named runs ``--rounds`` times for each, alternating A, B, A, B…, so a
machine that gets busier or quieter mid-run weighs on both alike. Each run is
the revision's own copy of the script on the revision's own ``src/``, ahead of
the installed package on ``PYTHONPATH`` (inherited by the CLI and the servers
the benchmarks start), with this environment's dependencies, and with a runtime
folder of its own (``XDG_RUNTIME_DIR``) for the helper processes it starts.
The vaults a benchmark caches beside its script are the revision's own too.

Every benchmark prints its figures as Markdown tables (``| what | 1k | 10k |``).
Each cell's first number is read; the figure kept for a cell is its median over
a revision's runs, and the ratio B ÷ A is printed beside both. A ratio above 1 is
B slower (or larger). Cells without a number (``–``) are left out.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")

Cell = tuple[str, str, str]  # (table header, row, column)


_TREES = ("src", "benchmarks", "tests")
"""What a revision's folder holds of it."""


def checkout(rev: str, work: Path) -> Path:
    """A folder holding ``rev``'s tree (the working tree itself for ``.``), its modules
    compiled to bytecode as an installed package's are: where Python may not write
    ``__pycache__`` (``PYTHONDONTWRITEBYTECODE``), a fresh process would otherwise
    compile every module it imports, each time, and the revision with more modules
    would look slower to start for that alone."""
    if rev == ".":
        folder = ROOT
    else:
        sha = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--verify", f"{rev}^{{commit}}"],
            capture_output=True,
            text=True,
        )
        if sha.returncode != 0:
            sys.exit(f"ab: {rev!r} is not a revision of this repository: {sha.stderr.strip()}")
        folder = work / sha.stdout.strip()[:12]
        if not (folder / "tests").is_dir():  # the team benchmark imports tests' git helpers
            folder.mkdir(parents=True, exist_ok=True)
            archive = subprocess.run(
                ["git", "-C", str(ROOT), "archive", sha.stdout.strip(), *_TREES],
                capture_output=True,
                check=True,
            )
            subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(folder / "src"), str(folder / "benchmarks")],
        check=True,
    )
    return folder


def revisions_parser(doc: str | None) -> argparse.ArgumentParser:
    """The options every A/B script takes: the two revisions, and where they go."""
    parser = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    parser.add_argument("--a", required=True, help="the revision measured against (e.g. main)")
    parser.add_argument("--b", default=".", help="the revision measured (default: the work tree)")
    parser.add_argument("--work", type=Path, default=ROOT / ".benchmarks" / "ab")
    return parser


def figures(output: str) -> dict[Cell, float]:
    """Every numeric cell of the Markdown tables in ``output``, keyed by where it stands."""
    found: dict[Cell, float] = {}
    header: list[str] = []
    for line in output.splitlines():
        line = line.strip()
        if not (line.startswith("|") and line.endswith("|")):
            header = []
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if not header:
            header = cells
            continue
        if all(set(c) <= set("-: ") for c in cells):
            continue
        for column, cell in zip(header[1:], cells[1:], strict=False):
            number = NUMBER.search(cell)
            if number:
                found[(header[0], cells[0], column)] = float(number.group().replace(",", ""))
    return found


def run(folder: Path, runtime: Path, script: str, args: list[str]) -> dict[Cell, float]:
    """One run of ``script`` on ``folder``'s code. Its helper processes (the warm
    process, the keepers) keep their sockets in ``runtime``, a folder of this
    revision's own: a warm process started by one revision never answers the other."""
    runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(folder / "benchmarks" / script), *args],
        env={**os.environ, "PYTHONPATH": str(folder / "src"), "XDG_RUNTIME_DIR": str(runtime)},
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        sys.exit(f"ab: {script} failed in {folder}:\n{done.stderr[-3000:]}")
    found = figures(done.stdout)
    print(
        f"ab: {folder.name}: {len(found)} figures in {time.monotonic() - started:.0f} s",
        file=sys.stderr,
    )
    return found


def main() -> None:
    parser = revisions_parser(__doc__)
    parser.add_argument("--rounds", type=int, default=3, help="runs of each revision")
    parser.add_argument("script", help="a script of benchmarks/, e.g. bench_vault.py")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the script's own arguments")
    opts = parser.parse_args()
    if opts.rounds < 1:
        parser.error("--rounds must be at least 1")
    a, b = checkout(opts.a, opts.work), checkout(opts.b, opts.work)
    samples: dict[str, dict[Cell, list[float]]] = {"a": {}, "b": {}}
    for i in range(opts.rounds):
        print(f"ab: round {i + 1} of {opts.rounds}", file=sys.stderr)
        for side, folder in (("a", a), ("b", b)):
            runtime = opts.work / f"run-{side}"
            for cell, value in run(folder, runtime, opts.script, opts.args).items():
                samples[side].setdefault(cell, []).append(value)
    print(
        f"\n{opts.script} {' '.join(opts.args)}: A = {opts.a}, B = {opts.b}, "
        f"median of {opts.rounds} interleaved runs each\n"
    )
    print("| table | what | column | A | B | B ÷ A |")
    print("|---|---|---|---:|---:|---:|")
    for cell, values in samples["a"].items():
        if cell not in samples["b"]:
            continue
        ma, mb = statistics.median(values), statistics.median(samples["b"][cell])
        ratio = f"{mb / ma:.2f}" if ma else "–"
        print(f"| {cell[0]} | {cell[1]} | {cell[2]} | {ma:g} | {mb:g} | {ratio} |")


if __name__ == "__main__":
    main()
