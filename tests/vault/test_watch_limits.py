"""inotify's per-user limits met for real: ``serve`` says on stderr (its client's log)
and ``doctor`` says which setting to raise, and the server keeps answering, checking
notes by stat.

The limits are lowered in a user namespace of the test's own (``unshare -Ur``), where
``/proc/sys/user/max_inotify_watches`` and ``max_inotify_instances`` are the
namespace's own limits and need no root: the kernel refuses with the very errors
(``ENOSPC``, ``EMFILE``) a full machine gives, through the code that handles them.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent_mem_vault.vault import Vault
from agent_mem_vault.vault.index import inotify
from tests.by_hand import write_handoff
from tests.mcp_wire import INIT, NO_ANSWER_AFTER, RawServer, message

from .conftest import NS

BIN = Path(sys.executable).parent / "agent-mem-vault"

LIMITS = {
    # the namespace's setting, its value, the sysctl the message must name
    "watches": ("max_inotify_watches", 2, "fs.inotify.max_user_watches"),
    "instances": ("max_inotify_instances", 0, "fs.inotify.max_user_instances"),
}


def _namespaces() -> bool:
    """Whether this machine lets a user make a user namespace and set its inotify limits."""
    if not inotify.available() or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "-Ur", "sh", "-c", "cat /proc/sys/user/max_inotify_watches > /dev/null"],
        capture_output=True,
        check=False,
    )
    return probe.returncode == 0


pytestmark = pytest.mark.skipif(
    not _namespaces(), reason="needs inotify and unprivileged user namespaces (unshare -Ur)"
)


def _limited(setting: str, value: int) -> list[str]:
    """A command prefix: run in a user namespace whose inotify ``setting`` is ``value``."""
    script = f'echo {value} > /proc/sys/user/{setting} && exec "$@"'
    return ["unshare", "-Ur", "sh", "-c", script, "sh"]


@pytest.fixture
def folders(vault: Vault) -> Vault:
    """The vault with a namespace made, so that it has more folders than two watches."""
    write_handoff(vault.path / NS / "handoffs", "3zzzzzzzzzzz2", "first", namespace=NS)
    return vault


def _says_the_fix(text: str, sysctl: str) -> None:
    assert f"'sudo sysctl {sysctl}=" in text, text
    assert "The server keeps working" in text and "by stat" in text, text


@pytest.mark.parametrize("limit", LIMITS)
def test_doctor_names_the_setting_to_raise_when_inotify_refuses(folders: Vault, limit: str) -> None:
    setting, value, sysctl = LIMITS[limit]
    args = [str(BIN), "doctor", "--json", "--vault", str(folders.path)]
    fine = json.loads(subprocess.run(args, capture_output=True, text=True, check=False).stdout)
    assert fine["watch"] == {"ok": True, "problem": None}
    proc = subprocess.run(
        [*_limited(setting, value), *args], capture_output=True, text=True, check=False
    )
    report = json.loads(proc.stdout)
    assert report["watch"]["ok"] is False
    _says_the_fix(report["watch"]["problem"], sysctl)
    assert report["ok"] is True  # a watch is a speed-up: the vault itself is fine
    assert proc.returncode == 0, proc.stderr


def _stderr_until(server: RawServer, wanted: str) -> str:
    """What the server wrote to stderr, read until ``wanted`` is in it."""
    assert server.proc.stderr is not None
    fd = server.proc.stderr.fileno()
    seen = b""
    deadline = time.monotonic() + NO_ANSWER_AFTER
    while wanted.encode() not in seen:
        ready, _, _ = select.select([fd], [], [], max(deadline - time.monotonic(), 0))
        chunk = os.read(fd, 1 << 16) if ready else b""
        if not chunk:
            pytest.fail(f"stderr ended or stalled without {wanted!r}: {seen.decode()!r}")
        seen += chunk
    return seen.decode()


@pytest.mark.parametrize("limit", LIMITS)
def test_serve_logs_the_setting_to_raise_and_keeps_answering_by_stat(
    folders: Vault, limit: str, tmp_path: Path
) -> None:
    setting, value, sysctl = LIMITS[limit]
    server = RawServer(
        folders.path,
        "--namespace",
        NS,
        # Its own process (a warm one would run outside the namespace).
        env={"AGENT_MEM_VAULT_WARM": "0", "AGENT_MEM_VAULT_RUNTIME_DIR": str(tmp_path / "rt")},
        wrapper=_limited(setting, value),
    )
    logged = _stderr_until(server, "The server keeps working")
    assert "result" in server.request(1, "initialize", INIT)
    server.write(message(None, "notifications/initialized"))
    first = server.call(2, "peek_handoff", {"namespace": NS})
    assert "first" in first["content"][0]["text"]
    # A note written by hand, which only a watch or a check by stat finds.
    write_handoff(folders.path / NS / "handoffs", "3zzzzzzzzzzz3", "by hand", namespace=NS)
    second = server.call(3, "peek_handoff", {"namespace": NS})
    assert "by hand" in second["content"][0]["text"]
    status, _, rest = server.finish()
    assert status == 0
    logged += rest.decode()
    _says_the_fix(logged, sysctl)
    assert logged.count("the vault is not watched") == 1, logged  # told once, not per retry
    assert "Traceback" not in logged


def test_a_process_out_of_open_files_is_told_to_raise_its_own_limit() -> None:
    """``EMFILE`` from ``inotify_init1`` may be this process's open-file limit rather
    than inotify's: then the message names ``ulimit -n``, not the sysctl."""
    script = (
        "import os, resource\n"
        "from agent_mem_vault.vault.index import inotify\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit("
        "resource.RLIMIT_NOFILE)[1]))\n"
        "held = []\n"
        "try:\n"
        "    while True:\n"
        "        held.append(os.open('/dev/null', os.O_RDONLY))\n"
        "except OSError:\n"
        "    pass\n"
        "try:\n"
        "    inotify.Inotify([])\n"
        "except inotify.LimitReached as exc:\n"
        "    print(exc)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert "'ulimit -n'" in proc.stdout and "sysctl" not in proc.stdout, proc.stdout
