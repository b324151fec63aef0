"""The line to add to AGENTS.md / CLAUDE.md, as the vault design's "Telling your agents" has it."""

from __future__ import annotations

__all__ = ["instructions_text"]


def instructions_text(namespace: str | None = None) -> str:
    """The instruction line, naming the namespace when one is known.

    >>> instructions_text("project/harbor-api")[:47]
    'At the start of work call get_project_brief and'
    """
    where = f" ({namespace})" if namespace else ""
    return (
        f"At the start of work call get_project_brief and read_handoff for this repository's "
        f"namespace{where}; before stopping, record decisions with save_memory and leave a "
        "handoff with create_handoff if work should continue."
    )
