"""leadcrm.leads.rules.listing cursors: opaque, round-trippable, bound to their sort, and a garbage one is a 400."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from leadcrm.leads.rules.listing import LeadSort, ListCursor, SortOrder, decode_cursor
from leadcrm.platform.errors import BadRequest
from leadcrm.platform.ids import uuid7

AT = datetime(2026, 5, 17, 9, 30, 12, 345678, tzinfo=UTC)


def _cursor(sort: LeadSort = LeadSort.CREATED_AT, order: SortOrder = SortOrder.DESC) -> ListCursor:
    return ListCursor(sort=sort, order=order, key=AT, id=uuid7())


@pytest.mark.parametrize("sort", list(LeadSort))
@pytest.mark.parametrize("order", list(SortOrder))
def test_a_cursor_decodes_to_the_sort_key_and_id_it_was_made_from(sort, order):
    cursor = _cursor(sort, order)
    assert decode_cursor(cursor.encode(), sort, order) == cursor


def test_a_cursor_keeps_the_sort_key_to_the_microsecond():
    assert decode_cursor(_cursor().encode(), LeadSort.CREATED_AT, SortOrder.DESC).key == AT


def test_a_cursor_is_url_safe_text_without_padding():
    encoded = _cursor().encode()
    assert "=" not in encoded and "+" not in encoded and "/" not in encoded


@pytest.mark.parametrize("garbage", ["not-a-cursor!", "abc", "%%%%", "A" * 40, "AAAA", "", "é" * 10, "A" * 500])
def test_a_garbage_cursor_is_a_bad_request_with_code_invalid_cursor(garbage):
    with pytest.raises(BadRequest) as raised:
        decode_cursor(garbage, LeadSort.CREATED_AT, SortOrder.DESC)
    assert raised.value.code == "INVALID_CURSOR"
    assert raised.value.status == 400


def test_a_cursor_issued_for_another_sort_is_refused():
    encoded = _cursor(LeadSort.CREATED_AT).encode()
    with pytest.raises(BadRequest) as raised:
        decode_cursor(encoded, LeadSort.UPDATED_AT, SortOrder.DESC)
    assert raised.value.code == "INVALID_CURSOR"


def test_a_cursor_issued_for_the_other_order_is_refused():
    encoded = _cursor(order=SortOrder.DESC).encode()
    with pytest.raises(BadRequest) as raised:
        decode_cursor(encoded, LeadSort.CREATED_AT, SortOrder.ASC)
    assert raised.value.code == "INVALID_CURSOR"
