"""Which ancestor of the hook is the session: real process chains, as the clients make them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PROBE = (
    "import sys; from agent_mem_vault.integrations.session_process import session_pid; "
    "print(session_pid(sys.argv[1]))"
)


def chain(tmp_path: Path, client_word: str, client: str, via_shell: str) -> tuple[int, int]:
    """A process named like the client, which runs ``sh -c '<probe> --client …'``.

    Returns (the client's pid, what the probe found). The shell's command line
    holds the client's name too, as a real hook command does.
    """
    fake = tmp_path / client_word
    fake.symlink_to(sys.executable)
    probe = f"{sys.executable} -c '{PROBE}' {client} # --client {client} {via_shell}"
    parent = (
        "import subprocess, sys, os; "
        f"out = subprocess.run(['sh', '-c', {probe!r}], capture_output=True, text=True).stdout; "
        "print(os.getpid(), out.strip())"
    )
    out = subprocess.run(
        [str(fake), "-c", parent],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ},
    ).stdout.split()
    return int(out[0]), int(out[1])


def test_the_session_is_the_client_not_the_shell_that_names_it(tmp_path: Path) -> None:
    client_pid, found = chain(tmp_path, "claude", "claude-code", "hook session-start")
    assert found == client_pid


def test_an_unknown_client_is_the_nearest_ancestor_that_is_no_shell(tmp_path: Path) -> None:
    client_pid, found = chain(tmp_path, "someeditor", "other", "")
    assert found == client_pid
