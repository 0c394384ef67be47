"""WhatsApp conversation rules: the 24-hour customer-service window, the order of status webhooks, templates."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from leadcrm.conversations.rules.whatsapp import (
    CUSTOMER_SERVICE_WINDOW,
    WhatsAppStatus,
    WindowClosed,
    check_free_form,
    inbound_body,
    latest_status,
    parameter_count,
    render,
    window_closes_at,
    window_is_open,
)

LAST_INBOUND = datetime(2026, 12, 5, 9, 30, tzinfo=UTC)
instants = st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2035, 1, 1), timezones=st.just(UTC))
offsets = st.timedeltas(min_value=timedelta(days=-3), max_value=timedelta(days=3))


def test_the_window_closes_24_hours_after_the_last_inbound_message():
    assert window_closes_at(LAST_INBOUND) == datetime(2026, 12, 6, 9, 30, tzinfo=UTC)


def test_a_lead_who_never_wrote_has_no_window():
    assert window_closes_at(None) is None
    assert not window_is_open(None, LAST_INBOUND)


def test_the_window_is_open_one_microsecond_before_it_closes_and_closed_at_the_instant():
    closes = LAST_INBOUND + CUSTOMER_SERVICE_WINDOW
    assert window_is_open(LAST_INBOUND, closes - timedelta(microseconds=1))
    assert not window_is_open(LAST_INBOUND, closes)


@given(last=instants, offset=offsets)
def test_the_window_is_open_exactly_while_less_than_24_hours_passed(last, offset):
    now = last + offset
    assert window_is_open(last, now) == (now - last < CUSTOMER_SERVICE_WINDOW)


@given(last=instants, offset=offsets)
def test_a_free_form_message_is_refused_outside_the_window_naming_when_it_closed(last, offset):
    now = last + offset
    if now < last + CUSTOMER_SERVICE_WINDOW:
        check_free_form(last, now)
    else:
        with pytest.raises(WindowClosed) as refused:
            check_free_form(last, now)
        assert refused.value.closed_at == last + CUSTOMER_SERVICE_WINDOW


def test_a_free_form_message_to_a_lead_who_never_wrote_names_no_closing_time():
    with pytest.raises(WindowClosed) as refused:
        check_free_form(None, LAST_INBOUND)
    assert refused.value.closed_at is None


ALL_STATUSES = ["sent", "delivered", "read", "failed"]


@pytest.mark.parametrize("order", list(itertools.permutations(["sent", "delivered", "read"])))
def test_statuses_in_any_order_end_in_read(order):
    assert latest_status(order) is WhatsAppStatus.READ


@given(st.lists(st.sampled_from(ALL_STATUSES), min_size=1))
def test_the_status_is_the_same_whatever_order_the_webhooks_came_in(statuses):
    assert latest_status(statuses) == latest_status(list(reversed(statuses))) == latest_status(sorted(statuses))


def test_a_status_never_moves_backwards():
    assert latest_status(["read", "delivered", "sent"]) is WhatsAppStatus.READ
    assert latest_status(["delivered", "sent"]) is WhatsAppStatus.DELIVERED


def test_a_failure_is_final():
    assert latest_status(["sent", "failed", "delivered"]) is WhatsAppStatus.FAILED


def test_no_known_status_is_none():
    assert latest_status([]) is None
    assert latest_status(["deleted"]) is None


COMPONENTS = [
    {"type": "HEADER", "format": "TEXT", "text": "Hello"},
    {"type": "BODY", "text": "Hi {{1}}, your trial is on {{2}}. See you, {{1}}!"},
    {"type": "FOOTER", "text": "Studio"},
]


def test_a_template_takes_as_many_parameters_as_its_highest_placeholder():
    assert parameter_count(COMPONENTS) == 2
    assert parameter_count([{"type": "BODY", "text": "No parameters"}]) == 0
    assert parameter_count(None) == 0


def test_a_template_renders_its_body_with_the_parameters():
    assert render(COMPONENTS, ["Ana", "Thursday"]) == "Hi Ana, your trial is on Thursday. See you, Ana!"


def test_an_inbound_message_without_text_shows_its_kind():
    assert inbound_body(None, "image") == "[image]"
    assert inbound_body("Hello", "text") == "Hello"
    assert inbound_body(None, None) == "[message]"
