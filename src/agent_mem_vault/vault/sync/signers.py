"""Which keys a route trusts: the team's allowed signers file, where the person keeps it.

The list must not live only on the vault's remote: whoever it guards against can
push there. So it is a file on this machine, named for the route (``agent-mem-vault
trust signers PATH``: a file in the project's checkout, kept where the team
reviews changes) or, failing that, the one the person's git already uses for its
own commits (``gpg.ssh.allowedSignersFile``), with the keys it revoked
(``gpg.ssh.revocationFile``). A route with neither checks nothing (``off``): its
views say "not checked". Once there is a list, each entry that arrives is checked
(``label``): every view says who wrote a note and whether a listed key signed it.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .routes import route_git_dir
from .signing import git_settings
from .verify import AllowedSigners

if TYPE_CHECKING:
    from .routes import Route

__all__ = ["POLICIES", "Trust", "trust_for"]

POLICIES = ("off", "label", "require")
"""``off``: nothing is checked. ``label``: every entry is checked as it arrives and each
view says whether a listed key signed the note's text. ``require``: as ``label``, and a
handoff whose text no listed key signed is quarantined: no agent takes it or sees it
listed, until a person releases it."""
_GIT = r"^gpg\.ssh\.(allowedsignersfile|revocationfile)$"
ASK_EVERY = 60.0
"""Seconds git's answer is kept per route and process: a claim pushes many times a minute,
and each push asks what the route checks."""
_known: dict[str, tuple[float, dict[str, str]]] = {}


@dataclass(frozen=True, slots=True)
class Trust:
    """A route's policy and the list it checks against."""

    policy: str
    signers: AllowedSigners | None
    source: str | None
    """The file, and whether the route names it or git does (for messages)."""
    problem: str | None = None
    """Why the list could not be read (then nothing is judged until it can)."""
    refused: str | None = None
    """A change to the list on the project's branch that was not taken, in words."""

    @property
    def checks(self) -> bool:
        return self.policy != "off" and self.signers is not None


def trust_for(root: Path, route: Route) -> Trust:
    """What ``route`` checks entries against, read now (a few ms: a file and one ``git
    config``, where the route names no file)."""
    settings = _git_says(route_git_dir(root, route))
    revocations = settings.get("gpg.ssh.revocationfile")
    if route.signers_branch is not None:
        return _on_branch(root, route, revocations)
    path = route.signers or settings.get("gpg.ssh.allowedsignersfile")
    where = "named for this route" if route.signers else "git's gpg.ssh.allowedSignersFile"
    if route.trust == "off":
        return Trust("off", None, path and f"{path} ({where})")
    policy = "require" if route.trust == "require" else "label"
    if not path:
        # ``require`` with no list: nothing can be verified, so every handoff waits
        return Trust(policy if policy == "require" else "off", None, None)
    source = f"{path} ({where})"
    file = Path(os.path.expanduser(path))
    try:
        text = file.read_text(encoding="utf-8")
        revoked = _revocations(revocations)
        beside = file.with_name(file.name + ".gpg")  # the OpenPGP keys, where a team has some
        openpgp = beside.read_bytes() if beside.is_file() else b""
        signers = AllowedSigners.parse(text, revoked, source=str(file), openpgp=openpgp)
    except (OSError, UnicodeDecodeError, ValueError) as error:
        problem = f"{type(error).__name__}: {error}" if isinstance(error, OSError) else str(error)
        return Trust(policy, None, source, problem)
    return Trust(policy, signers, source)


def _on_branch(root: Path, route: Route, revocations: str | None) -> Trust:
    from .signers_branch import SIGNERS_PATH, pinned

    policy = {"off": "off", "require": "require"}.get(route.trust or "", "label")
    pin = pinned(root, route)
    if pin is None:
        source = f"{route.signers_branch}:{SIGNERS_PATH}"
        problem = "not taken yet: agent-mem-vault trust signers --branch"
        return Trust(policy, None, source, problem)
    source = f"{route.signers_branch}:{SIGNERS_PATH} as of {pin.commit[:12]}"
    if policy == "off":
        return Trust("off", None, source)
    try:
        signers = pin.signers(_revocations(revocations), source=source)
    except (OSError, UnicodeDecodeError, ValueError) as error:
        return Trust(policy, None, source, str(error), pin.refused)
    return Trust(policy, signers, source, None, pin.refused)


def _git_says(git_dir: Path) -> dict[str, str]:
    now = time.monotonic()
    known = _known.get(str(git_dir))
    if known is not None and now - known[0] < ASK_EVERY:
        return known[1]
    found = git_settings(git_dir, _GIT)
    _known[str(git_dir)] = (now, found)
    return found


def _revocations(path: str | None) -> str:
    """The revoked keys, one a line. A binary KRL cannot be read here: it is refused by
    name rather than taken as revoking nothing."""
    if not path:
        return ""
    data = Path(os.path.expanduser(path)).read_bytes()
    if data.startswith(b"SSHKRL"):
        raise ValueError(f"{path}: a binary KRL; list the revoked public keys one a line instead")
    return data.decode("utf-8")
