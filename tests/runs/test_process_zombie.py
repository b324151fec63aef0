"""A run's process that has exited counts as dead even before its exit status is collected."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent_mem_vault.runs.process import is_known_dead, process_of

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/stat").exists(), reason="processes are identified through /proc"
)


def _state(pid: int) -> str:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2]


def test_a_killed_process_not_yet_reaped_is_known_dead() -> None:
    """A killed client whose parent has not collected it yet (a zombie) is not alive."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        process = process_of(child.pid)
        assert process is not None and not is_known_dead(process)
        child.send_signal(signal.SIGKILL)
        while _state(child.pid) != "Z":  # not waited for: it stays a zombie
            time.sleep(0.01)
        assert is_known_dead(process)
    finally:
        child.kill()
        child.wait()
