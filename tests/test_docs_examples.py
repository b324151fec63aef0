"""The manual's example scripts run as written against a started demo."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.cli_process import CLI, run_process, succeeded
from tests.server.support import OLGA, demo_process

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "docs" / "examples"

pytestmark = pytest.mark.slow


def test_operator_client_example_plays_customer_and_operator_against_the_demo(
    tmp_path: Path,
) -> None:
    with demo_process(tmp_path / "desk.db") as (url, _):
        proc = subprocess.run(
            [sys.executable, str(EXAMPLES / "operator_client.py"), url],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        found = re.search(r"^olga sees (case-[0-9a-f]+), waiting: ", proc.stdout, re.M)
        assert found is not None, proc.stdout
        # The thread is the operator's to see, holds her reply, and is billing's again.
        snap = httpx.get(f"{url}/api/desk/threads/{found[1]}", headers=OLGA).json()
    assert proc.stdout.startswith("ada <- billing:")
    assert proc.stdout.splitlines()[-1] == "answers next: billing; open waits: 0"
    assert snap["activeAgent"] == "billing"
    assert snap["pendingWaits"] == []
    texts = [p.get("text", "") for m in snap["messages"] for p in m["parts"]]
    assert "Hi, I am Olga. Your refund is on its way." in texts


def test_the_operator_example_and_the_demo_share_one_default_port() -> None:
    from agent_mem_vault.client import DEMO_URL

    shown = succeeded(run_process([*CLI, "demo", "support", "--help"])).stdout
    port = DEMO_URL.rsplit(":", 1)[1]
    assert f"[default: {port};" in " ".join(shown.split())
    assert "else DEMO_URL" in (EXAMPLES / "operator_client.py").read_text()


def _port_is_free(port: int) -> bool:
    import socket

    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def test_the_operator_example_with_no_arguments_reaches_the_demo_started_with_no_options(
    tmp_path: Path,
) -> None:
    import os
    import time

    from agent_mem_vault.client import DEMO_URL
    from agent_mem_vault.core.ports import DEMO_PORT

    if not _port_is_free(DEMO_PORT):
        pytest.skip(f"port {DEMO_PORT}, the demo's default, is in use on this machine")
    cli = Path(sys.executable).parent / "agent-mem-vault"
    env = {k: v for k, v in os.environ.items() if k not in ("AGENT_MEM_VAULT_MODEL",)}
    demo = subprocess.Popen(
        [str(cli), "demo", "support"],  # as the manual says: no options
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert demo.poll() is None, "the demo exited (its port taken meanwhile?)"
            try:
                if httpx.get(f"{DEMO_URL}/openapi.json", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the demo did not start within 60 s"
            time.sleep(0.1)
        proc = subprocess.run(
            [sys.executable, str(EXAMPLES / "operator_client.py")],  # no arguments
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
        )
    finally:
        demo.terminate()
        demo.wait(10)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("ada <- billing:")
