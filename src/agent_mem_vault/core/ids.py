"""Identifiers: AT Protocol TIDs.

A TID is 64 bits: the top bit 0, then 53 bits of microseconds since the Unix
epoch, then 10 bits of clock id; written as 13 characters of base32-sortable
(``234567abcdefghijklmnopqrstuvwxyz``), so that text order is time order.

``TidGenerator`` never returns the same TID twice, and never a smaller one,
even when the wall clock stands still within a microsecond or steps back: it
keeps the last timestamp it used and moves one microsecond past it.
"""

from __future__ import annotations

import os
import secrets
import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from .clock import SYSTEM_CLOCK, Clock

__all__ = ["TID_ALPHABET", "ParsedTid", "TidGenerator", "decode_tid", "encode_tid", "next_tid"]

TID_ALPHABET = "234567abcdefghijklmnopqrstuvwxyz"
_INDEX = {c: i for i, c in enumerate(TID_ALPHABET)}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MAX_MICROS = (1 << 53) - 1


@dataclass(frozen=True, slots=True)
class ParsedTid:
    """What a TID holds: when it was minted (to the microsecond) and by which clock id."""

    micros: int
    clock_id: int

    @property
    def timestamp(self) -> datetime:
        return _EPOCH + timedelta(microseconds=self.micros)


def encode_tid(micros: int, clock_id: int) -> str:
    if not 0 <= micros <= _MAX_MICROS:
        raise ValueError(f"TID timestamp out of range: {micros}")
    if not 0 <= clock_id < 1024:
        raise ValueError(f"TID clock id must be 0..1023, got {clock_id}")
    value = (micros << 10) | clock_id
    chars = []
    for _ in range(13):
        chars.append(TID_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def decode_tid(tid: str) -> ParsedTid:
    """Split a TID into time and clock id; ``ValueError`` if it is not one."""
    if len(tid) != 13 or tid[0] not in TID_ALPHABET[:16]:
        raise ValueError(f"not a TID: {tid!r}")
    value = 0
    for ch in tid:
        try:
            value = (value << 5) | _INDEX[ch]
        except KeyError:
            raise ValueError(f"not a TID: {tid!r} (bad character {ch!r})") from None
    return ParsedTid(micros=value >> 10, clock_id=value & 1023)


class TidGenerator:
    """Mints TIDs that are unique and strictly increasing within this generator.

    The clock id is random per generator, so two processes minting in the same
    microsecond still differ in the last 10 bits.
    """

    def __init__(self, clock: Clock = SYSTEM_CLOCK, clock_id: int | None = None) -> None:
        self._clock = clock
        self._clock_id = secrets.randbelow(1024) if clock_id is None else clock_id
        if not 0 <= self._clock_id < 1024:
            raise ValueError(f"TID clock id must be 0..1023, got {self._clock_id}")
        self._last = -1
        self._lock = threading.Lock()

    def reseed(self) -> None:
        """Pick a new clock id, never the old one: a forked child must not mint its parent's TIDs.

        The child inherits the last timestamp too, so parent and child could
        otherwise mint the very same TID in the same microsecond.
        """
        self._clock_id = (self._clock_id + 1 + secrets.randbelow(1023)) % 1024
        self._lock = threading.Lock()

    def advance_past(self, tid: str) -> None:
        """Mint only TIDs above ``tid`` from now on (a TID seen from another process).

        This is how TIDs minted on different hosts stay in order along a chain
        (a run started after another gets the larger TID), however far their
        clocks disagree: a hybrid logical clock, in one line.

        >>> from agent_mem_vault.core.clock import ManualClock
        >>> gen = TidGenerator(ManualClock(datetime(2026, 1, 1, tzinfo=UTC)), clock_id=0)
        >>> gen.advance_past("3kznmn7xqxl22")
        >>> gen.next() > "3kznmn7xqxl22"
        True
        """
        micros = decode_tid(tid).micros
        with self._lock:
            self._last = max(self._last, micros)

    @property
    def clock_id(self) -> int:
        return self._clock_id

    def next(self) -> str:
        now = self._clock.now()
        micros = (now - _EPOCH) // timedelta(microseconds=1)
        with self._lock:
            # Never reuse or go below the last timestamp: a clock that stands
            # still or steps back must not produce a duplicate or an older TID.
            micros = max(micros, self._last + 1)
            self._last = micros
        return encode_tid(micros, self._clock_id)

    __call__ = next


_DEFAULT = TidGenerator()
os.register_at_fork(after_in_child=_DEFAULT.reseed)


def next_tid() -> str:
    """A fresh TID from the process-wide generator."""
    return _DEFAULT.next()
