"""The local stack's SES events have AWS's shape: every field AWS's documented record of the same type has,
at the same place and of the same JSON type, and the consumer reads them as it reads AWS's."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from infra.local import ses
from leadcrm.conversations.rules.delivery import DETAIL_TYPES, SesEventType, parse_ses_event
from tests.support.ses_events import KINDS, _fixture

MAIL = {
    "messageId": "0102018c-local-0000-0000-000000000001-000000",
    "from": "Demo Studio <no-reply@mail.leadcrm.local>",
    "to": ["dana@example.com"],
    "subject": "Open house",
    "headers": {"From": "Demo Studio <no-reply@mail.leadcrm.local>", "To": "dana@example.com", "Subject": "Open house"},
    "configurationSet": "leadcrm-local",
    "tags": {"leadcrm-mail": "m_0123456789abcdef0123456789abcdef"},
    "timestamp": "2026-12-04T09:00:00.000Z",
}


def _shape(value: Any, path: str = "") -> set[str]:
    """Every path of a JSON document with its type (lists by their first element)."""
    if isinstance(value, dict):
        found = {f"{path}:object"}
        for key, child in value.items():
            found |= _shape(child, f"{path}.{key}")
        return found
    if isinstance(value, list):
        return {f"{path}:array"} | (_shape(value[0], f"{path}[]") if value else set())
    return {f"{path}:{type(value).__name__}"}


# Tags are free-form per mail (AWS's example carries its own custom tags), so they are compared apart.
def _without_custom_tags(shape: set[str]) -> set[str]:
    return {p for p in shape if not p.startswith(".mail.tags.my")}


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_local_event_has_every_field_of_aws_documented_record(kind: str) -> None:
    detail_type, detail = ses.ses_event(MAIL, kind)
    assert detail_type == KINDS[kind][2]
    expected = _without_custom_tags(_shape(_fixture(KINDS[kind][0])))
    assert expected - _shape(detail) == set()


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_consumer_reads_a_local_event_as_it_reads_aws(kind: str) -> None:
    detail_type, detail = ses.ses_event(MAIL, kind, timestamp=datetime(2026, 12, 4, 9, 5, tzinfo=UTC))
    event = parse_ses_event(detail)
    assert DETAIL_TYPES[detail_type] is event.event_type
    assert (event.ses_message_id, event.configuration_set, event.recipients) == (
        MAIL["messageId"],
        "leadcrm-local",
        ("dana@example.com",),
    )
    assert event.ref is not None and event.ref.tag_value() == MAIL["tags"]["leadcrm-mail"]
    if event.event_type not in (SesEventType.SEND, SesEventType.REJECT):
        assert event.occurred_at == datetime(2026, 12, 4, 9, 5, tzinfo=UTC)


def test_the_same_mail_type_and_timestamp_is_the_same_event() -> None:
    at = datetime(2026, 12, 4, 9, 5, 0, 250000, tzinfo=UTC)
    first = parse_ses_event(ses.ses_event(MAIL, "bounce", timestamp=at)[1])
    again = parse_ses_event(ses.ses_event(MAIL, "bounce", timestamp=at)[1])
    assert (first.ses_message_id, first.event_type, first.occurred_at) == (
        again.ses_message_id,
        again.event_type,
        again.occurred_at,
    )


@pytest.mark.parametrize(
    ("kind", "bounce_type", "status", "code"),
    [
        ("open", None, 400, "VALIDATION_FAILED"),
        ("delivery", "Permanent", 400, "VALIDATION_FAILED"),
        ("bounce", "Soft", 400, "VALIDATION_FAILED"),
    ],
)
def test_an_event_ses_would_not_publish_is_refused(kind, bounce_type, status, code) -> None:
    with pytest.raises(ses.EventRefused) as refused:
        ses.ses_event(MAIL, kind, bounce_type=bounce_type)
    assert (refused.value.status, refused.value.code) == (status, code)


def test_mail_sent_without_a_configuration_set_publishes_no_event() -> None:
    with pytest.raises(ses.EventRefused) as refused:
        ses.ses_event({**MAIL, "configurationSet": None}, "delivery")
    assert (refused.value.status, refused.value.code) == (409, "NO_CONFIGURATION_SET")


def test_a_transient_bounce_says_transient() -> None:
    event = parse_ses_event(ses.ses_event(MAIL, "bounce", bounce_type="Transient")[1])
    assert (event.bounce_type, event.suppresses) == ("Transient", False)
