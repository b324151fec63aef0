"""Real git remotes for the sync tests: bare repositories on disk, and ``git daemon``
on loopback that a test starts, stops and starts again (a remote that goes away)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType

import pytest

__all__ = ["GitDaemon", "bare_repo", "git", "git_env", "own_git_home", "remote_tree"]


def git_env(home: Path) -> dict[str, str]:
    """An environment for ``git`` with its own HOME: no setting of the person running
    the tests (a global hooks path, signing) reaches the repositories made here."""
    keep = ("PATH", "LANG", "LC_ALL", "TMPDIR")
    env = {k: v for k, v in os.environ.items() if k in keep}
    home.mkdir(parents=True, exist_ok=True)
    env.update(
        HOME=str(home),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@t",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@t",
    )
    return env


def own_git_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Give the git the vault runs in this process a HOME of its own (not the tester's
    settings); the HOME."""
    home = tmp_path / "git-home"
    home.mkdir(exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    return home


def git(*args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(
        ["git", *map(str, args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert proc.returncode == 0, f"git {args}: {proc.stderr}"
    return proc.stdout


def bare_repo(path: Path) -> Path:
    """A new bare repository at ``path``, that takes pushes."""
    git("init", "--quiet", "--bare", "--initial-branch=main", path)
    return path


def remote_tree(repo: Path, ref: str = "refs/heads/main") -> dict[str, str]:
    """Every file on ``ref`` of the bare repository: path → text ({} if no ref yet)."""
    found = subprocess.run(
        ["git", "rev-parse", "--verify", "-q", ref], cwd=repo, capture_output=True, check=False
    )
    if found.returncode != 0:
        return {}
    names = git("ls-tree", "-r", "-z", "--name-only", ref, cwd=repo).split("\0")
    return {n: git("show", f"{ref}:{n}", cwd=repo) for n in names if n}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class GitDaemon:
    """``git daemon`` serving the bare repositories under ``base`` (pushes allowed) on a
    loopback port; ``url(name)`` is what a clone or a vault is given."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.port = _free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def url(self, name: str) -> str:
        return f"git://127.0.0.1:{self.port}/{name}"

    def start(self) -> GitDaemon:
        assert shutil.which("git") is not None
        self.proc = subprocess.Popen(
            [
                "git",
                "daemon",
                "--reuseaddr",
                "--export-all",
                "--enable=receive-pack",
                "--listen=127.0.0.1",
                f"--port={self.port}",
                f"--base-path={self.base}",
                str(self.base),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", self.port)) == 0:
                    return self
            assert self.proc.poll() is None, "git daemon did not start"
            time.sleep(0.05)
        raise AssertionError("git daemon did not listen within 30 s")

    def stop(self) -> None:
        """The remote goes away: the daemon and every connection it serves."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, 9)
            self.proc.wait()
        self.proc = None

    def __enter__(self) -> GitDaemon:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
