"""Running the ``git`` command for a route: the user's git, its credentials, our limits.

The ``git`` on ``PATH`` is run (never a library), so a user's ssh keys,
credential helpers and ``insteadOf`` rules work as for any ``git push``. What
could make it act on its own or wait for a person is turned off for our calls:
no terminal prompt (a hook must not hang on a password), no hooks of the
repository on push, no line-ending conversion, no file-system monitor; a commit
is signed only where the person's git signs theirs, and never waits for them
(``signing.py``). Every call has a time limit; past it the whole process group (git and
the ssh or https helper it started) is killed.

A failure reaching the remote becomes one error of the package's tree that
names the remote and says what to do (``remote_failure``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from ...core.errors import AccessDeniedError, AgentMemVaultError, RemoteError, UnavailableError

if TYPE_CHECKING:
    from .objects import Objects

__all__ = ["NET_TIMEOUT_ENV", "Git", "GitFailed", "GitResult", "net_timeout", "remote_failure"]

LOCAL_TIMEOUT = 60.0
"""Seconds a git command that does not touch the network may take (a commit of
100,000 notes is a few seconds)."""
_CONFIG = (
    "core.autocrlf=false",
    "core.eol=lf",
    "core.safecrlf=false",
    "core.fsmonitor=false",
    "core.untrackedCache=false",
    "core.quotePath=false",
    "credential.interactive=false",
    # A route's index holds every note of the route: version 4 stores each path as a
    # change of the one before, so 100,000 notes read and write in a third of the bytes.
    "index.version=4",
)
_IDENTITY = {
    "GIT_AUTHOR_NAME": "agent-mem-vault",
    "GIT_AUTHOR_EMAIL": "agent-mem-vault@localhost",
    "GIT_COMMITTER_NAME": "agent-mem-vault",
    "GIT_COMMITTER_EMAIL": "agent-mem-vault@localhost",
}

NET_TIMEOUT_ENV = "AGENT_MEM_VAULT_SYNC_TIMEOUT"
"""Seconds a fetch or a push may take before it is given up (default 20)."""


def net_timeout() -> float:
    raw = os.environ.get(NET_TIMEOUT_ENV, "").strip()
    try:
        value = float(raw) if raw else 20.0
    except ValueError:
        value = 20.0
    return value if value > 0 else 20.0


@dataclass(frozen=True, slots=True)
class GitResult:
    status: int
    out: bytes
    err: str


class GitFailed(Exception):
    """A local git command failed (not the remote): a bug or a damaged git folder."""

    def __init__(self, args: Sequence[str], result: GitResult) -> None:
        line = _last_line(result.err) or f"exit status {result.status}"
        super().__init__(f"git {' '.join(args[:2])} failed: {line}")
        self.result = result


class Git:
    """``git`` bound to one git folder, with the vault as its work tree and an index of
    the route's own (so a project's repository keeps its own index untouched)."""

    def __init__(
        self, git_dir: Path, work_tree: Path, index_file: Path, config: Sequence[str] = ()
    ) -> None:
        self.git_dir = git_dir
        self.config = (*_CONFIG, *config)
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("GIT_") or k in _KEPT_GIT_VARIABLES
        }
        env.update(_IDENTITY)
        env.update(
            GIT_DIR=str(git_dir),
            GIT_WORK_TREE=str(work_tree),
            GIT_INDEX_FILE=str(index_file),
            GIT_TERMINAL_PROMPT="0",
            GIT_LITERAL_PATHSPECS="1",
            GIT_OPTIONAL_LOCKS="0",
            LC_ALL="C",
        )
        self.env = env
        self._no_index = {**env, "GIT_INDEX_FILE": f"{index_file}.unread"}
        """For the commands that need no index: git reads a work tree's index at start-up
        all the same, one entry per note (11 ms at 100,000 notes), unless there is none."""

    def run(
        self,
        *args: str,
        input: bytes | None = None,
        timeout: float = LOCAL_TIMEOUT,
        check: bool = True,
        env: Mapping[str, str] | None = None,
    ) -> GitResult:
        """Run ``git ARGS``; ``GitFailed`` on a non-zero status when ``check``;
        ``TimeoutError`` past ``timeout`` seconds (the command is killed)."""
        argv = ["git"]
        for item in self.config:
            argv += ["-c", item]
        argv += list(args)
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env={**(self.env if args[0] in _INDEX_COMMANDS else self._no_index), **(env or {})},
                cwd="/",
                start_new_session=True,
            )
        except FileNotFoundError:
            raise UnavailableError(
                "the git command was not found on PATH; install git (2.29 or newer) to "
                "sync the vault",
                code="git_missing",
            ) from None
        try:
            out, err = proc.communicate(input, timeout=max(0.01, timeout))
        except subprocess.TimeoutExpired:
            _kill(proc)
            raise TimeoutError(f"git {args[0]} took more than {timeout:g} s") from None
        except BaseException:
            _kill(proc)
            raise
        result = GitResult(proc.returncode, out, err.decode("utf-8", "replace"))
        if check and result.status != 0:
            raise GitFailed(args, result)
        return result

    @cached_property
    def objects(self) -> Objects:
        """The git folder's objects, read and written in this process where it is plain."""
        from .objects import Objects

        return Objects(self)

    def commit_tree(
        self,
        tree: str,
        parents: Sequence[str],
        message: str,
        env: Mapping[str, str] | None = None,
    ) -> str:
        """The commit ``git commit-tree --no-gpg-sign`` would make of ``tree``, ``parents``
        (repeats dropped, as git drops them) and ``message``, authored as ``env`` says
        (else as every commit of ours is); made here where the repository is plain."""
        parents = list(dict.fromkeys(parents))
        who = {**self.env, **(env or {})}
        name, email = who["GIT_AUTHOR_NAME"], who["GIT_AUTHOR_EMAIL"]
        if (name, email) == (who["GIT_COMMITTER_NAME"], who["GIT_COMMITTER_EMAIL"]):
            made = self.objects.commit(tree, parents, message, name, email)
            if made is not None:
                return made
        links = [a for p in parents for a in ("-p", p)]
        return self.text("commit-tree", "--no-gpg-sign", tree, *links, "-m", message, env=env)

    def text(
        self, *args: str, timeout: float = LOCAL_TIMEOUT, env: Mapping[str, str] | None = None
    ) -> str:
        """``run`` and its output as text, stripped."""
        out = self.run(*args, timeout=timeout, env=env).out
        return out.decode("utf-8", "surrogateescape").strip()


_INDEX_COMMANDS = frozenset({"update-index", "write-tree", "ls-files", "read-tree", "diff-files"})
"""The git commands this package runs that read or write the route's index."""

_KEPT_GIT_VARIABLES = frozenset(
    {
        "GIT_SSH",
        "GIT_SSH_COMMAND",
        "GIT_SSH_VARIANT",
        "GIT_ASKPASS",
        "GIT_PROXY_COMMAND",
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_SYSTEM",
        "GIT_CONFIG_NOSYSTEM",
    }
)
"""The user's ``GIT_*`` settings that say how to reach a remote or where git's settings
are; every other one (``GIT_DIR`` of a hook that runs us, say) would point our calls
elsewhere."""


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """Kill git and what it started (ssh, a remote helper); its pipes are closed."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    # "fatal: Could not read from remote repository." follows the line with the reason.
    useful = [
        line
        for line in lines
        if not line.startswith("Please make sure you have the correct access rights")
        and "and the repository exists" not in line
        and line != "fatal: Could not read from remote repository."
    ]
    chosen = (useful or lines or [""])[-1]
    return chosen.removeprefix("fatal: ").removeprefix("error: ").rstrip(".")


_UNREACHABLE = (
    "could not resolve host",
    "connection refused",
    "connection timed out",
    "network is unreachable",
    "no route to host",
    "unable to connect",
    "could not connect",
    "connection reset",
    "the remote end hung up unexpectedly",
    "early eof",
    "operation timed out",
    "temporary failure in name resolution",
    "unable to look up",
    "failed to connect",
    "name or service not known",
)
_DENIED = (
    "authentication failed",
    "permission denied",
    "could not read username",
    "could not read password",
    "access denied",
    "403",
    "401",
    "invalid username or password",
    "terminal prompts disabled",
)
_NOT_FOUND = (
    "does not appear to be a git repository",
    "repository not found",
    "not found",
    "no such file or directory",
    "not a git repository",
    "no such remote",
)


def remote_failure(
    label: str, result: GitResult | None, *, timeout: float | None = None
) -> AgentMemVaultError:
    """The error for a fetch or push of the route ``label`` names that failed (or took
    longer than ``timeout`` seconds): what happened, in one line, and what to do."""
    if result is None:
        return UnavailableError(
            f"{label} did not answer within {timeout:.2g} s; check the network (the notes "
            "stay here and go out at the next sync: 'agent-mem-vault sync')",
            code="remote_unreachable",
        )
    line = _last_line(result.err) or f"git exit status {result.status}"
    low = result.err.lower()
    if any(word in low for word in _DENIED):
        return AccessDeniedError(
            f"{label} refused our credentials ({line}); set up git's access to it as for "
            "any push (an ssh key, or a credential helper: git config --global "
            "credential.helper store), then run 'agent-mem-vault sync'",
            code="remote_denied",
        )
    if any(word in low for word in _UNREACHABLE):
        return UnavailableError(
            f"{label} could not be reached ({line}); check the network (the notes stay "
            "here and go out at the next sync: 'agent-mem-vault sync')",
            code="remote_unreachable",
        )
    if any(word in low for word in _NOT_FOUND):
        return RemoteError(
            f"{label} has no repository there ({line}); check the URL, or make the "
            "repository (git init --bare) and run 'agent-mem-vault sync' again",
            code="remote_not_found",
        )
    return RemoteError(
        f"{label} failed ({line}); run 'agent-mem-vault sync' to try again, and "
        "'git ls-remote' on that remote to see what git says",
        code="remote_failed",
    )
