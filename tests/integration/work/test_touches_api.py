"""Logging a touch (spec "Logging a touch", call outcomes as DESIGN.md maps them, first human response)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.support.factories import make_caller
from tests.support.follow_ups_helpers import consents_of, lead_tasks, put_follow_up, touch
from tests.support.lead_moves_helpers import (
    activities,
    create_lead,
    lead_row,
    make_converted,
    outbox_events,
    set_lead_columns,
    status_events,
)
from tests.support.lead_moves_helpers import default_pipeline as pipeline_of_org


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Moves publish lead.status_changed after commit; the bus exists."""


@pytest.fixture
def owner():
    return make_caller(role="owner")


def _at(days: int) -> str:
    return (datetime.now(UTC).replace(microsecond=0) + timedelta(days=days)).isoformat()


def _move(lead_id, category: str, owner) -> None:
    stage = pipeline_of_org(owner.org_id).stage(category)
    set_lead_columns(lead_id, stage_id=stage, status=category)


def test_a_touch_stamps_the_attempt_and_logs_call_logged(owner):
    lead = create_lead(owner)
    response = touch(owner, lead["id"], {"channel": "call", "note": "left a voicemail"})
    assert response.status == 200, response.body
    assert response.data["applied"] is False
    assert response.data["lead"]["lastContactAttemptAt"] is not None
    assert response.data["lead"]["lastContactedAt"] is None
    [logged] = activities(lead["id"], "call_logged")
    assert logged["payload"]["channel"] == "call" and logged["payload"]["note"] == "left a voicemail"
    assert logged["actor_user_id"] == owner.user.id


def test_contact_attempted_moves_a_new_lead_to_contacted_with_the_move_machinery(owner):
    lead = create_lead(owner)
    response = touch(owner, lead["id"], {"channel": "call", "outcome": "contact_attempted"})
    assert (response.data["applied"], response.data["lead"]["status"]) == (True, "contacted")
    assert [e["to_status"] for e in status_events(lead["id"])][-1] == "contacted"
    assert len(outbox_events(lead["id"])) == 1
    assert activities(lead["id"], "stage_moved")


@pytest.mark.parametrize(
    ("outcome", "status"),
    [
        ("callback_requested", "callback"),
        ("appointment_scheduled", "trial_booked"),
        ("appointment_no_show", "no_show"),
        ("appointment_cancel", "callback"),
    ],
)
def test_open_outcomes_move_the_lead(owner, outcome, status):
    lead = create_lead(owner)
    _move(lead["id"], "contacted", owner)
    assert touch(owner, lead["id"], {"channel": "call", "outcome": outcome}).data["lead"]["status"] == status


@pytest.mark.parametrize("outcome", ["refused", "wrong_number", "bad_number", "duplicate", "dnc"])
def test_resolved_outcomes_lose_the_lead_with_the_outcome_as_reason(owner, outcome):
    lead = create_lead(owner)
    data = touch(owner, lead["id"], {"channel": "call", "outcome": outcome}).data
    assert (data["lead"]["status"], data["lead"]["lostReason"]) == ("lost", outcome)


def test_sale_from_a_booked_trial_makes_a_customer(owner):
    lead = create_lead(owner)
    _move(lead["id"], "trial_booked", owner)
    assert touch(owner, lead["id"], {"channel": "meeting", "outcome": "sale"}).data["lead"]["status"] == "customer"


def test_no_sale_from_a_booked_trial_loses_the_lead(owner):
    lead = create_lead(owner)
    _move(lead["id"], "trial_booked", owner)
    data = touch(owner, lead["id"], {"channel": "meeting", "outcome": "no_sale"}).data
    assert (data["lead"]["status"], data["lead"]["lostReason"]) == ("lost", "no_sale")


@pytest.mark.parametrize("outcome", ["sale", "no_sale"])
def test_sale_and_no_sale_without_a_booked_trial_are_refused_and_nothing_is_logged(owner, outcome):
    lead = create_lead(owner)
    response = touch(owner, lead["id"], {"channel": "call", "outcome": outcome})
    assert (response.status, response.error_code) == (400, "OUTCOME_REQUIRES_TRIAL_BOOKED")
    assert activities(lead["id"], "call_logged") == []
    assert lead_row(lead["id"])["status"] == "new"


def test_unresponsive_from_new_is_refused(owner):
    lead = create_lead(owner)
    response = touch(owner, lead["id"], {"channel": "call", "outcome": "unresponsive"})
    assert (response.status, response.error_code) == (400, "OUTCOME_NOT_FROM_NEW")


def test_unresponsive_after_contact_loses_the_lead(owner):
    lead = create_lead(owner)
    _move(lead["id"], "contacted", owner)
    data = touch(owner, lead["id"], {"channel": "call", "outcome": "unresponsive"}).data
    assert (data["lead"]["status"], data["lead"]["lostReason"]) == ("lost", "unresponsive")


@pytest.mark.parametrize("closed", ["lost", "frozen", "converted", "customer"])
def test_a_closed_or_won_lead_ignores_outcomes_but_the_touch_is_logged(owner, closed):
    lead = create_lead(owner)
    if closed == "converted":
        make_converted(lead["id"], pipeline_of_org(owner.org_id).stage("converted"))
    else:
        _move(lead["id"], closed, owner)
    response = touch(owner, lead["id"], {"channel": "call", "outcome": "sale"})
    assert response.status == 200
    assert (response.data["applied"], response.data["lead"]["status"]) == (False, closed)
    assert activities(lead["id"], "call_logged")[0]["payload"]["applied"] is False


def test_no_answer_counts_up_and_a_real_contact_resets_the_count(owner):
    lead = create_lead(owner)
    for expected in (1, 2, 3):
        data = touch(owner, lead["id"], {"channel": "call", "outcome": "no_answer"}).data
        assert data["lead"]["consecutiveNoAnswerCount"] == expected
    data = touch(owner, lead["id"], {"channel": "call", "outcome": "contacted"}).data
    assert data["lead"]["consecutiveNoAnswerCount"] == 0
    assert data["lead"]["lastContactedAt"] is not None


def test_dnc_revokes_consent_on_every_channel(owner):
    lead = create_lead(owner)
    touch(owner, lead["id"], {"channel": "call", "outcome": "dnc"})
    assert consents_of(lead["id"]) == {c: "revoked" for c in ("email", "sms", "whatsapp", "call")}


def test_consent_is_asked_per_channel():
    from leadcrm.conversations.consent import is_allowed, revoke_all
    from leadcrm.platform.db.engine import get_engine

    owner = make_caller(role="owner")
    lead = create_lead(owner)
    with get_engine().begin() as conn:
        assert is_allowed(conn, owner.org_id, lead["id"], "email")
        revoke_all(conn, owner.org_id, lead["id"], source="test")
        revoke_all(conn, owner.org_id, lead["id"], source="test")  # idempotent
        assert not is_allowed(conn, owner.org_id, lead["id"], "whatsapp")


def test_the_first_human_response_is_the_first_staff_touch_and_is_kept(owner):
    lead = create_lead(owner)
    assert lead_row(lead["id"])["first_human_response_at"] is None  # creating is no response
    first = touch(owner, lead["id"], {"channel": "whatsapp"}).data["lead"]["firstHumanResponseAt"]
    later = touch(owner, lead["id"], {"channel": "call", "outcome": "contacted"}).data["lead"]
    assert later["firstHumanResponseAt"] == first


def test_the_first_real_contact_retires_the_intake_call(owner):
    lead = create_lead(owner)
    [task] = lead_tasks(lead["id"])
    touch(owner, lead["id"], {"channel": "call", "outcome": "callback_requested"})
    assert lead_row(lead["id"])["next_action_at"] is None
    assert [t["status"] for t in lead_tasks(lead["id"])] == ["completed"]


def test_a_touch_records_the_move_then_the_follow_up_then_the_call(owner):
    lead = create_lead(owner)
    [task] = lead_tasks(lead["id"])
    touch(owner, lead["id"], {"channel": "call", "outcome": "callback_requested"})
    entries = [e for e in activities(lead["id"]) if e["type"] != "lead_created"]
    assert [e["type"] for e in entries[-3:]] == ["stage_moved", "follow_up_cleared", "call_logged"]
    assert entries[-2]["payload"] == {"via": "touch", "taskId": str(task["id"])}
    assert lead_row(lead["id"])["status"] == "callback"
    assert len(outbox_events(lead["id"])) == 1


def test_a_replacing_touch_records_the_new_follow_up_with_its_new_task(owner):
    lead = create_lead(owner)
    [old] = lead_tasks(lead["id"])
    at = _at(3)
    body = {"channel": "call", "outcome": "contacted", "followUp": {"action": "replace", "at": at, "type": "call"}}
    assert touch(owner, lead["id"], body).status == 200
    [new] = lead_tasks(lead["id"], open_only=True)
    assert new["id"] != old["id"]
    entries = activities(lead["id"])
    assert [e["type"] for e in entries[-3:]] == ["stage_moved", "follow_up_set", "call_logged"]
    assert entries[-2]["payload"]["taskId"] == str(new["id"])
    assert entries[-2]["payload"]["via"] == "touch"


def test_an_unanswered_call_keeps_the_intake_call(owner):
    lead = create_lead(owner)
    touch(owner, lead["id"], {"channel": "call", "outcome": "no_answer"})
    row = lead_row(lead["id"])
    assert row["next_action_at"] == row["created_at"]
    assert [t["status"] for t in lead_tasks(lead["id"])] == ["pending"]


def test_a_touch_can_replace_the_follow_up_completing_the_old_task(owner):
    lead = create_lead(owner)
    at = _at(3)
    body = {"channel": "call", "outcome": "no_answer", "followUp": {"action": "replace", "at": at, "type": "call"}}
    assert touch(owner, lead["id"], body).status == 200
    statuses = sorted(t["status"] for t in lead_tasks(lead["id"]))
    assert statuses == ["completed", "pending"]
    assert lead_row(lead["id"])["next_action_at"] == datetime.fromisoformat(at)


def test_a_touch_can_clear_the_follow_up(owner):
    lead = create_lead(owner)
    put_follow_up(owner, lead["id"], {"at": _at(2), "type": "email", "note": "quote"})
    touch(owner, lead["id"], {"channel": "email", "followUp": {"action": "clear"}})
    assert lead_row(lead["id"])["next_action_at"] is None
    assert [t["status"] for t in lead_tasks(lead["id"])] == ["completed"]


def test_keep_leaves_a_follow_up_a_person_set(owner):
    lead = create_lead(owner)
    put_follow_up(owner, lead["id"], {"at": _at(2), "type": "email", "note": "quote"})
    touch(owner, lead["id"], {"channel": "call", "outcome": "contacted", "followUp": {"action": "keep"}})
    assert lead_row(lead["id"])["next_action_note"] == "quote"
    assert [t["status"] for t in lead_tasks(lead["id"])] == ["pending"]


def test_a_booked_appointment_stores_the_trial_date(owner):
    lead = create_lead(owner)
    trial = _at(5)
    body = {"channel": "call", "outcome": "appointment_scheduled", "trialDate": trial}
    assert touch(owner, lead["id"], body).data["lead"]["trialDate"] is not None
    assert lead_row(lead["id"])["trial_date"] == datetime.fromisoformat(trial)


def test_another_organizations_lead_is_not_found(owner):
    other = make_caller(role="owner")
    lead = create_lead(other)
    response = touch(owner, lead["id"], {"channel": "call", "outcome": "dnc"})
    assert (response.status, response.error_code) == (404, "LEAD_NOT_FOUND")
    assert consents_of(lead["id"]) == {}


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"channel": "pigeon"},
        {"channel": "call", "outcome": "maybe"},
        {"channel": "call", "followUp": {"action": "replace"}},
        {"channel": "call", "followUp": {"action": "clear", "at": "2026-01-01T00:00:00Z"}},
        {"channel": "call", "trialDate": "2026-01-01T00:00:00Z"},
        {"channel": "call", "note": "x" * 5001},
        {"channel": "call", "unknown": True},
    ],
)
def test_malformed_touches_are_refused(owner, body):
    lead = create_lead(owner)
    assert touch(owner, lead["id"], body).status == 400


def test_a_member_cannot_log_a_touch(owner):
    lead = create_lead(owner)
    member = make_caller(role="member", organization=owner.organization)
    assert touch(member, lead["id"], {"channel": "call"}).status == 403
