"""Real git remotes for the sync tests: bare repositories on disk, and ``git daemon``
on loopback that a test starts, stops and starts again (a remote that goes away)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.cli_process import run_process
from tests.loopback import free_port

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
    proc = run_process(["git", *args], cwd=cwd, env=env, timeout=60)
    assert proc.returncode == 0, f"git {args}: {proc.stderr}"
    return proc.stdout


def bare_repo(path: Path) -> Path:
    """A new bare repository at ``path``, that takes pushes."""
    git("init", "--quiet", "--bare", "--initial-branch=main", path)
    return path


def remote_tree(repo: Path, ref: str = "refs/heads/main") -> dict[str, str]:
    """The notes a route keeps in the bare repository: path → text ({} if none yet).

    Read the way docs/sync.md describes the layout, with plain git: the route's
    checkpoint (``ref``), then each entry of its log after the point the
    checkpoint names, oldest first: the files of the entry's tree set, the paths
    its message lists as ``removed`` taken away, and an entry naming a checkpoint
    starting again from that one."""
    route = "_vault" if ref == "refs/heads/main" else ref.removeprefix("refs/agent-mem-vault/")
    if _exists(repo, f"refs/agent-mem-vault-sync/{route}/_layout"):
        return team_tree(repo, route)  # a log per machine (layout 2)
    log = "refs/agent-mem-vault-log/" + ("vault" if route == "_vault" else route)
    notes: dict[str, str] = {}
    point = None
    if _exists(repo, ref):
        notes = _files(repo, ref)
        point = _facts(git("log", "-1", "--format=%B", ref, cwd=repo)).get("log")
    if not _exists(repo, log):
        return notes
    entries = git("rev-list", "--reverse", log, cwd=repo).split()
    if point in entries:
        entries = entries[entries.index(point) + 1 :]
    for entry in entries:
        facts = _facts(git("log", "-1", "--format=%B", entry, cwd=repo))
        if "checkpoint" in facts:
            notes = _files(repo, facts["checkpoint"])
        for path in facts.get("removed", []):
            notes.pop(path, None)
        notes.update(_files(repo, entry))
    return notes


def team_tree(repo: Path, route: str = "_vault") -> dict[str, str]:
    """The notes a layout-2 route keeps in the bare repository: path → text.

    Read the way docs/sync.md describes it, with plain git: from ``_checkpoint`` (every
    note at a frontier of the logs), every later entry of every ``_log/<machine>``,
    each path's changes in (lamport, machine, seq) order; a change made on the note
    as it stands is taken, a removal against a later change leaves the change, and
    two changes made apart are merged by fields (``merge_notes``, whose own tests say
    what it does) with the writer's version as the common one."""
    from agent_mem_vault.vault.format.merge import merge_notes
    from agent_mem_vault.vault.sync.arrivals import _generated

    prefix = f"refs/agent-mem-vault-sync/{route}/_log/"
    checkpoint = f"refs/agent-mem-vault-sync/{route}/_checkpoint"
    logs = git("for-each-ref", "--format=%(refname)", prefix, cwd=repo).split()
    frontier: dict[str, Any] = {}
    if _exists(repo, checkpoint):  # what the checkpoint holds of each machine's log
        frontier = _facts(git("log", "-1", "--format=%B", checkpoint, cwd=repo))["frontier"]
    changes: list[tuple[tuple[int, str, int], str, str | None, str | None]] = []
    for log in logs:
        for commit in git("rev-list", log, cwd=repo).split():
            facts = _facts(git("log", "-1", "--format=%B", commit, cwd=repo))
            if "seq" not in facts:
                continue  # a branch's first commit: the marker
            key = (int(facts["lamport"]), str(facts["machine"]), int(facts["seq"]))
            if key[2] <= frontier.get(key[1], {}).get("seq", 0):
                continue  # in the checkpoint already
            base = facts.get("base", {})
            listing = git("ls-tree", "-r", "-z", commit, cwd=repo).split("\0")
            for item in filter(None, listing):
                meta, _, path = item.partition("\t")
                changes.append((key, path, base.get(path), meta.split(" ")[2]))
            for path in facts.get("removed", []):
                changes.append((key, path, base.get(path), None))

    def text(blob: str) -> str:
        return blob[5:] if blob.startswith("text:") else git("cat-file", "blob", blob, cwd=repo)

    blobs: dict[str, str | None] = {}
    if _exists(repo, checkpoint):  # an upgraded route: every fold starts there
        for item in filter(None, git("ls-tree", "-r", "-z", checkpoint, cwd=repo).split("\0")):
            meta, _, path = item.partition("\t")
            blobs[path] = meta.split(" ")[2]
    for _key, path, old, new in sorted(changes, key=lambda c: (c[0], c[1])):
        now = blobs.get(path)
        if new == now or (new is None and old != now):
            continue
        if old == now or now is None:
            blobs[path] = new
            continue
        assert new is not None
        base = text(old) if old else _generated(path)
        blobs[path] = "text:" + merge_notes(base, text(now), text(new)).text
    return {p: text(b) for p, b in blobs.items() if b is not None}


def _exists(repo: Path, ref: str) -> bool:
    found = subprocess.run(
        ["git", "rev-parse", "--verify", "-q", ref], cwd=repo, capture_output=True, check=False
    )
    return found.returncode == 0


def _files(repo: Path, commit: str) -> dict[str, str]:
    names = git("ls-tree", "-r", "-z", "--name-only", commit, cwd=repo).split("\0")
    return {n: git("show", f"{commit}:{n}", cwd=repo) for n in names if n}


def _facts(message: str) -> dict[str, Any]:
    """The JSON line a log entry's or a checkpoint's message ends with ({} if none)."""
    lines = [line for line in message.strip().splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else {}


class GitDaemon:
    """``git daemon`` serving the bare repositories under ``base`` (pushes allowed) on a
    loopback port; ``url(name)`` is what a clone or a vault is given. ``options`` go to
    ``git daemon`` as well (``--max-connections=0`` for more than its 32 clients at once)."""

    def __init__(self, base: Path, options: tuple[str, ...] = ()) -> None:
        self.base = base
        self.options = options
        self.port = free_port()
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
                *self.options,
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

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
