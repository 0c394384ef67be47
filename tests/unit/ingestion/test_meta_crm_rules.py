"""The CRM event a Lead Ads lead's stage change becomes (Meta's payload specification for CRM events), how email and
phone are normalized before SHA-256, and when nothing is sent."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from leadcrm.ingestion.rules.meta_crm import (
    LeadFacts,
    Refusal,
    build_crm_event,
    crm_event_id,
    event_name_for,
    meta_answer,
    normalized_email,
    normalized_phone,
    refusal,
    sent_summary,
)

AT = datetime(2026, 12, 5, 9, 30, tzinfo=UTC)
SOURCE_EVENT = "0193a0f2-1111-7000-8000-000000000001"


def _sha(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def _facts(**overrides: object) -> LeadFacts:
    values: dict[str, object] = {"exists": True, "pseudonymized": False, "revoked_channels": 0,
                                 "leadgen_id": "1234567890123456"}  # fmt: skip
    return LeadFacts(**{**values, **overrides})  # type: ignore[arg-type]


def test_the_event_follows_metas_crm_payload_specification():
    event = build_crm_event(
        event_name="Contacted", occurred_at=AT, source_event_id=SOURCE_EVENT, leadgen_id="1234567890123456"
    )

    assert event == {
        "event_name": "Contacted",
        "event_time": int(AT.timestamp()),
        "action_source": "system_generated",
        "event_id": f"leadcrm-{SOURCE_EVENT}",
        "user_data": {"lead_id": 1234567890123456},
        "custom_data": {"event_source": "crm", "lead_event_source": "LeadCRM"},
    }


def test_the_event_id_is_the_same_for_a_redelivery_of_the_same_status_change():
    first = build_crm_event(event_name="New", occurred_at=AT, source_event_id=SOURCE_EVENT, leadgen_id="1")
    again = build_crm_event(event_name="New", occurred_at=AT, source_event_id=SOURCE_EVENT, leadgen_id="1")
    assert first["event_id"] == again["event_id"] == crm_event_id(SOURCE_EVENT)


def test_a_leadgen_id_that_is_not_all_digits_is_sent_as_text():
    event = build_crm_event(event_name="New", occurred_at=AT, source_event_id=SOURCE_EVENT, leadgen_id="l:123")
    assert event["user_data"]["lead_id"] == "l:123"


def test_allowed_contact_details_are_sent_hashed_never_in_clear():
    event = build_crm_event(
        event_name="New",
        occurred_at=AT,
        source_event_id=SOURCE_EVENT,
        leadgen_id="1",
        email="  Dana.Cohen@Example.COM ",
        phone_e164="+972501234567",
    )

    assert event["user_data"]["em"] == [_sha("dana.cohen@example.com")]
    assert event["user_data"]["ph"] == [_sha("972501234567")]
    assert "Dana" not in str(event) and "501234567" not in str(event).replace(_sha("972501234567"), "")


def test_a_missing_or_unusable_email_or_phone_is_left_out():
    event = build_crm_event(
        event_name="New", occurred_at=AT, source_event_id=SOURCE_EVENT, leadgen_id="1", email="not-an-email"
    )
    assert set(event["user_data"]) == {"lead_id"}


def test_the_email_is_trimmed_and_lower_cased_before_hashing():
    assert normalized_email("  Ana@Example.ORG\t") == "ana@example.org"
    assert normalized_email("") is None
    assert normalized_email(None) is None


def test_the_phone_is_digits_only_with_its_country_code_and_no_leading_zero():
    assert normalized_phone("+1 (650) 555-1234") == "16505551234"
    assert normalized_phone("+972501234567") == "972501234567"
    assert normalized_phone("00972501234567") == "972501234567"
    assert normalized_phone(None) is None
    assert normalized_phone("++") is None


@given(st.text())
def test_a_normalized_phone_is_digits_without_a_leading_zero(text: str):
    normalized = normalized_phone(text)
    assert normalized is None or (normalized.isascii() and normalized.isdigit() and not normalized.startswith("0"))


@given(st.emails())
def test_an_email_normalizes_the_same_whatever_its_case_and_surrounding_space(email: str):
    assert normalized_email(f"  {email.upper()} ") == normalized_email(email.lower())


def test_the_event_name_is_the_organizations_mapping_else_the_stage_name():
    assert event_name_for("s1", "Contacted", {"s1": "Qualified Lead"}) == "Qualified Lead"
    assert event_name_for("s2", "Contacted", {"s1": "Qualified Lead"}) == "Contacted"


def test_an_erased_lead_sends_nothing_whatever_else_holds():
    assert refusal(_facts(exists=False), channels=4, configured=True) is Refusal.ERASED


def test_a_pseudonymized_lead_sends_nothing():
    assert refusal(_facts(pseudonymized=True), channels=4, configured=True) is Refusal.PSEUDONYMIZED


def test_a_lead_that_did_not_come_from_lead_ads_sends_nothing():
    assert refusal(_facts(leadgen_id=None), channels=4, configured=True) is Refusal.NOT_FROM_META


def test_a_lead_who_revoked_every_channel_sends_nothing_but_one_revoked_channel_does_not_stop_it():
    assert refusal(_facts(revoked_channels=4), channels=4, configured=True) is Refusal.DO_NOT_CONTACT
    assert refusal(_facts(revoked_channels=1), channels=4, configured=True) is None


def test_an_organization_that_has_not_turned_crm_events_on_sends_nothing():
    assert refusal(_facts(), channels=4, configured=False) is Refusal.NOT_CONFIGURED
    assert refusal(_facts(), channels=4, configured=True) is None


def test_metas_answer_is_kept_as_events_received_or_the_error():
    assert meta_answer(200, {"events_received": 1, "fbtrace_id": "A1"}) == {
        "status": 200,
        "eventsReceived": 1,
        "fbtraceId": "A1",
    }
    refused = meta_answer(400, {"error": {"message": "(#100) Invalid parameter", "code": 100, "fbtrace_id": "B2"}})
    assert refused["error"]["code"] == 100
    assert refused["fbtraceId"] == "B2"


def test_the_timeline_shows_which_fields_were_sent_not_the_hashes():
    event = build_crm_event(
        event_name="New", occurred_at=AT, source_event_id=SOURCE_EVENT, leadgen_id="1", email="a@b.co"
    )
    summary = sent_summary(event)
    assert summary["userData"] == ["em", "lead_id"]
    assert _sha("a@b.co") not in str(summary)
