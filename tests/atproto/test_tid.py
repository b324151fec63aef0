"""TIDs: 64 bits, base32-sortable, monotonic in a process, parse back to time and clock id."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest

from agent_mem_vault.atproto import is_valid_tid, next_tid, parse_tid
from agent_mem_vault.atproto.tid import TidGenerator, encode_tid
from agent_mem_vault.core.clock import ManualClock
from agent_mem_vault.core.errors import InvalidInputError


def test_next_tid_is_a_valid_13_character_tid_with_the_top_bit_zero() -> None:
    tid = next_tid()
    assert len(tid) == 13
    assert is_valid_tid(tid)
    assert tid[0] in "234567abcdefghij"


def test_parse_tid_returns_time_and_clock_id() -> None:
    when = datetime(2026, 11, 30, 12, 34, 56, 789012, tzinfo=UTC)
    gen = TidGenerator(ManualClock(when), clock_id=513)
    parsed = parse_tid(gen.next())
    assert parsed.timestamp == when
    assert parsed.clock_id == 513


def test_parse_tid_rejects_a_non_tid_naming_the_field() -> None:
    with pytest.raises(InvalidInputError) as info:
        parse_tid("not-a-tid")
    assert info.value.details["field"] == "tid"


def test_tids_minted_within_one_microsecond_are_unique_and_increasing() -> None:
    gen = TidGenerator(ManualClock(datetime(2026, 1, 1, tzinfo=UTC)), clock_id=3)
    tids = [gen.next() for _ in range(5000)]
    assert tids == sorted(tids)
    assert len(set(tids)) == len(tids)


def test_tid_is_monotonic_when_the_clock_steps_back_and_forward() -> None:
    clock = ManualClock(datetime(2026, 1, 1, tzinfo=UTC))
    gen = TidGenerator(clock, clock_id=3)
    tids = []
    ahead = clock.now()
    for step in [0.5, -10, 0, 0.000001, -3600, 7200, -0.5]:
        clock.set(clock.now() + timedelta(seconds=step))
        if step == 7200:
            ahead = clock.now()
        tids += [gen.next() for _ in range(50)]
    assert tids == sorted(tids)
    assert len(set(tids)) == len(tids)
    # Once the clock is past the last TID again, TIDs follow the clock.
    assert parse_tid(tids[-100]).timestamp == ahead


def test_text_order_is_time_order() -> None:
    early = encode_tid(1_000_000, 1023)
    late = encode_tid(1_000_001, 0)
    assert early < late


def test_tids_minted_from_many_threads_never_repeat() -> None:
    gen = TidGenerator()
    with ThreadPoolExecutor(4) as pool:
        batches = list(pool.map(lambda _: [gen.next() for _ in range(5000)], range(4)))
    tids = [t for batch in batches for t in batch]
    assert len(set(tids)) == len(tids)
    assert all(batch == sorted(batch) for batch in batches)


def test_reseeding_always_changes_the_clock_id() -> None:
    gen = TidGenerator(ManualClock(datetime(2026, 1, 1, tzinfo=UTC)), clock_id=5)
    for _ in range(10_000):
        before = gen.clock_id
        gen.reseed()
        assert gen.clock_id != before


def test_a_forked_child_mints_with_another_clock_id_than_its_parent() -> None:
    # Parent and child share the last timestamp after a fork; only the clock
    # id keeps them from minting the same TID in the same microsecond.
    code = (
        "import os\n"
        "from agent_mem_vault.atproto import next_tid, parse_tid\n"
        "mine = parse_tid(next_tid()).clock_id\n"
        "r, w = os.pipe()\n"
        "if os.fork() == 0:\n"
        "    os.write(w, str(parse_tid(next_tid()).clock_id).encode()); os._exit(0)\n"
        "os.close(w); os.wait()\n"
        "print(mine, os.read(r, 16).decode())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    parent, child = out.stdout.split()
    assert parent != child


def test_advance_past_makes_the_next_tid_larger_than_one_from_a_clock_far_ahead() -> None:
    behind = TidGenerator(ManualClock(datetime(2026, 1, 1, tzinfo=UTC)), clock_id=1023)
    ahead = TidGenerator(ManualClock(datetime(2027, 1, 1, tzinfo=UTC)), clock_id=0).next()
    behind.advance_past(ahead)
    assert behind.next() > ahead
