"""Running a command as another user, to meet the vault as someone who may not write it
or read one of its notes: ``nobody``, through ``setpriv``, from a test run as root.

Root may read and write everything, so these tests need it to step down; run as
anyone else they are skipped (that user meets no such refusal from root's files).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from tests.cli_process import Proc, cli_env, run_process

__all__ = ["AS_NOBODY", "can_step_down", "open_folder", "run_as_nobody"]

AS_NOBODY = ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups")


def can_step_down() -> bool:
    return os.geteuid() == 0 and shutil.which("setpriv") is not None


needs_root = pytest.mark.skipif(
    not can_step_down(), reason="steps down to another user (setpriv), which needs root"
)


@pytest.fixture
def open_folder() -> Iterator[Path]:
    """A folder every user may enter (pytest's own are root's alone), removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix="amv-shared-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def run_as_nobody(args: Sequence[str], *, home: Path, input: str | None = None) -> Proc:
    """``args`` run as nobody (``python -c ...`` when the first is ``-c``)."""
    argv = [sys.executable, *args] if args and args[0] == "-c" else list(args)
    return run_process([*AS_NOBODY, *argv], env=cli_env(home), input=input, cwd=home)
