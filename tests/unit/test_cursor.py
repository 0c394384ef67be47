"""leadcrm.services.leads cursors: opaque, round-trippable, and a garbage one is a 400."""

from __future__ import annotations

import pytest

from leadcrm.errors import BadRequest
from leadcrm.ids import uuid7
from leadcrm.services.lead_queries import decode_cursor, encode_cursor


def test_a_cursor_decodes_to_the_id_it_was_made_from():
    last_id = uuid7()
    assert decode_cursor(encode_cursor(last_id)) == last_id


def test_a_cursor_is_url_safe_text_without_padding():
    cursor = encode_cursor(uuid7())
    assert "=" not in cursor and "+" not in cursor and "/" not in cursor


@pytest.mark.parametrize("garbage", ["not-a-cursor!", "abc", "%%%%", "A" * 40, "AAAA"])
def test_a_garbage_cursor_is_a_bad_request_with_code_invalid_cursor(garbage):
    with pytest.raises(BadRequest) as raised:
        decode_cursor(garbage)
    assert raised.value.code == "INVALID_CURSOR"
    assert raised.value.status == 400
