"""Sync's side of the operations' port (``ops/port.py``): git behind the vault's questions.

``GitSync`` is what the composition point (``vault/plug.py``) hands a vault
that has a route: a read in a namespace that travels is a claim the remote must
take (``claim.py``); every change the operations tell it goes into the journal
(``journal.py``) and wakes the background syncer (``syncer.py``), which commits
and pushes it in its own time; how old this machine's view of a remote is comes
from the route's state (``view.py``); a note that gained a secret here is named
to its writer (``gate.py``, which also holds it back at every commit). Who wrote
a note's text is what its note says (``origin``), stamped with the person git
names for the route and this machine (``writer``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..ops.port import Origin
from .identity import identity
from .journal import note_changes
from .privacy import covers_namespace, patterns
from .routes import SYNC_DIR, Route, load_config, route_git_dir
from .signing import HELD_MARK, held_line
from .syncer import ensure_syncer

if TYPE_CHECKING:
    from ..format.models import Handoff
    from ..ops.base import VaultBase
    from ..ops.handoffs import HandoffOps
    from ..ops.privacy import Marked

__all__ = ["GitSync"]

HEAD = 4096
"""Bytes of a note read to find who wrote it: its properties fit, as a rule."""
SEEN_MAX = 20_000
_seen: dict[tuple[str, str], tuple[tuple[int, ...], Origin]] = {}
"""(vault, path) → what was found of the note, and the file and verdicts it was found
with: a long-lived process (the MCP server, the syncer) asks again for free, so a route
that quarantines costs a listing of many pending handoffs a ``stat`` each."""


class GitSync:
    """The port of a vault whose notes travel with git (``ops.port.SyncPort``)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def travels(self, namespace: str) -> bool:
        config = load_config(self.root)
        if config is None or config.route_for(namespace) is None:
            return False
        # A namespace a private pattern covers whole stays here: its reads too.
        return not covers_namespace(patterns(self.root), namespace)

    def claim(self, vault: HandoffOps, *, agent: str, namespace: str) -> Handoff | None:
        from .claim import claim  # the network half: loaded by the first read that travels

        config = load_config(self.root)
        route = None if config is None else config.route_for(namespace)
        if route is None:  # the route went meanwhile: an ordinary read
            return vault._read_here(agent, namespace)
        return claim(vault, route, agent=agent, namespace=namespace)

    def hold_back(self, vault: VaultBase, path: str, text: str) -> str | None:
        from .gate import suspect  # the shapes compile on first use, not at a hook's start

        unsigned = os.path.exists(self.root / SYNC_DIR / HELD_MARK)
        suspected = suspect(text)
        if not suspected and not unsigned:
            return None  # nearly every note: no git asked
        config = load_config(self.root)
        route = None if config is None else config.route_of(path)
        if config is None or route is None:
            return None
        from .gate import held_text
        from .local import LocalRoute  # the route's git: only for a note that may be held

        local = LocalRoute(vault, config, route)
        line = held_text(local, path, text) if suspected else None
        signing = local.state().get("signing") if unsigned and line is None else None
        return held_line(signing) if isinstance(signing, dict) else line

    def kept_private(self, vault: VaultBase, marked: Marked, remove: bool) -> Marked:
        from .private_notes import kept_private

        return kept_private(vault, marked, remove)

    def changed(self, paths: Iterable[str]) -> None:
        if note_changes(self.root, paths):
            ensure_syncer(self.root)

    def origin(self, path: str) -> Origin | None:
        return self.origins([path]).get(path)

    def origins(self, paths: Sequence[str]) -> dict[str, Origin]:
        from ..format.writer import origin_in_head

        config = load_config(self.root)
        checked: dict[str, tuple[Route, tuple[int, ...]] | None] = {}  # where it checks
        judged: dict[str, dict[str, str]] = {}  # route key → path → text, to look up
        stamps: dict[str, tuple[int, ...]] = {}
        out: dict[str, Origin] = {}
        for path in paths:
            route = None if config is None else config.route_of(path)
            if route is not None and route.key not in checked:
                checked[route.key] = (route, self._stamp(route)) if self._checks(route) else None
            checks = None if route is None else checked[route.key]
            try:
                with open(self.root / path, "rb") as file:
                    if checks is not None:  # the same file and verdicts: the same answer
                        seen = os.fstat(file.fileno())
                        stamps[path] = (seen.st_ino, seen.st_mtime_ns, seen.st_size, *checks[1])
                        known = _seen.get((str(self.root), path))
                        if known is not None and known[0] == stamps[path]:
                            out[path] = known[1]
                            continue
                    head = file.read(HEAD)
                    if checks or b"\n---" not in head[3:]:  # properties longer: all of it
                        head += file.read()
            except OSError:
                continue
            text = head.decode("utf-8", "replace")
            if checks is not None:
                judged.setdefault(checks[0].key, {})[path] = text
            elif (found := origin_in_head(text)) is not None:
                out[path] = found
        if judged:
            from .origins import origins_of

            if len(_seen) > SEEN_MAX:
                _seen.clear()
            for key, texts in judged.items():
                checks = checked[key]
                assert checks is not None and config is not None
                looked = origins_of(self.root, config, checks[0], texts)
                out.update(looked)
                _seen.update({(str(self.root), p): (stamps[p], o) for p, o in looked.items()})
        return {p: out[p] for p in paths if p in out}

    def quarantined(
        self, namespace: str, pending: Callable[[], Mapping[str, str]]
    ) -> dict[str, Origin]:
        check = self.guard(namespace)
        if check is None:
            return {}
        paths = pending()
        found = check(list(paths.values()))
        return {id: found[path] for id, path in paths.items() if path in found}

    def guard(self, namespace: str) -> Callable[[Sequence[str]], dict[str, Origin]] | None:
        if self._requiring(namespace) is None or not self.travels(namespace):
            return None  # what stays on this machine is its own

        def check(paths: Sequence[str]) -> dict[str, Origin]:
            found = self.origins(paths)
            return {
                p: found.get(p) or Origin(why="unknown_writer")
                for p in paths
                if not (found.get(p) or Origin(sent=True)).trusted
            }

        return check

    def closed_outside(self, namespace: str) -> dict[str, str]:
        route = self._requiring(namespace)
        if route is None or not self._checks(route):
            return {}
        from .verdicts import VerdictStore, store_path

        with VerdictStore(store_path(self.root, route), read_only=True) as store:
            return store.touched_outside(f"{namespace}/handoffs/")

    def untrusted_memories(self, namespace: str | None) -> dict[str, Origin]:
        config = load_config(self.root)
        if config is None:
            return {}
        from .verdicts import VerdictStore, store_path

        out: dict[str, Origin] = {}
        for route in config.routes:
            if route.trust != "require" or not self._checks(route):
                continue
            with VerdictStore(store_path(self.root, route), read_only=True) as store:
                found = store.untrusted()
            spaces: dict[str, list[str]] = {}
            for path in found:
                space, _, rest = path.rpartition("/memories/")
                if space and "/" not in rest and namespace in (None, space):
                    spaces.setdefault(space, []).append(path)
            for space, paths in spaces.items():
                check = self.guard(space)
                if check is not None:
                    out.update(check(paths))
        return out

    def release(self, path: str) -> str | None:
        config = load_config(self.root)
        route = None if config is None else config.route_of(path)
        if config is None or route is None or route.trust != "require":
            return None
        from .verdicts import VerdictStore, store_path, text_digest

        text = (self.root / path).read_text(encoding="utf-8")
        who = identity(route_git_dir(self.root, route))
        by = f"{who} on {config.machine}" if who is not None else f"a person on {config.machine}"
        with VerdictStore(store_path(self.root, route)) as store:
            store.release(path, text_digest(text), by)
        return by

    def _requiring(self, namespace: str) -> Route | None:
        """The route of ``namespace`` where its policy is ``require``."""
        config = load_config(self.root)
        route = None if config is None else config.route_for(namespace)
        return route if route is not None and route.trust == "require" else None

    def _stamp(self, route: Route) -> tuple[int, ...]:
        """What changes whenever the route's verdicts do (``verdicts.stamp_path``)."""
        from .verdicts import stamp_path, store_path

        try:
            seen = stamp_path(store_path(self.root, route)).stat()
        except OSError:
            return (0, 0, 0)
        return (seen.st_ino, seen.st_mtime_ns, seen.st_size)

    def _checks(self, route: Route) -> bool:
        """Whether ``route`` checks signatures (and keeps its verdicts)."""
        if route.layout != 2:
            return False
        from .verdicts import store_path

        if not store_path(self.root, route).exists():
            return False  # never checked: no git asked
        from .signers import trust_for

        return trust_for(self.root, route).checks

    def writer(self, namespace: str) -> Origin | None:
        config = load_config(self.root)
        route = None if config is None else config.route_for(namespace)
        if config is None or route is None:
            return None
        who = identity(route_git_dir(self.root, route))
        return Origin(None if who is None else str(who), config.machine)

    def view_age(self, namespace: str) -> float | None:
        from .local import read_state, state_file
        from .view import view_age

        config = load_config(self.root)
        route = None if config is None else config.route_for(namespace)
        if route is None:
            return None
        return view_age(read_state(state_file(self.root, route)))
