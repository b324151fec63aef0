"""Who writes what a remote receives: the person, as git resolves them for the route.

A team's remote gathers the entries of every machine that can push. The entry
says, by its author and committer, who sent it: the person's git identity as
git itself resolves it for that route (``user.name`` and ``user.email`` of the
clone for a project's route, with its ``includeIf`` sections, else the user's;
``author.*`` and ``committer.*``; ``GIT_AUTHOR_*`` and ``GIT_COMMITTER_*`` in
the environment, as CI sets them). Git is asked with ``user.useConfigOnly``,
so it never makes one up from the host name: with none set, entries stay
``agent-mem-vault <agent-mem-vault@localhost>`` and ``sync --status`` says how
to set one. The entry's message names the machine it was made on.

Asked once a minute per route and process (the syncer lives for hours, and a
person may set their name meanwhile): 2–3 ms a question.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Identity", "identity"]

ASK_EVERY = 60.0
"""Seconds an answer is kept before git is asked again."""
_IDENT = re.compile(r"^(?P<name>.*?) <(?P<email>[^<>]*)> \d+ [+-]\d{4}$")
_known: dict[str, tuple[float, Identity | None]] = {}


@dataclass(frozen=True, slots=True)
class Identity:
    """A person as git names them."""

    name: str
    email: str

    def __str__(self) -> str:
        return f"{self.name} <{self.email}>"

    def env(self) -> dict[str, str]:
        """The environment that makes a commit theirs."""
        return {
            "GIT_AUTHOR_NAME": self.name,
            "GIT_AUTHOR_EMAIL": self.email,
            "GIT_COMMITTER_NAME": self.name,
            "GIT_COMMITTER_EMAIL": self.email,
        }


def identity(git_dir: Path) -> Identity | None:
    """The person git names for commits in ``git_dir``, or None when none is set."""
    key = str(git_dir)
    now = time.monotonic()
    known = _known.get(key)
    if known is not None and now - known[0] < ASK_EVERY:
        return known[1]
    found = _ask(git_dir)
    _known[key] = (now, found)
    return found


def _ask(git_dir: Path) -> Identity | None:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR")
    }
    env.update(GIT_DIR=str(git_dir), GIT_TERMINAL_PROMPT="0", LC_ALL="C")
    try:
        done = subprocess.run(
            ["git", "-c", "user.useConfigOnly=true", "var", "GIT_AUTHOR_IDENT"],
            env=env,
            capture_output=True,
            text=True,
            timeout=10,
            cwd="/",
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    matched = _IDENT.match(done.stdout.strip()) if done.returncode == 0 else None
    if matched is None or not matched["email"]:
        return None
    return Identity(matched["name"], matched["email"])
