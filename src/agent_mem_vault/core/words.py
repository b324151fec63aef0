"""A number with its noun, in the right number: "1 handoff", "2 handoffs".

Every count the package shows a person goes through ``counted``, so no message
says "1 handoffs" or hedges with "problem(s)".
"""

from __future__ import annotations

__all__ = ["counted"]

_IRREGULAR = {"memory": "memories", "entry": "entries"}


def counted(n: int, singular: str, plural: str | None = None) -> str:
    """``n`` and the noun, singular for exactly one.

    >>> counted(1, "handoff"), counted(2, "memory"), counted(0, "broken note")
    ('1 handoff', '2 memories', '0 broken notes')
    """
    if n == 1:
        return f"{n} {singular}"
    if plural is None:
        head, _, last = singular.rpartition(" ")
        many = _IRREGULAR.get(last) or (last + "es" if last.endswith(("s", "x")) else last + "s")
        plural = f"{head} {many}" if head else many
    return f"{n} {plural}"
