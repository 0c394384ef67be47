"""SES's sending events, read from AWS's documented records: which mail, which event, what it does to the
mail's delivery status (the worst news wins, whatever the order), what suppresses the address, and the bulk
email's bounce-rate rule."""

from __future__ import annotations

import itertools
import uuid
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from leadcrm.conversations.rules.delivery import (
    DELIVERY_RANK,
    DETAIL_TYPES,
    DeliveryStatus,
    MailRef,
    MalformedSesEvent,
    SesEventType,
    bounce_rate_exceeded,
    next_delivery_status,
    parse_mail_ref,
    parse_ses_event,
)
from tests.support.ses_events import KINDS, ses_detail

MESSAGE_ID = "010001812345abcd-11111111-2222-3333-4444-555555555555-000000"
TO = "dana@example.com"


def _event(kind: str, **overrides):
    return parse_ses_event(ses_detail(kind, message_id=MESSAGE_ID, to=TO, **overrides))


# -- which mail --------------------------------------------------------------------------------------------


@given(st.uuids())
def test_a_conversation_message_ref_survives_its_ses_tag(message_id: uuid.UUID) -> None:
    ref = MailRef.conversation(message_id)
    assert parse_mail_ref(ref.tag_value()) == ref


@given(st.uuids(), st.uuids())
def test_a_bulk_recipient_ref_survives_its_ses_tag(job_id: uuid.UUID, lead_id: uuid.UUID) -> None:
    ref = MailRef.bulk(job_id, lead_id)
    value = ref.tag_value()
    assert parse_mail_ref(value) == ref
    # SES tag values: letters, digits, underscore and dash only, at most 256 characters
    assert len(value) <= 256 and all(c.isalnum() or c in "_-" for c in value)


@pytest.mark.parametrize("value", [None, "", "m_xyz", f"x_{uuid.uuid4().hex}", f"m_{uuid.uuid4()}", 42, ["m_1"]])
def test_a_tag_this_service_did_not_write_names_no_mail(value) -> None:
    assert parse_mail_ref(value) is None


def test_the_event_carries_its_tag_its_ses_id_and_the_configuration_set() -> None:
    ref = MailRef.bulk(uuid.uuid4(), uuid.uuid4())
    event = _event("delivery", tag=ref.tag_value())
    assert (event.ref, event.ses_message_id, event.configuration_set) == (ref, MESSAGE_ID, "leadcrm-test")
    assert event.recipients == (TO,)


def test_a_mail_without_our_tag_is_known_by_its_ses_id_only() -> None:
    event = _event("delivery")
    assert event.ref is None and event.ses_message_id == MESSAGE_ID


# -- which event ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "event_type", "status"),
    [
        ("send", SesEventType.SEND, None),
        ("delivery", SesEventType.DELIVERY, DeliveryStatus.DELIVERED),
        ("bounce", SesEventType.BOUNCE, DeliveryStatus.BOUNCED),
        ("complaint", SesEventType.COMPLAINT, DeliveryStatus.COMPLAINED),
        ("reject", SesEventType.REJECT, DeliveryStatus.REJECTED),
        ("deliveryDelay", SesEventType.DELIVERY_DELAY, DeliveryStatus.DELAYED),
    ],
)
def test_each_documented_record_reads_as_its_event_and_status(kind, event_type, status) -> None:
    event = _event(kind)
    assert (event.event_type, event.status) == (event_type, status)


def test_every_detail_type_the_rule_routes_is_a_type_this_service_reads() -> None:
    assert set(DETAIL_TYPES) == {detail_type for _, _, detail_type in KINDS.values()}


def test_an_event_is_identified_by_its_own_timestamp() -> None:
    first = _event("bounce", timestamp="2026-12-01T10:00:00.000Z", sent_at="2026-12-01T09:59:00.000Z")
    assert first.occurred_at == datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
    assert first.sent_at == datetime(2026, 12, 1, 9, 59, tzinfo=UTC)


@pytest.mark.parametrize("kind", ["send", "reject"])
def test_send_and_reject_have_no_timestamp_of_their_own_and_take_the_mails(kind) -> None:
    event = _event(kind, sent_at="2026-12-01T09:59:00.123Z")
    assert event.occurred_at == event.sent_at == datetime(2026, 12, 1, 9, 59, 0, 123000, tzinfo=UTC)


def test_what_is_kept_of_an_event_is_its_types_never_an_address_or_diagnostic() -> None:
    bounce = _event("bounce").detail()
    assert bounce == {"eventType": "Bounce", "bounceType": "Permanent", "bounceSubType": "General"}
    assert _event("complaint").detail() == {"eventType": "Complaint", "complaintFeedbackType": "abuse"}
    delay = _event("deliveryDelay").detail()
    assert delay == {"eventType": "DeliveryDelay", "delayType": "TransientCommunicationFailure"}
    assert _event("reject").detail() == {"eventType": "Reject", "rejectReason": "Bad content"}
    for kind in KINDS:
        assert TO not in str(_event(kind).detail())


def _without(detail: dict, *path: str) -> dict:
    node = detail
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    return detail


@pytest.mark.parametrize(
    ("broken", "reason"),
    [
        (lambda d: "not an object", "detail is not an object"),
        (lambda d: {**d, "eventType": "Open"}, "eventType"),
        (lambda d: _without(d, "mail"), "mail is missing"),
        (lambda d: _without(d, "mail", "messageId"), "mail.messageId"),
        (lambda d: {**d, "mail": {**d["mail"], "timestamp": "yesterday"}}, "mail.timestamp"),
        (lambda d: {**d, "mail": {**d["mail"], "timestamp": "2026-12-01T10:00:00"}}, "zone"),
        (lambda d: _without(d, "bounce"), "bounce is missing"),
        (lambda d: _without(d, "bounce", "timestamp"), "bounce.timestamp"),
    ],
)
def test_a_record_that_is_not_an_ses_event_we_read_is_refused_with_the_field_named(broken, reason) -> None:
    detail = ses_detail("bounce", message_id=MESSAGE_ID, to=TO)
    with pytest.raises(MalformedSesEvent, match=reason):
        parse_ses_event(broken(detail))


# -- what it does to the mail --------------------------------------------------------------------------------


def test_a_delivery_after_a_delay_delivers_and_a_complaint_after_a_delivery_complains() -> None:
    assert next_delivery_status(None, DeliveryStatus.DELAYED) is DeliveryStatus.DELAYED
    assert next_delivery_status("delayed", DeliveryStatus.DELIVERED) is DeliveryStatus.DELIVERED
    assert next_delivery_status("delivered", DeliveryStatus.COMPLAINED) is DeliveryStatus.COMPLAINED


def test_late_good_news_never_undoes_bad_news() -> None:
    assert next_delivery_status("bounced", DeliveryStatus.DELIVERED) is None
    assert next_delivery_status("complained", DeliveryStatus.DELAYED) is None
    assert next_delivery_status("delivered", DeliveryStatus.DELAYED) is None


def test_a_send_event_changes_no_delivery_status() -> None:
    assert next_delivery_status(None, None) is None
    assert next_delivery_status("delivered", None) is None


def _apply(events: list[DeliveryStatus]) -> str | None:
    status: str | None = None
    for incoming in events:
        changed = next_delivery_status(status, incoming)
        status = changed.value if changed is not None else status
    return status


@settings(max_examples=50, deadline=None)
@given(st.lists(st.sampled_from(list(DeliveryStatus)), max_size=6))
def test_the_status_is_the_worst_news_in_any_order_and_with_any_repeats(events: list[DeliveryStatus]) -> None:
    expected = max(events, key=DELIVERY_RANK.__getitem__).value if events else None
    assert _apply(events) == expected
    for order in itertools.islice(itertools.permutations(events), 20):
        assert _apply(list(order)) == expected
    assert _apply(events + events) == expected


# -- suppression ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "overrides", "suppresses"),
    [
        ("bounce", {"bounce_type": "Permanent"}, True),
        ("bounce", {"bounce_type": "Transient"}, False),
        ("bounce", {"bounce_type": "Undetermined"}, False),
        ("complaint", {}, True),
        ("complaint", {"feedback_type": "not-spam"}, False),
        ("deliveryDelay", {}, False),
        ("delivery", {}, False),
        ("reject", {}, False),
        ("send", {}, False),
    ],
)
def test_a_permanent_bounce_or_a_complaint_suppresses_the_address(kind, overrides, suppresses) -> None:
    assert _event(kind, **overrides).suppresses is suppresses


def test_a_complaint_without_a_feedback_report_still_suppresses() -> None:
    detail = ses_detail("complaint", message_id=MESSAGE_ID, to=TO)
    del detail["complaint"]["complaintFeedbackType"]
    assert parse_ses_event(detail).suppresses


# -- the bounce-rate rule ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sent", "bounced", "exceeded"),
    [
        (100, 5, False),  # at the threshold: not past it
        (100, 6, True),
        (19, 19, False),  # too few mails to judge a list
        (20, 2, True),
        (0, 0, False),
    ],
)
def test_the_bounce_rate_passes_the_threshold_only_once_enough_mails_went_out(sent, bounced, exceeded) -> None:
    assert bounce_rate_exceeded(sent, bounced, threshold=0.05, min_sent=20) is exceeded


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 500), st.integers(0, 500), st.floats(0, 1), st.integers(1, 100))
def test_more_bounces_never_unpause_and_fewer_mails_than_the_minimum_never_pause(sent, extra, threshold, min_sent):
    bounced = min(extra, sent)
    if sent < min_sent:
        assert not bounce_rate_exceeded(sent, bounced, threshold=threshold, min_sent=min_sent)
    if bounce_rate_exceeded(sent, bounced, threshold=threshold, min_sent=min_sent) and bounced < sent:
        assert bounce_rate_exceeded(sent, bounced + 1, threshold=threshold, min_sent=min_sent)

