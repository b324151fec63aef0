"""The team's signers file on the project's branch, adopted change by change.

A team reviews changes to its code on one branch; its list of who may write
(``.agent-mem-vault/allowed_signers``, with its people's OpenPGP public keys beside it
in ``allowed_signers.gpg`` where some sign with gpg) lives there too, changed like
code. A
project route that names that branch (``agent-mem-vault trust signers --branch
main -n NS``) fetches it with every sync and takes a change to the file only
when a key the list it already holds names signed the commit that made it (a change
to either file, or to both): an
outsider who can push to the branch cannot add himself. The first list is the
branch's as it is when the route names it, taken on trust (printed, so a person
sees it). A change not taken is said once, in ``trust status`` and ``sync
--status``, and the list stays as it was. A branch rewritten past what was
taken changes nothing.

What was taken (the commit, the file's text, what was refused) is kept in the
route's verdict store (``verdicts.py``), never on the vault's remote.
"""

from __future__ import annotations

import base64
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ...core.errors import InvalidInputError, NotFoundError
from .judging import commit_author
from .verdicts import VerdictStore, store_path
from .verify import AllowedSigners, verify_commit

if TYPE_CHECKING:
    from .engine import RouteSync
    from .gitcmd import Git
    from .routes import Route, SyncConfig

__all__ = [
    "OPENPGP_PATH",
    "SIGNERS_PATH",
    "Pin",
    "adopt",
    "fetch_spec",
    "pin_first",
    "pinned",
    "signers_ref",
]

SIGNERS_PATH = ".agent-mem-vault/allowed_signers"
OPENPGP_PATH = SIGNERS_PATH + ".gpg"
_KEY = "signers_pin"


@dataclass(frozen=True, slots=True)
class Pin:
    """The list a route holds: from which commit of the branch, and what it says."""

    commit: str
    text: str
    at: float
    refused: str | None = None
    """A change to the file that was not taken, said in words."""
    openpgp: bytes | None = b""
    """The OpenPGP keys beside the list, as the branch had them (none: empty; None: a pin
    saved before keys were kept, read from its commit at the next sync)."""

    def to_json(self) -> str:
        keys = base64.b64encode(self.openpgp or b"").decode("ascii")
        return json.dumps(
            {
                "commit": self.commit,
                "text": self.text,
                "at": self.at,
                "refused": self.refused,
                "openpgp": keys,
            }
        )

    def signers(self, revoked: str = "", source: str = "") -> AllowedSigners:
        """The list as the route holds it (``ValueError`` where it does not parse)."""
        keys = self.openpgp or b""
        return AllowedSigners.parse(self.text, revoked, source=source, openpgp=keys)


def signers_ref(config: SyncConfig, route: Route) -> str:
    """Where this vault keeps its copy of the branch, in the project's git folder."""
    return f"refs/agent-mem-vault-local/{config.vault_id}/{route.namespace}/signers"


def fetch_spec(config: SyncConfig, route: Route) -> str:
    assert route.signers_branch is not None
    return f"+refs/heads/{route.signers_branch}:{signers_ref(config, route)}"


def pinned(root: Path, route: Route) -> Pin | None:
    """The list the route holds, or None: not taken yet."""
    where = store_path(root, route)
    if not where.exists():
        return None
    with VerdictStore(where, read_only=True) as store:
        raw = store.meta(_KEY)
    if raw is None:
        return None
    found = json.loads(raw)
    kept = found.get("openpgp")
    keys = None if kept is None else base64.b64decode(str(kept))
    return Pin(
        str(found["commit"]), str(found["text"]), float(found["at"]), found.get("refused"), keys
    )


def _save(root: Path, route: Route, pin: Pin) -> None:
    with VerdictStore(store_path(root, route)) as store:
        store.set_meta(_KEY, pin.to_json())


def pin_first(git: Git, root: Path, config: SyncConfig, route: Route, limit: float) -> Pin:
    """Fetch the branch and take its list as it is (on trust: the caller prints it)."""
    assert route.signers_branch is not None
    if route.repo is None:
        raise InvalidInputError(
            "a signers file on a branch is for a project route (-n NS): the vault's own remote "
            "is where the writers it guards against push",
            code="signers_branch_needs_a_project",
        )
    fetched = git.run("fetch", "--quiet", route.remote, fetch_spec(config, route), check=False)
    if fetched.status != 0:
        raise NotFoundError(
            f"the branch {route.signers_branch!r} could not be fetched from {route.remote}: "
            f"{fetched.err.strip()}",
            code="signers_branch_not_found",
        )
    tip = git.text("rev-parse", signers_ref(config, route))
    text = _file_at(git, tip)
    if text is None:
        raise NotFoundError(
            f"{route.signers_branch} has no {SIGNERS_PATH}; commit the team's list there "
            "(git's allowed signers format), signed, then name the branch again",
            code="signers_not_found",
        )
    pin = Pin(tip, text, time.time(), openpgp=_keys_at(git, tip))
    pin.signers(source=f"{route.signers_branch}:{SIGNERS_PATH}")  # it parses, keys and all
    _save(root, route, pin)
    return pin


def adopt(sync: RouteSync) -> None:
    """Take the changes to the list that the branch gained since the last, in order, each
    only if a key of the list as it stood signed it (the route's turn is held)."""
    route = sync.route
    pin = pinned(sync.root, route)
    found = sync.git.run(
        "rev-parse", "-q", "--verify", signers_ref(sync.config, route), check=False
    )
    tip = found.out.decode().strip()
    if pin is not None and pin.openpgp is None:  # saved before keys were kept: read them
        pin = Pin(pin.commit, pin.text, pin.at, pin.refused, _keys_at(sync.git, pin.commit))
        _save(sync.root, route, pin)
    if pin is None or not tip or tip == pin.commit:
        return
    branch = route.signers_branch
    if not sync.is_ancestor(pin.commit, tip):
        rewritten = (
            f"{branch} was rewritten and no longer holds {pin.commit[:12]}, where the list "
            "was taken; keeping that list"
        )
        if rewritten != pin.refused:
            _save(sync.root, route, Pin(pin.commit, pin.text, pin.at, rewritten, pin.openpgp))
        return
    listing = sync.git.run(
        "log",
        "--reverse",
        "--format=%H",
        f"{pin.commit}..{tip}",
        "--",
        SIGNERS_PATH,
        OPENPGP_PATH,
    ).out.decode()
    held = pin
    refused: str | None = None
    for commit in listing.split():
        current = held.commit
        raw = sync.objects([commit], "commit").get(commit, b"")
        listed = held.signers()
        verdict = verify_commit(raw, listed, time.time(), digits=len(commit))
        if not verdict.verified:
            author = commit_author(raw)
            refused = (
                f"the signers file changed on {branch} in {commit[:12]} ({author}), which no "
                f"listed key signed ({verdict.words}); keeping the version of {current[:12]}"
            )
            break
        text, keys = _file_at(sync.git, commit) or "", _keys_at(sync.git, commit)
        changed = Pin(commit, text, time.time(), openpgp=keys)
        try:
            changed.signers()
        except ValueError as error:
            refused = f"the signers file on {branch} in {commit[:12]} does not parse: {error}"
            break
        held = changed
    if refused is None:  # every change taken: the next walk starts at the tip
        held = Pin(tip, held.text, held.at, None, held.openpgp)
    _save(sync.root, route, Pin(held.commit, held.text, held.at, refused, held.openpgp))


def _file_at(git: Git, commit: str) -> str | None:
    found = git.run("cat-file", "blob", f"{commit}:{SIGNERS_PATH}", check=False)
    return found.out.decode("utf-8", "replace") if found.status == 0 else None


def _keys_at(git: Git, commit: str) -> bytes:
    """The OpenPGP keys beside the list at ``commit`` (none: empty)."""
    found = git.run("cat-file", "blob", f"{commit}:{OPENPGP_PATH}", check=False)
    return found.out if found.status == 0 else b""
