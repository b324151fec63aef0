"""The project brief: what an agent reads first when it starts work in a namespace.

It joins a human-editable note (``<namespace>/_brief.md``), made from
``brief_template``, the recent decisions and the pending handoffs, and is kept
short enough for a prompt: at most ``MAX_DECISIONS`` decisions and
``MAX_PENDING`` handoffs, each one line (``models.Brief``, ``models.render_brief``).
"""

from __future__ import annotations

__all__ = ["MAX_DECISIONS", "MAX_PENDING", "brief_template"]

MAX_DECISIONS = 10
MAX_PENDING = 10


def brief_template(namespace: str) -> str:
    """The body of a new brief note, for a person to fill in."""
    return (
        f"# {namespace}\n\n"
        "What an agent should know before it starts work here: goals, conventions,\n"
        "where things are. Edit this note freely; agents read it with get_project_brief.\n"
    )
