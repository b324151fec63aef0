"""Which ancestor of the hook is the session: real process chains, as the clients make them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from agent_mem_vault.integrations.session_process import session_pid

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


def test_proc_stat_is_read_by_one_parser_that_survives_a_name_with_parentheses(
    tmp_path: Path,
) -> None:
    """The session walk and the runs' liveness read the same fields of the same parse."""
    from agent_mem_vault.runs.process import is_known_dead, parent_pid, process_of, read_stat

    odd = tmp_path / "a) b (c"  # spaces and parentheses in the name the kernel keeps
    odd.symlink_to(sys.executable)
    proc = subprocess.Popen([str(odd), "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        stat = read_stat(proc.pid)
        assert stat is not None
        assert (stat.comm, stat.ppid) == ("a) b (c", os.getpid())
        assert parent_pid(proc.pid) == os.getpid()
        me = process_of(proc.pid)
        assert me is not None and me.start == stat.start and not is_known_dead(me)
        assert session_pid("other", proc.pid) == proc.pid
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait()
    assert read_stat(proc.pid) is None and is_known_dead(me)
