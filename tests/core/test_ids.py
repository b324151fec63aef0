from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agent_mem_vault.core.clock import ManualClock
from agent_mem_vault.core.ids import TidGenerator, decode_tid, encode_tid


def test_tid_is_13_sortable_characters_that_decode_back() -> None:
    clock = ManualClock(datetime(2026, 11, 30, 12, 0, tzinfo=UTC))
    gen = TidGenerator(clock, clock_id=7)
    tid = gen.next()
    assert len(tid) == 13
    parsed = decode_tid(tid)
    assert parsed.clock_id == 7
    assert parsed.timestamp == clock.now()


def test_tids_never_repeat_when_the_clock_stands_still_or_steps_back() -> None:
    clock = ManualClock(datetime(2026, 11, 30, tzinfo=UTC))
    gen = TidGenerator(clock, clock_id=1)
    tids = [gen.next() for _ in range(1000)]
    clock.set(clock.now() - timedelta(hours=1))
    tids += [gen.next() for _ in range(10)]
    assert len(set(tids)) == len(tids)
    assert tids == sorted(tids)


def test_encode_rejects_out_of_range() -> None:
    import pytest

    with pytest.raises(ValueError, match="clock id"):
        encode_tid(1, 1024)
