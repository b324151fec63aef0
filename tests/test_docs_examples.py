"""The manual's example scripts run as written against a started demo."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

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
