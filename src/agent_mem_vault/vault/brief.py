"""The project brief: what an agent reads first when it starts work in a namespace.

It joins a human-editable note (``<namespace>/_brief.md``), the recent
decisions and the pending handoffs, and is kept short enough for a prompt:
at most ``MAX_DECISIONS`` decisions and ``MAX_PENDING`` handoffs, each one line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .links import wikilink

if TYPE_CHECKING:
    from .models import Brief

__all__ = ["MAX_DECISIONS", "MAX_PENDING", "brief_template", "render_brief"]

MAX_DECISIONS = 10
MAX_PENDING = 10
_LINE = 160


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _LINE else line[: _LINE - 1] + "…"


def brief_template(namespace: str) -> str:
    """The body of a new brief note, for a person to fill in."""
    return (
        f"# {namespace}\n\n"
        "What an agent should know before it starts work here: goals, conventions,\n"
        "where things are. Edit this note freely; agents read it with get_project_brief.\n"
    )


def _without_title(notes: str, namespace: str) -> str:
    """The note without its title line ``# <namespace>`` (the one ``brief_template``
    writes): the brief's own heading already names the namespace, once."""
    first, _, rest = notes.partition("\n")
    if first.strip() == f"# {namespace}":
        return rest.strip()
    return notes


def render_brief(brief: Brief, *, pending: bool = True) -> str:
    """Markdown: the note, then decisions, then pending handoffs (with ids to read or ack).

    Each entry links its note (``[[id]]``, or ``[[path|id]]`` for a note written by
    hand), so a brief kept in the vault shows its threads in Obsidian, and the
    id an agent passes on is in the link. ``pending=False`` leaves the pending
    handoffs out, for a caller that lists them its own way (the session hook lists
    the agent's own), so no list shows twice."""
    parts = [f"# Project brief: {brief.namespace}"]
    notes = _without_title(brief.notes.strip(), brief.namespace)
    if notes:
        parts.append(notes)
    if brief.decisions:
        lines = [
            f"- {m.created_at[:10]} {_one_line(m.title)} {wikilink(m.path, m.id)}"
            for m in brief.decisions
        ]
        parts.append("## Recent decisions\n" + "\n".join(lines))
    else:
        parts.append("## Recent decisions\n(none yet)")
    if not pending:
        return "\n\n".join(parts)
    if brief.pending:
        lines = [
            f"- {wikilink(h.path, h.id)} from {h.sender} to {h.recipient or 'any agent'}: "
            f"{_one_line(h.summary)}"
            for h in brief.pending
        ]
        parts.append("## Pending handoffs\n" + "\n".join(lines))
    else:
        parts.append("## Pending handoffs\n(none)")
    return "\n\n".join(parts)
