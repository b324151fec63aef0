"""The harness benchmark script runs (no timings are asserted: figures go to docs/benchmarks.md)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_harness.py"


def bench(*args: str, timeout: float) -> str:
    """What the benchmark script prints when run with ``args`` (it must exit 0)."""
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=timeout,
    ).stdout


@pytest.mark.slow
def test_benchmark_runs_our_harness_in_quick_mode() -> None:
    out = bench("--quick", "--only", "ours", timeout=120)
    rows = [line.split() for line in out.splitlines() if "agent-mem-vault" in line]
    assert {(r[0], r[1]) for r in rows} == {
        ("memory", "plain"),
        ("memory", "chain10"),
        ("sqlite", "plain"),
        ("sqlite", "chain10"),
    }


@pytest.mark.slow
def test_benchmark_measures_tracing_off_and_on_in_quick_mode() -> None:
    pytest.importorskip("opentelemetry.sdk", reason="the dev extra installs the SDK")
    out = bench("--quick", "--only", "tracing", timeout=120)
    rows = {line[:19] + "|" + line[19:38].strip() for line in out.splitlines() if "tracing" in line}
    for backend in ("memory", "sqlite"):
        for scenario in ("chain10", "desk", "plain"):
            for label in ("off", "API only", "no-op exp.", "in-memory"):
                row = f"{backend:<8} {scenario:<10}|tracing {label}"
                assert row in rows, (backend, scenario, label, out)


@pytest.mark.slow
def test_benchmark_counts_instructions_per_turn_under_callgrind() -> None:
    pytest.importorskip("opentelemetry.sdk", reason="the dev extra installs the SDK")
    if shutil.which("valgrind") is None:
        pytest.skip("valgrind is not installed")
    out = bench("--quick", "--instructions", timeout=900)
    counts = {}
    for line in out.splitlines():
        parts = line.rsplit(None, 2)
        if line.startswith(("memory ", "sqlite ")) and parts[-1].endswith("x"):
            backend, scenario, label = parts[0].split(None, 2)
            counts[(backend, scenario, label)] = int(parts[1].replace(",", ""))
    assert len(counts) == 24, out
    for (backend, scenario, label), n in counts.items():
        off = counts[(backend, scenario, "tracing off")]
        # Recording spans costs instructions; the API alone without a provider almost none.
        if "exp." in label or "in-memory" in label:
            assert n > off, (backend, scenario, label, out)
    assert "SDK alone" in out


@pytest.mark.slow
def test_benchmark_shows_the_turn_cost_as_one_host_touches_more_threads_in_quick_mode() -> None:
    out = bench("--scale", "--quick", timeout=600)
    rows = [line.split() for line in out.splitlines() if line.startswith(("memory ", "sqlite "))]
    assert [(r[0], r[1]) for r in rows] == [
        ("memory", "100"),
        ("memory", "1,000"),
        ("sqlite", "100"),
        ("sqlite", "1,000"),
    ], out
    for row in rows:
        cached = int(row[6].replace(",", ""))
        assert cached <= 1000, out  # the default cache bound holds however many were touched


def test_benchmark_skips_a_competitor_that_is_not_installed_with_a_clear_message() -> None:
    # A None entry in sys.modules makes the import fail as if the package were absent.
    code = (
        "import asyncio, runpy, sys\n"
        "sys.modules['langchain'] = None\n"
        f"ns = runpy.run_path({str(SCRIPT)!r})\n"
        "asyncio.run(ns['main'](['--quick', '--only', 'langgraph']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert "skipping LangGraph" in done.stderr
    assert "pip install -e '.[bench]'" in done.stderr
    assert "skipped" in done.stdout
