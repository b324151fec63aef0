"""What keeping notes private means for their remote (``privacy.py`` holds the setting).

A note made private after it travelled keeps, on the remote, the version sent
before: the person is told, and may have it taken off the remote's notes at the
next commit (``UNSEND``, which the gate reads). A pattern added names the
matching notes a remote already has; one removed names the notes it held to the
syncer, so they go out at once rather than with their next change.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from .journal import note_changes
from .local import LocalRoute, read_state, state_file
from .privacy import UNSEND, regex, remove_pattern
from .routes import load_config
from .syncer import ensure_syncer

if TYPE_CHECKING:
    from ..ops.base import VaultBase
    from ..ops.privacy import Marked

__all__ = ["kept_private", "release_pattern", "travelled_matching"]


def kept_private(vault: VaultBase, marked: Marked, remove: bool) -> Marked:
    """What a note just marked private (``marked``) means for its remote: whether the
    remote has a version of it (which stays there); with ``remove``, its next commit
    takes it off the remote's notes."""
    config = load_config(vault.path)
    route = None if config is None else config.route_of(marked.path)
    if config is None or route is None:
        return marked
    local = LocalRoute(vault, config, route)
    fetched = local.heads()[1]
    tree = None if fetched is None else local.fetched_tree(fetched)
    travelled = bool(local.entries(tree, [marked.path]))
    removing = remove and marked.private and travelled
    if removing:
        with vault._held(), vault._locked():
            state = local.state()
            asked = state.get(UNSEND)
            state[UNSEND] = sorted({*(asked if isinstance(asked, list) else ()), marked.path})
            local.save_state(state)
            note_changes(vault.path, [marked.path])
        ensure_syncer(vault.path)
    return replace(marked, remote=route.label, travelled=travelled, removing=removing)


def travelled_matching(vault: VaultBase, pattern: str) -> list[str]:
    """The notes ``pattern`` matches that a remote has a version of (as of the last
    fetch): those versions, and their history there, stay."""
    config = load_config(vault.path)
    if config is None:
        return []
    out: list[str] = []
    for route in config.routes:
        local = LocalRoute(vault, config, route)
        fetched = local.heads()[1]
        if fetched is None:
            continue
        listed = local.git.text("ls-tree", "-r", "-z", "--name-only", local.fetched_tree(fetched))
        out += [
            p
            for p in listed.split("\0")
            if p and regex(pattern).fullmatch(p) and config.covers(route, p)
        ]
    return sorted(out)


def release_pattern(vault: VaultBase, pattern: str) -> None:
    """Let the notes ``pattern`` kept here travel again: those it held back are named to
    the syncer, so the next sync sends them."""
    remove_pattern(vault.path, pattern)
    held = [p for p in _held_paths(vault) if regex(pattern).fullmatch(p)]
    if not held:
        return
    with vault._held(), vault._locked():
        told = note_changes(vault.path, held)
    if told:
        ensure_syncer(vault.path)


def _held_paths(vault: VaultBase) -> list[str]:
    """The notes the routes' last commits held back (their states' ``held``)."""
    config = load_config(vault.path)
    out: list[str] = []
    for route in () if config is None else config.routes:
        held = read_state(state_file(vault.path, route)).get("held")
        out += list(held) if isinstance(held, dict) else []
    return out
