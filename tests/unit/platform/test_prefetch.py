"""Reading ahead (platform.prefetch): the same items in the same order, the iterator's error at its place,
no more than `depth` items made ahead, and the thread stopped when the reader leaves early."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from leadcrm.platform.prefetch import SWITCH_INTERVAL_SECONDS, Prefetched


@given(st.lists(st.integers(), max_size=50), st.integers(min_value=1, max_value=4))
def test_the_items_come_in_order_and_all_of_them(items, depth):
    with Prefetched(iter(items), depth=depth) as prefetched:
        assert list(prefetched) == items


def test_an_error_of_the_iterator_reaches_the_reader_after_the_items_before_it():
    def failing() -> Iterator[int]:
        yield 1
        yield 2
        raise ValueError("row 3 is not CSV")

    seen = []
    with Prefetched(failing()) as prefetched, pytest.raises(ValueError, match="row 3"):
        for item in prefetched:
            seen.append(item)
    assert seen == [1, 2]


def test_after_the_end_it_stays_ended():
    with Prefetched(iter([1])) as prefetched:
        assert list(prefetched) == [1]
        assert list(prefetched) == []


def test_no_more_than_depth_items_are_made_ahead_of_the_reader():
    made: list[int] = []

    def counting() -> Iterator[int]:
        for i in range(100):
            made.append(i)
            yield i

    with Prefetched(counting(), depth=2) as prefetched:
        assert next(prefetched) == 0
        time.sleep(0.2)
        # 0 taken, 1 and 2 waiting in the queue, 3 made and waiting for room
        assert len(made) <= 4


def test_leaving_early_stops_the_thread():
    def endless() -> Iterator[int]:
        i = 0
        while True:
            yield i
            i += 1

    before = threading.active_count()
    with Prefetched(endless()) as prefetched:
        assert next(prefetched) == 0
    assert threading.active_count() == before


def test_while_reading_ahead_the_reader_waits_for_the_gil_no_longer_than_the_short_switch_interval():
    before = sys.getswitchinterval()
    with Prefetched(iter([1, 2])):
        assert sys.getswitchinterval() == min(before, SWITCH_INTERVAL_SECONDS)


def test_the_switch_interval_is_given_back_when_the_reading_ahead_ends():
    before = sys.getswitchinterval()
    with Prefetched(iter([1, 2])) as items:
        list(items)
    assert sys.getswitchinterval() == before
