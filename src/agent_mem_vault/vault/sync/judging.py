"""Each entry judged: its signature, against a list, at the time it was first seen.

The rows of the verdict store's ``entries`` table (``verdicts.py``), made from the
commit objects; and what becomes of the verdict of an entry this machine cannot read
(its log pruned, known from a checkpoint: ``checkpoint_verdicts.py``) when the list
changes: it stays good only while the list still takes its key for its author.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .verify import AllowedSigners, still_listed, verify_commit

if TYPE_CHECKING:
    from .engine import RouteSync

__all__ = ["as_listed", "commit_author", "judged_rows"]


def judged_rows(
    sync: RouteSync, signers: AllowedSigners, seen: Mapping[str, float]
) -> list[tuple[Any, ...]]:
    """Rows for ``entries``: each commit (id → first seen) judged at its first-seen time."""
    out = []
    raws = sync.objects(list(seen), "commit")
    for commit, raw in raws.items():
        verdict = verify_commit(raw, signers, seen[commit], digits=len(commit))
        machine, seq = _entry_name(raw)
        out.append(
            (
                commit,
                machine,
                seq,
                commit_author(raw),
                int(verdict.verified),
                verdict.why,
                verdict.key,
                verdict.principal,
                seen[commit],
            )
        )
    return out


def as_listed(row: tuple[Any, ...], signers: AllowedSigners) -> tuple[Any, ...]:
    """An ``entries`` row of an entry not at hand (a log pruned; known from a checkpoint):
    verified only while ``signers`` still takes its key for its author."""
    if not row[4] or still_listed(signers, row[6], row[3], row[8]):
        return row
    return (*row[:4], 0, "unknown_key", *row[6:])


def commit_author(raw: bytes) -> str:
    """The commit's author as ``Name <email>``."""
    for line in raw.partition(b"\n\n")[0].split(b"\n"):
        if line.startswith(b"author "):
            return line[7:].decode("utf-8", "replace").rsplit(" ", 2)[0]
    return ""


def _entry_name(raw: bytes) -> tuple[str, int]:
    from .layout import message_facts

    facts = message_facts(raw.partition(b"\n\n")[2].decode("utf-8", "replace"))
    machine, seq = facts.get("machine"), facts.get("seq")
    return (str(machine or ""), seq if isinstance(seq, int) else 0)
