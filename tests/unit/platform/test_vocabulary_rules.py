"""The shared list and period rules: the `assignee` filter and a period of local days."""

from __future__ import annotations

import uuid
from datetime import date

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from leadcrm.platform.assignee import NOBODY, Assignee, parse_assignee
from leadcrm.platform.errors import BadRequest
from leadcrm.platform.periods import check_days, period_of

CALLER = uuid.uuid4()


def test_assignee_me_is_the_caller():
    assert parse_assignee("me", CALLER) == Assignee(CALLER)


def test_assignee_unassigned_is_nobody():
    assert parse_assignee("unassigned", CALLER) is NOBODY and NOBODY.is_unassigned


def test_assignee_a_user_id_is_that_user():
    other = uuid.uuid4()
    assert parse_assignee(str(other), CALLER) == Assignee(other)


def test_no_assignee_is_no_filter():
    assert parse_assignee(None, CALLER) is None


def test_assignee_me_from_no_user_is_refused():
    with pytest.raises(BadRequest) as refused:
        parse_assignee("me", None)
    assert refused.value.code == "VALIDATION_FAILED"


@settings(max_examples=25)
@given(st.text(max_size=40).filter(lambda t: t not in ("me", "unassigned")))
def test_anything_else_is_a_validation_failure(raw):
    try:
        uuid.UUID(raw)
        is_uuid = len(raw) == 36
    except ValueError:
        is_uuid = False
    if is_uuid:
        assert parse_assignee(raw, CALLER) == Assignee(uuid.UUID(raw))
    else:
        with pytest.raises(BadRequest) as refused:
            parse_assignee(raw, CALLER)
        assert refused.value.code == "VALIDATION_FAILED"


def test_a_reversed_period_is_invalid():
    with pytest.raises(BadRequest) as refused:
        check_days(date(2026, 3, 2), date(2026, 3, 1))
    assert (refused.value.code, refused.value.extra) == ("INVALID_PERIOD", {"from": "2026-03-02", "to": "2026-03-01"})


def test_a_period_longer_than_the_route_allows_is_invalid():
    check_days(date(2026, 1, 1), date(2026, 1, 31), max_days=31)
    with pytest.raises(BadRequest) as refused:
        check_days(date(2026, 1, 1), date(2026, 2, 1), max_days=31)
    assert refused.value.code == "INVALID_PERIOD"


def test_a_one_day_period_covers_that_local_day():
    period = period_of(date(2026, 3, 29), date(2026, 3, 29), "Europe/London")  # the spring-forward day: 23 hours
    assert period.starts_at is not None and period.ends_at is not None
    assert (period.ends_at - period.starts_at).total_seconds() == 23 * 3600
