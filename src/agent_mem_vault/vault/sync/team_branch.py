"""Layout 2 on one branch, for a host that takes pushes to branches only.

Some hosts refuse every ref outside ``refs/heads/``. A route made with
``sync init … --branch NAME`` keeps the very same entries (``entries.py``) of
every machine on one branch of that name instead of a log per machine: the
branch's first commit is the marker, and every later commit an entry, whose
parent is the branch's tip as its machine last fetched it. A push must
fast-forward the branch, so the branch itself is the compare-and-swap a read
needs, as one log is in layout 1: no claim refs, and the team writes one push at
a time. Readers fold the entries as for a log per machine. One branch holds the
whole namespace, so a host's CI runs once per push, not per handoff (and a rule
such as ``branches-ignore: ['agent-mem-vault/**']`` keeps it from running at
all).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from ...core.errors import InvalidInputError, RemoteError
from .layout import LAYOUT, check_marker, marker_message
from .trees import edited_tree, empty_tree_id

if TYPE_CHECKING:
    from .engine import RouteSync
    from .gitcmd import Git
    from .routes import Route

__all__ = ["BRANCH", "branch_ref", "check_root", "fetch_specs", "landed", "root"]

BRANCH = "_branch"
"""Where this machine keeps its copy of the branch, under the route's mirror; the key
the fold store keeps the branch's tip under."""


def branch_ref(git: Git, name: str) -> str:
    """``refs/heads/<name>`` for a branch name git accepts; ``invalid_branch`` else."""
    name = name.removeprefix("refs/heads/")
    checked = git.run("check-ref-format", "--branch", name, check=False)
    if checked.status != 0 or not name:
        raise InvalidInputError(
            f"{name!r} is no branch name git accepts; give one such as agent-mem-vault/notes",
            code="invalid_branch",
            field="branch",
        )
    return f"refs/heads/{name}"


def fetch_specs(route: Route, mirror: str) -> list[str]:
    assert route.branch is not None
    return [f"+{route.branch}:{mirror}/{BRANCH}"]


def landed(sync: RouteSync, mirror: str, entries: dict[str, str]) -> dict[str, str]:
    """Which of ``entries`` (handoff id → the entry of its read) the branch holds now."""
    assert sync.route.branch is not None
    scratch = f"{mirror}/_settle"  # not the copy the fold reads: that moves with a fold only
    result = sync.fetch_refs(30.0, [f"+{sync.route.branch}:{scratch}"])
    if result.status != 0:
        raise sync._failed(result)
    tip = sync.git.run("rev-parse", "-q", "--verify", scratch, check=False)
    head = tip.out.decode().strip()
    return {i: e for i, e in entries.items() if head and sync.is_ancestor(e, head)}


def root(sync: RouteSync, digits: int) -> str:
    """The marker a new branch starts from (its first commit)."""
    tree = edited_tree(sync.git, empty_tree_id(digits), {})
    return sync._sent(tree, [], _branch_marker(sync.route))


def check_root(sync: RouteSync, tip: str) -> str:
    """The branch's first commit, which must be a marker this release reads: a branch
    that holds other commits (a name already in use) is refused, never written."""
    found = sync.git.run("rev-list", "--max-parents=0", tip).out.decode().split()
    first = found[-1] if found else tip
    message = sync.git.run("cat-file", "commit", first).out.decode("utf-8", "replace")
    body = message.partition("\n\n")[2]
    if not body.startswith("agent-mem-vault layout"):
        assert sync.route.branch is not None
        name = sync.route.branch.removeprefix("refs/heads/")
        raise RemoteError(
            f"{sync.route.label}: the branch {name} holds commits of something else; name a "
            "branch of its own (sync init … --branch agent-mem-vault/notes)",
            code="branch_in_use",
        )
    check_marker(sync.route, body)
    return first


def _branch_marker(route: Route) -> str:
    base = marker_message(route, None)
    facts = base.partition("\n\n")[2]
    data = json.loads(facts)
    data["mode"] = "branch"
    data["branch"] = route.branch
    return f"agent-mem-vault layout {LAYOUT}\n\n{json.dumps(data, sort_keys=True)}\n"
