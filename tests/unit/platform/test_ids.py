"""leadcrm.platform.ids: UUIDv7 made in the application, and path ids parsed without ever raising."""

from __future__ import annotations

import time
import uuid

import pytest

from leadcrm.platform.ids import parse_uuid, uuid7, uuid7_block, uuid7_texts


def _unix_ms(value: uuid.UUID) -> int:
    return value.int >> 80


def test_a_new_id_is_a_version_7_uuid():
    assert uuid7().version == 7


def test_a_new_id_carries_the_rfc_9562_variant_bits():
    value = uuid7()
    assert value.variant == uuid.RFC_4122
    assert (value.int >> 62) & 0b11 == 0b10


def test_ids_made_in_a_burst_of_ten_thousand_are_strictly_increasing():
    burst = [uuid7() for _ in range(10_000)]
    assert all(a < b for a, b in zip(burst, burst[1:], strict=False))


def test_ids_made_in_a_burst_of_ten_thousand_are_unique():
    burst = [uuid7() for _ in range(10_000)]
    assert len(set(burst)) == len(burst)


def test_the_timestamp_bits_hold_the_current_unix_time_in_milliseconds():
    before = time.time_ns() // 1_000_000
    value = uuid7()
    after = time.time_ns() // 1_000_000
    # A burst earlier in the process may have borrowed a few milliseconds ahead: allow a small margin.
    assert before - 5 <= _unix_ms(value) <= after + 50


def test_a_valid_uuid_string_is_parsed():
    value = uuid7()
    assert parse_uuid(str(value)) == value


@pytest.mark.parametrize("garbage", ["", "not-a-uuid", "1234", "../../etc/passwd", "0" * 33, None, 42])
def test_parse_uuid_returns_none_for_anything_that_is_not_a_uuid(garbage):
    assert parse_uuid(garbage) is None


def test_ids_made_as_text_in_bulk_are_version_7_uuids_in_canonical_form():
    for text in uuid7_texts(100):
        value = uuid.UUID(text)
        assert (value.version, value.variant, str(value)) == (7, uuid.RFC_4122, text)


def test_ids_made_as_text_in_bulk_are_strictly_increasing_and_follow_earlier_ids():
    before = uuid7()
    burst = [uuid.UUID(text) for text in uuid7_texts(10_000)]
    after = uuid7()
    assert all(a < b for a, b in zip([before, *burst], [*burst, after], strict=False))


def test_ids_made_as_text_in_bulk_carry_the_current_time():
    before = time.time_ns() // 1_000_000
    value = uuid.UUID(uuid7_texts(1)[0])
    after = time.time_ns() // 1_000_000
    assert before - 5 <= _unix_ms(value) <= after + 50


def _stamp(value: uuid.UUID) -> int:
    """An id's millisecond and counter, as one number (what `uuid7_block` hands out)."""
    return (value.int >> 80) << 12 | (value.int >> 64) & 0xFFF


def test_a_reserved_block_of_stamps_lies_between_the_ids_made_before_and_after_it():
    before = uuid7()
    first = uuid7_block(10_000).first
    after = uuid7()
    assert _stamp(before) < first
    assert first + 10_000 - 1 < _stamp(after)


def test_a_reserved_block_starts_at_the_current_time():
    before = time.time_ns() // 1_000_000
    first = uuid7_block(1).first
    after = time.time_ns() // 1_000_000
    assert before - 5 <= first >> 12 <= after + 50


def test_a_reserved_block_carries_eight_random_bytes_an_id_each_with_the_rfc_9562_variant():
    tails = uuid7_block(1_000).tails
    chunks = [tails[i : i + 8] for i in range(0, len(tails), 8)]
    assert len(chunks) == 1_000
    assert all(chunk[0] >> 6 == 0b10 for chunk in chunks)
    assert len(set(chunks)) == 1_000
