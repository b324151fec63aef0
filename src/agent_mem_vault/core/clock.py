"""Time comes in through a clock so that tests can hold it still or move it.

No service reads the wall clock directly; each takes a ``Clock`` (default
``SystemClock``). ``ManualClock`` is the test double, shipped with the library.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Protocol, runtime_checkable

__all__ = ["Clock", "ManualClock", "SystemClock", "format_datetime", "utc_now"]


@runtime_checkable
class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware, in UTC."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never steps back, for timeouts and leases."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()


class ManualClock:
    """A clock that moves only when told to.

    >>> clock = ManualClock(datetime(2026, 1, 1, tzinfo=UTC))
    >>> clock.advance(seconds=5).isoformat()
    '2026-01-01T00:00:05+00:00'
    """

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 1, tzinfo=UTC)
        if self._now.tzinfo is None:
            raise ValueError("ManualClock needs a timezone-aware start time")
        self._mono = 0.0

    def now(self) -> datetime:
        return self._now

    def monotonic(self) -> float:
        return self._mono

    def advance(self, seconds: float = 0.0) -> datetime:
        self._now += timedelta(seconds=seconds)
        self._mono += seconds
        return self._now

    def set(self, when: datetime) -> None:
        """Jump to ``when``; may go backwards, as a stepped system clock does."""
        self._now = when


SYSTEM_CLOCK = SystemClock()


def utc_now() -> datetime:
    return SYSTEM_CLOCK.now()


def format_datetime(value: datetime) -> str:
    """RFC 3339 in UTC with millisecond precision and a ``Z``.

    This form is valid for the AT Protocol's ``datetime`` format and sorts as
    text, which the vault's index and notes rely on.
    """
    if value.tzinfo is None:
        raise ValueError("refusing to format a naive datetime: its timezone is unknown")
    value = value.astimezone(UTC)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"
