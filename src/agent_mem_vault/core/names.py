"""What an agent's name may be: one rule for the vault and for runs.

The same agent ("codex", "support-bot@eu", "claude-code:2") leaves handoff notes
in the vault and takes runs over, so a name either face accepts must be accepted
by the other. ``validate_agent`` is the only definition.
"""

from __future__ import annotations

import re

from .errors import InvalidInputError

__all__ = ["MAX_AGENT", "validate_agent"]

MAX_AGENT = 128
_AGENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._~:@-]{0,127}", re.ASCII)


def validate_agent(value: object, *, field: str = "agent") -> str:
    """``value`` if it is an agent name: 1-128 ASCII letters, digits and ``. _ ~ : @ -``,
    beginning with a letter or digit; matched exactly, case included.

    Why these: the name is a folder of the vault (``agents/<name>/runs/``), a key
    in the runs store (``runs/<name>``), a YAML value in note properties and a
    word on command lines, so it holds no ``/``, space or other character that
    any of those would split or escape. ``@`` (``bot@eu``) and ``~`` (``bot~2``)
    are safe in all of them, so both are allowed. The first character is a
    letter or digit because every other one misleads somewhere: a leading ``.``
    hides the folder from Obsidian and from the vault's own scan (and ``.`` and
    ``..`` are not folders of their own), ``-`` reads as an option, ``~`` as a
    home folder in a shell and as null in YAML, ``_`` is the prefix of the
    vault's own files (``_brief.md``, ``_dashboards``). 128 characters keep
    a note's path well within file-name limits. The handoff record's lexicon
    does not carry the name, so it sets no other limit.

    >>> validate_agent("support-bot@eu")
    'support-bot@eu'
    """
    if not isinstance(value, str) or not value:
        raise InvalidInputError(
            f"{field} is missing: give an agent name such as 'codex' or 'claude-code'",
            code="invalid_agent",
            field=field,
        )
    if not _AGENT.fullmatch(value):
        # The error itself cuts a long value to 200 characters and its length.
        raise InvalidInputError(
            f"{field} {value!r} is not a valid agent name: use 1-{MAX_AGENT} letters, digits, "
            "'.', '_', '~', ':', '@' or '-', starting with a letter or digit",
            code="invalid_agent",
            field=field,
        )
    return value
