"""The excerpt a search hit shows: a few words around a match, matched words in brackets.

FTS5's own ``snippet()`` scores every window of the note against every match,
so its cost grows with the square of the matches: a pasted log of 250 KB that
holds the searched word a few thousand times made one search take seconds,
and a search holding the vault's only connection took every later call with
it. Here the first match is found with one regular expression (C speed,
linear in the text before it) and the excerpt is cut from a few hundred
characters around it, so a hit costs at most one pass over its note, and notes
are bounded (``records.MAX_NOTE_BYTES``).

Words are compared the way the index's tokenizer compares them (``unicode61``
with ``remove_diacritics 2``): letters and digits form words, case and accents
do not count. A match found by the index that the expression misses (an accent
the expression does not spell) shows the start of the note instead.

>>> snippet(["lock"], "Start with 1000 rows and measure the Lock time, then raise it.")
'Start with 1000 rows and measure the [Lock] time, then raise it.'
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

__all__ = ["TOKENS", "fold", "snippet"]

TOKENS = 12
"""Words an excerpt holds at most (as FTS5's snippet was asked for)."""
_TOKEN = re.compile(r"[^\W_]+")
_REACH = 240
"""Characters looked at on each side of the match: more than ``TOKENS`` words need."""


def fold(word: str) -> str:
    """``word`` without case or accents, as the index's tokenizer compares it.

    >>> fold("Café")
    'cafe'
    """
    decomposed = unicodedata.normalize("NFKD", word)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def _pattern(folded: Iterable[str], spelled: Iterable[str]) -> re.Pattern[str]:
    """Any of the words, whole (not inside a longer word), in any case."""
    variants = sorted({*folded, *spelled}, key=len, reverse=True)
    alternatives = "|".join(re.escape(v) for v in variants)
    return re.compile(rf"(?<![^\W_])(?:{alternatives})(?![^\W_])", re.IGNORECASE)


def snippet(words: Iterable[str], *texts: str, tokens: int = TOKENS) -> str:
    """About ``tokens`` words of the first of ``texts`` that holds one of ``words``, around
    its first match, with every matched word in brackets and ``…`` where the text goes
    on; the start of the first non-empty text when none holds one."""
    spelled = [t for word in words for t in _TOKEN.findall(word)]
    folded = {fold(t) for t in spelled}
    if folded:
        pattern = _pattern(folded, spelled)
        for text in texts:
            found = pattern.search(text) if text else None
            if found is not None:
                return _window(text, found.start(), folded, tokens)
    for text in texts:
        if text.strip():
            return _window(text, 0, folded, tokens)
    return ""


def _window(text: str, at: int, folded: set[str], tokens: int) -> str:
    """The excerpt of ``text`` around the word that starts at ``at``."""
    lo, hi = max(0, at - _REACH), min(len(text), at + 2 * _REACH)
    spans = [(m.start(), m.end()) for m in _TOKEN.finditer(text, lo, hi)]
    if lo > 0 and spans and spans[0][0] == lo:
        spans.pop(0)  # perhaps the end of a word cut by the window
    if hi < len(text) and spans and spans[-1][1] == hi:
        spans.pop()
    if not spans:
        return ""
    first = next((i for i, (start, _end) in enumerate(spans) if start >= at), 0)
    end = min(len(spans), max(0, first - tokens // 4) + tokens)
    begin = max(0, end - tokens)
    out: list[str] = []
    cursor = spans[begin][0]
    for start, stop in spans[begin:end]:
        out.append(text[cursor:start])
        word = text[start:stop]
        out.append(f"[{word}]" if fold(word) in folded else word)
        cursor = stop
    excerpt = " ".join("".join(out).split())
    start, stop = spans[begin][0], spans[end - 1][1]
    if _TOKEN.search(text, max(0, start - _REACH), start):
        excerpt = "…" + excerpt
    after = min(len(text), stop + _REACH)
    if _TOKEN.search(text, stop, after):
        excerpt += "…"
    elif after == len(text):
        excerpt += "".join(text[stop:].split())  # the text's last punctuation, if any
    return excerpt
