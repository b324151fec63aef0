"""The official MCP conformance suite against ``agent-mem-vault serve --http``.

The suite (``@modelcontextprotocol/conformance``, pinned in tests/mcp/clients/,
run with the Node 22 installed beside it) plays a client through its active
server scenarios. What the server does not pass is listed, each with its
reason and the failure it shows, in tests/mcp/clients/conformance-baseline.yml;
see that file for the rules this test holds it to.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from agent_mem_vault.vault import Vault
from tests.cli_process import run_process

from .conftest import CLIENTS, NODE, needs_clients, serve_http

SUITE = CLIENTS / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
BASELINE = CLIENTS / "conformance-baseline.yml"

pytestmark = needs_clients(SUITE, "the MCP conformance suite")


def baseline() -> dict[str, dict[str, str]]:
    entries: dict[str, dict[str, str]] = yaml.safe_load(BASELINE.read_text())["server"]
    for name, entry in entries.items():
        assert entry.get("reason") and entry.get("fails with"), f"{name}: give both"
    return entries


def failures(results: Path) -> dict[str, list[str]]:
    """Each scenario's failed checks, by the messages they give."""
    found: dict[str, list[str]] = {}
    for checks in results.glob("server-*/checks.json"):
        scenario = checks.parent.name.removeprefix("server-").rsplit("-", 6)[0]
        bad: list[dict[str, Any]] = [
            c for c in json.loads(checks.read_text()) if c["status"] in ("FAILURE", "ERROR")
        ]
        found[scenario] = [str(c.get("errorMessage") or c.get("description")) for c in bad]
    return found


def test_the_official_conformance_suite_passes_but_for_its_baseline(
    vault: Vault, tmp_path: Path
) -> None:
    entries = baseline()
    expected = tmp_path / "expected-failures.yml"
    expected.write_text(yaml.safe_dump({"server": sorted(entries)}))
    results = tmp_path / "results"
    # The suite speaks to the server as an unauthenticated client on loopback.
    with serve_http(vault.path, token=None) as served:
        run = run_process(
            [NODE, SUITE, "server", "--url", served.url,
             "--expected-failures", expected, "--output-dir", results],
            timeout=600,
        )  # fmt: skip
    summary = run.stdout[run.stdout.find("=== SUMMARY") :]
    # Exit 0: every failure is in the baseline and every baseline entry still fails.
    assert run.returncode == 0, f"{summary}\n{run.stderr[-3000:]}"
    assert "Traceback" not in served.stderr, served.stderr
    failed = failures(results)
    assert failed, "the suite wrote no results"
    for name, entry in entries.items():
        messages = failed.get(name, [])
        assert any(entry["fails with"] in m for m in messages), (
            f"{name} fails for another reason than its baseline entry gives "
            f"({entry['fails with']!r}): {messages}"
        )
    passed = [name for name, messages in failed.items() if not messages]
    assert "server-initialize" in passed and "tools-list" in passed, summary
