"""The touch log (crm-workflows section 7): a lead's first touch is written with it (UTM captured at
creation) and never overwritten; later receipts and inbound messages (`conversation.inbound_received`,
once per event id) are appended; a lead with no known source is Direct / Unknown until staff correct it,
with a reason on the timeline."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from leadcrm.platform.ids import uuid7
from tests.support.analytics_helpers import timeline_entries, touches_of
from tests.support.api import call_api, leads_path
from tests.support.capture_helpers import capture, lead_rows, make_campaign
from tests.support.erase_helpers import deliver
from tests.support.factories import make_caller

SPRING = {"source": "Google", "medium": "cpc", "campaign": "spring", "term": "yoga", "content": "banner-a"}


@pytest.fixture
def task_lifecycle(ctx):
    from task_lifecycle.handler import lambda_handler

    return lambda event: lambda_handler(event, ctx)


@pytest.fixture
def caller():
    return make_caller(role="coach")


def _captured_lead(caller, **body):
    response = capture(caller.org_id, {"name": "Dana", "email": "dana@example.com", **body})
    assert response.status == 201, response.body
    (lead,) = lead_rows(caller.org_id)
    return lead


def _staff_create(caller, **body):
    response = call_api("POST", leads_path(caller.org_id), sub=caller.sub, body={"name": "Noa Levi", **body})
    assert response.status == 201, response.body
    return response.data


def attribution_path(org_id, lead_id):
    return f"{leads_path(org_id, lead_id)}/attribution"


# -- first touch ---------------------------------------------------------------------------------------------


def test_a_captured_lead_keeps_the_utm_it_arrived_with_as_its_first_touch(caller):
    lead = _captured_lead(caller, utm=SPRING)
    (first,) = touches_of(lead["id"])
    assert first["is_first"] and first["kind"] == "form" and first["channel"] == "google"
    assert (
        first["utm_source"],
        first["utm_medium"],
        first["utm_campaign"],
        first["utm_term"],
        first["utm_content"],
    ) == (
        "Google",
        "cpc",
        "spring",
        "yoga",
        "banner-a",
    )
    assert first["occurred_at"] == lead["created_at"]


def test_a_later_submission_is_appended_and_never_overwrites_the_first_touch(caller):
    lead = _captured_lead(caller, utm=SPRING)
    _captured_lead(caller, utm={"source": "newsletter", "medium": "email"}, campaignRef="contact-form")
    first, later = touches_of(lead["id"])
    assert (first["utm_source"], first["channel"], first["campaign_id"]) == ("Google", "google", None)
    assert (later["is_first"], later["kind"], later["utm_source"], later["channel"]) == (
        False,
        "form",
        "newsletter",
        "newsletter",
    )
    assert later["campaign_id"] is not None  # the contact-form hook the resubmission resolved
    assert later["detail"]["receiptId"]


def test_a_minisite_lead_without_campaign_or_utm_is_direct_unknown(caller):
    (first,) = touches_of(_captured_lead(caller)["id"])
    assert first["channel"] == "direct_unknown"


def test_a_staff_lead_is_a_staff_touch_attributed_to_its_campaign(caller):
    campaign = make_campaign(caller.org_id, name="Walk-in flyer")
    lead = _staff_create(caller, source="referral", campaignId=str(campaign))
    (first,) = touches_of(lead["id"])
    assert (first["kind"], first["channel"], first["campaign_id"]) == ("staff", "referral", campaign)


def test_the_touch_log_route_shows_the_first_touch_and_every_later_one(caller):
    lead = _captured_lead(caller, utm=SPRING)
    _captured_lead(caller)
    response = call_api("GET", attribution_path(caller.org_id, lead["id"]), sub=caller.sub)
    assert response.status == 200, response.body
    data = response.data
    assert data["firstTouch"]["utm"] == SPRING
    assert data["firstTouch"]["isFirst"] is True
    assert [t["isFirst"] for t in data["touches"]] == [True, False]


def test_another_organizations_lead_has_no_touch_log_here(caller):
    other = make_caller()
    lead = _staff_create(other)
    response = call_api("GET", attribution_path(caller.org_id, lead["id"]), sub=caller.sub)
    assert (response.status, response.error_code) == (404, "LEAD_NOT_FOUND")


# -- conversation.inbound_received -------------------------------------------------------------------------


def inbound(org_id, lead_id, *, channel="email", event_id=None):
    """The outbox envelope the conversations service emits, as task_lifecycle receives it."""
    return {
        "eventId": str(event_id or uuid7()),
        "type": "conversation.inbound_received",
        "organizationId": str(org_id),
        "aggregateId": str(uuid7()),
        "occurredAt": datetime(2026, 4, 2, 10, 30, tzinfo=UTC).isoformat(),
        "payload": {
            "organizationId": str(org_id),
            "conversationId": str(uuid7()),
            "leadId": str(lead_id) if lead_id else None,
            "messageId": str(uuid7()),
            "channel": channel,
        },
    }


def test_an_inbound_email_is_an_email_reply_touch_at_the_events_time(caller, task_lifecycle):
    lead = _staff_create(caller)
    event = inbound(caller.org_id, lead["id"])
    assert deliver(task_lifecycle, event) == {"batchItemFailures": []}
    _, touch = touches_of(lead["id"])
    assert (touch["kind"], touch["channel"], touch["is_first"]) == ("email_reply", "email", False)
    assert touch["occurred_at"] == datetime(2026, 4, 2, 10, 30, tzinfo=UTC)
    assert touch["detail"] == {
        "conversationId": event["payload"]["conversationId"],
        "messageId": event["payload"]["messageId"],
        "eventId": event["eventId"],
    }


def test_a_whatsapp_message_is_a_message_touch(caller, task_lifecycle):
    lead = _staff_create(caller)
    deliver(task_lifecycle, inbound(caller.org_id, lead["id"], channel="whatsapp"))
    assert [(t["kind"], t["channel"]) for t in touches_of(lead["id"])][1:] == [("message", "whatsapp")]


def test_a_redelivered_inbound_event_appends_one_touch(caller, task_lifecycle):
    lead = _staff_create(caller)
    event = inbound(caller.org_id, lead["id"])
    for _ in range(3):
        assert deliver(task_lifecycle, event) == {"batchItemFailures": []}
    assert len(touches_of(lead["id"])) == 2


def test_a_message_on_a_thread_without_a_lead_appends_nothing(caller, task_lifecycle):
    lead = _staff_create(caller)
    assert deliver(task_lifecycle, inbound(caller.org_id, None)) == {"batchItemFailures": []}
    assert len(touches_of(lead["id"])) == 1


def test_an_event_naming_another_organizations_lead_appends_nothing(caller, task_lifecycle):
    other_lead = _staff_create(make_caller())
    assert deliver(task_lifecycle, inbound(caller.org_id, other_lead["id"])) == {"batchItemFailures": []}
    assert len(touches_of(other_lead["id"])) == 1


def test_a_malformed_inbound_event_is_acknowledged_and_dropped(caller, task_lifecycle):
    event = inbound(caller.org_id, uuid.uuid4())
    del event["payload"]
    assert deliver(task_lifecycle, event) == {"batchItemFailures": []}


# -- correcting Direct / Unknown -----------------------------------------------------------------------------


def correct(caller, lead_id, body, *, org_id=None):
    return call_api("PUT", attribution_path(org_id or caller.org_id, lead_id), sub=caller.sub, body=body)


def test_staff_correct_an_unknown_source_with_a_reason_kept_on_the_timeline(caller):
    lead = _staff_create(caller)
    campaign = make_campaign(caller.org_id, name="Radio spot")
    response = correct(
        caller, lead["id"], {"channel": "radio", "campaignId": str(campaign), "reason": "Caller said radio ad"}
    )
    assert response.status == 200, response.body
    assert (response.data["firstTouch"]["channel"], response.data["firstTouch"]["campaignId"]) == (
        "radio",
        str(campaign),
    )
    (entry,) = timeline_entries(lead["id"], "attribution_corrected")
    assert entry["payload"] == {
        "from": {"channel": "direct_unknown", "campaignId": None},
        "to": {"channel": "radio", "campaignId": str(campaign)},
        "note": "Caller said radio ad",
    }
    assert entry["actor_user_id"] == caller.user.id
    (row,) = lead_rows(caller.org_id)
    assert row["campaign_id"] == campaign  # the lead's campaign hook follows, so every report agrees


def test_a_correction_keeps_the_utm_the_lead_arrived_with(caller):
    lead = _captured_lead(caller, utm=SPRING)
    assert correct(caller, lead["id"], {"channel": "facebook", "reason": "Shared on Facebook"}).status == 200
    (first,) = touches_of(lead["id"])
    assert (first["channel"], first["utm_source"], first["utm_campaign"]) == ("facebook", "Google", "spring")


def test_a_correction_without_a_reason_is_refused(caller):
    lead = _staff_create(caller)
    response = correct(caller, lead["id"], {"channel": "radio"})
    assert (response.status, response.error_code) == (400, "VALIDATION_FAILED")
    assert touches_of(lead["id"])[0]["channel"] == "direct_unknown"


def test_a_correction_to_an_archived_or_foreign_campaign_is_refused(caller):
    lead = _staff_create(caller)
    for campaign in (make_campaign(caller.org_id, archived=True), make_campaign(make_caller().org_id)):
        response = correct(caller, lead["id"], {"channel": "radio", "campaignId": str(campaign), "reason": "x"})
        assert (response.status, response.error_code) == (400, "CAMPAIGN_NOT_FOUND")
    assert timeline_entries(lead["id"], "attribution_corrected") == []


def test_a_member_may_not_correct_attribution(caller):
    lead = _staff_create(caller)
    member = make_caller(role="member", organization=caller.organization)
    assert correct(member, lead["id"], {"channel": "radio", "reason": "x"}).status == 403


def test_another_organizations_lead_cannot_be_corrected(caller):
    other_lead = _staff_create(make_caller())
    response = correct(caller, other_lead["id"], {"channel": "radio", "reason": "x"})
    assert (response.status, response.error_code) == (404, "LEAD_NOT_FOUND")
    assert touches_of(other_lead["id"])[0]["channel"] == "direct_unknown"


# -- merging two leads ---------------------------------------------------------------------------------------


def test_a_merge_keeps_the_survivors_acquisition_and_moves_the_other_first_touch_as_a_later_touch(caller):
    from tests.support.qualification_helpers import merge

    duplicate = _captured_lead(caller, name="Dana C", email="dana.c@example.com", utm=SPRING)
    survivor = _staff_create(caller, name="Dana Cohen", email="dana@example.com")
    survivors_first = touches_of(survivor["id"])[0]
    response = merge(caller, survivor["id"], duplicate["id"])
    assert response.status == 200, response.body
    first, moved = touches_of(survivor["id"])
    assert (first["id"], first["is_first"]) == (survivors_first["id"], True)
    assert (moved["is_first"], moved["utm_source"], moved["channel"]) == (False, "Google", "google")


def test_undoing_a_merge_gives_the_restored_lead_its_first_touch_back(caller):
    from tests.support.qualification_helpers import merge, undo

    duplicate = _captured_lead(caller, name="Dana C", email="dana.c@example.com", utm=SPRING)
    survivor = _staff_create(caller, name="Dana Cohen", email="dana@example.com")
    merge_id = merge(caller, survivor["id"], duplicate["id"]).data["mergeId"]
    assert undo(caller, merge_id).status == 200
    (restored,) = touches_of(duplicate["id"])
    assert (restored["is_first"], restored["utm_source"]) == (True, "Google")
    assert [t["is_first"] for t in touches_of(survivor["id"])] == [True]
