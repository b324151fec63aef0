"""The CLI (or any command) run as a process of its own, the way a person, a script or
a client starts it, with an environment the test chooses.

A test of what a user sees runs the real program rather than calling the code
behind it: the exit status, the bytes on stdout and stderr, and what the
process leaves on disk are what it checks. Every such run goes through
:func:`run_process`, so that each one captures text, has a time limit (a hung
process fails the test instead of the run) and leaves the exit status to the
test to judge; :func:`cli_env` is the environment it starts in.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["BIN", "CLI", "Proc", "cli_env", "home_env", "run_process", "succeeded"]

Proc = subprocess.CompletedProcess[str]

# The CLI as this interpreter runs it, and as the installed console script.
CLI = [sys.executable, "-m", "agent_mem_vault.cli.main"]
BIN = Path(sys.executable).parent / "agent-mem-vault"

# Set by tests/conftest.py for every process of the run: warm processes started by
# a test share one folder, which goes when the run ends.
RUNTIME_DIR = "AGENT_MEM_VAULT_RUNTIME_DIR"


def run_process(
    argv: Sequence[str | Path],
    *,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    input: str | None = None,
    timeout: float = 120,
) -> Proc:
    """``argv`` run to its end, its output captured as text; the exit status is not
    checked here, since a refusal is as often what a test is about as a success."""
    argv = [str(arg) for arg in argv]
    return subprocess.run(
        argv, env=env, cwd=cwd, input=input, capture_output=True, text=True, timeout=timeout
    )


def succeeded(proc: Proc) -> Proc:
    """``proc``, after checking it exited 0 (its status and output are the message)."""
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr)
    return proc


def cli_env(
    home: Path | None = None,
    vault: Path | str | None = None,
    *,
    keep_settings: bool = True,
    **settings: str,
) -> dict[str, str]:
    """This process's environment for a CLI process, with no vault of the tester's.

    ``AGENT_MEM_VAULT`` is always the test's to give (``vault``), never inherited.
    With ``keep_settings=False`` none of the other ``AGENT_MEM_VAULT_*`` settings
    is either, as for a user who set none, but for the run's warm-process folder.
    ``home`` becomes HOME; ``settings`` are set last.
    """
    env = {
        name: value
        for name, value in os.environ.items()
        if name != "AGENT_MEM_VAULT"
        and (keep_settings or not name.startswith("AGENT_MEM_VAULT") or name == RUNTIME_DIR)
    }
    if home is not None:
        env["HOME"] = str(home)
    if vault is not None:
        env["AGENT_MEM_VAULT"] = str(vault)
    env.update(settings)
    return env


def home_env(home: Path) -> dict[str, str]:
    """HOME at ``home`` and the XDG folders inside it: every configuration, cache and
    data file a program writes for its user lands there, none in the tester's."""
    return {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
    }


def in_terminal(argv: list[str | Path], env: dict[str, str], typed: str) -> tuple[int, str]:
    """``argv`` with a pseudo-terminal as stdin and stderr, as when a person runs it,
    ``typed`` typed at it: (exit status, what the terminal showed)."""
    import os
    import select

    main, child = os.openpty()
    proc = subprocess.Popen(
        [str(a) for a in argv], stdin=child, stdout=child, stderr=child, env=env, close_fds=True
    )
    os.close(child)
    os.write(main, typed.encode())
    shown = b""
    while True:
        ready, _, _ = select.select([main], [], [], 60)
        assert ready, f"the command showed nothing more for 60 s: {shown!r}"
        try:
            chunk = os.read(main, 4096)
        except OSError:  # the terminal closed: the command ended
            break
        if not chunk:
            break
        shown += chunk
    os.close(main)
    return proc.wait(timeout=60), shown.decode(errors="replace")
