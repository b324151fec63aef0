"""The port through which the operations reach a vault's sync, without knowing it.

The operations (``handoffs.py``, ``memories.py``, ``base.py``) never import
``vault.sync``: the service hands them a ``SyncPort`` (``VaultBase._port``), and
sync implements it (``sync/port.py``). A vault with no route gets ``NO_SYNC``,
which answers every question at once and imports nothing.

The port asks sync synchronously only where the answer changes what the
operation does:

- ``travels`` and ``claim``: a read of a handoff in a namespace that travels
  counts only once the remote took the claim, so the operation hands the whole
  read to sync;
- ``hold_back``: whether a note must not leave the machine (a secret it gained
  here), so that whoever wrote it is told at once; sync holds it back itself
  whenever it commits for a remote, told or not;
- ``origin`` and ``view_age``: what a view of a note adds (who wrote its text and
  whether that is verified; how old this machine's view of the remote is);
- ``writer``: who a note created now is written by, so the operations stamp it;
- ``kept_private``: what making a note private means for its remote (whether it
  has an earlier version; taking it off there when asked).

Everything else flows one way, as a feed: ``changed`` is told, under the vault
lock, the notes each locked section stored or removed, and sync commits and
pushes them later in its own time (today through its journal and its syncer).

The shape leaves room for what sync grows into: a log per machine and claims
shared out among many machines change only what ``claim`` does behind the
port; signatures, authors and secrets held back fill in ``origin`` and
``hold_back``; a remote fetched by a background process fills in ``view_age``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from ..format.models import Origin

if TYPE_CHECKING:
    from ..format.models import Handoff
    from .base import VaultBase
    from .handoffs import HandoffOps
    from .privacy import Marked

__all__ = ["NO_SYNC", "NoSync", "Origin", "SyncPort"]


class SyncPort(Protocol):
    """What the operations ask of a vault's sync, and tell it (see the module)."""

    def travels(self, namespace: str) -> bool:
        """Whether ``namespace``'s notes go to a remote (then ``claim`` takes its reads)."""
        ...

    def claim(self, vault: HandoffOps, *, agent: str, namespace: str) -> Handoff | None:
        """``read_handoff`` in a namespace that travels: the newest pending handoff for
        ``agent``, marked read once the remote took the claim; None if none is pending."""
        ...

    def hold_back(self, vault: VaultBase, path: str, text: str) -> str | None:
        """Why the note at ``path`` (relative to the vault) with ``text`` stays on this
        machine, in one line for the writer; None: it may travel."""
        ...

    def kept_private(self, vault: VaultBase, marked: Marked, remove: bool) -> Marked:
        """``marked`` (a note just made private, or no longer) with what it means for its
        remote: whether the remote has a version of it; with ``remove``, taken off the
        remote's notes at the next commit."""
        ...

    def changed(self, paths: Iterable[str]) -> None:
        """The feed: the notes a locked section stored or removed (an empty path: every
        note, the index was rebuilt). Told under the vault lock; must not wait."""
        ...

    def origin(self, path: str) -> Origin | None:
        """Who wrote the text of the note at ``path``; None where nobody is known."""
        ...

    def origins(self, paths: Sequence[str]) -> dict[str, Origin]:
        """``origin`` of each of ``paths`` that has one, for a listing (one read of the
        sync's settings for all)."""
        ...

    def quarantined(
        self, namespace: str, pending: Callable[[], Mapping[str, str]]
    ) -> dict[str, Origin]:
        """The notes of ``namespace`` no agent may take or see, where its route's policy is
        ``require``: of ``pending()`` (id → path, asked only then: the pending handoffs, or
        what a brief would show), those whose text no listed key signed and no person
        released, or that an unlisted key changed last: id → who wrote it."""
        ...

    def guard(self, namespace: str) -> Callable[[Sequence[str]], dict[str, Origin]] | None:
        """Where ``namespace``'s route quarantines (``require``): a check of notes by path,
        answering those no agent may be given (path → who wrote it); else None. A read
        asks it of each candidate in turn rather than of every pending handoff."""
        ...

    def closed_outside(self, namespace: str) -> dict[str, str]:
        """Where ``namespace``'s route quarantines: its handoffs an entry no listed key signed
        changed last (path → who), such as one an outsider marked read, hiding it from the
        team; a person looks at them. Else {}."""
        ...

    def untrusted_memories(self, namespace: str | None) -> dict[str, Origin]:
        """Where a route's policy is ``require``: its memories (of ``namespace``, or of every
        namespace) that arrived with a text no listed key stands behind and no person
        released, path → who wrote it, for a person to review. Else {}."""
        ...

    def release(self, path: str) -> str | None:
        """Let the note at ``path``, as it says now, steer agents on this machine though no
        listed key signed it; who released it (the person git names), or None where its
        route quarantines nothing."""
        ...

    def writer(self, namespace: str) -> Origin | None:
        """Who a note written now in ``namespace`` is written by (the person git names for
        its route, this machine), or None: it travels nowhere, so nothing is stamped."""
        ...

    def view_age(self, namespace: str) -> float | None:
        """Seconds since this machine last heard from ``namespace``'s remote; None if it
        does not travel."""
        ...


class NoSync:
    """The port of a vault with no route: nothing travels, so nothing waits or is held."""

    def travels(self, namespace: str) -> bool:
        return False

    def claim(self, vault: HandoffOps, *, agent: str, namespace: str) -> Handoff | None:
        raise AssertionError("claim is asked only where travels() is true")

    def hold_back(self, vault: VaultBase, path: str, text: str) -> str | None:
        return None

    def kept_private(self, vault: VaultBase, marked: Marked, remove: bool) -> Marked:
        return marked

    def changed(self, paths: Iterable[str]) -> None:
        return None

    def origin(self, path: str) -> Origin | None:
        return None

    def origins(self, paths: Sequence[str]) -> dict[str, Origin]:
        return {}

    def quarantined(
        self, namespace: str, pending: Callable[[], Mapping[str, str]]
    ) -> dict[str, Origin]:
        return {}

    def guard(self, namespace: str) -> Callable[[Sequence[str]], dict[str, Origin]] | None:
        return None

    def closed_outside(self, namespace: str) -> dict[str, str]:
        return {}

    def untrusted_memories(self, namespace: str | None) -> dict[str, Origin]:
        return {}

    def release(self, path: str) -> str | None:
        return None

    def writer(self, namespace: str) -> Origin | None:
        return None

    def view_age(self, namespace: str) -> float | None:
        return None


NO_SYNC: SyncPort = NoSync()
