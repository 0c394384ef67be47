"""The ticket sweep (job `ticket_sweep`): escalates assigned tickets approaching breach, records breaches once
with the accountable agent of the moment, auto-closes resolved tickets nobody answered, and sends ticket mails
through SES; the survey they carry is answered once through its public link."""

from __future__ import annotations

from datetime import datetime, timedelta
from urllib.parse import urlparse
from zoneinfo import ZoneInfo

import boto3
import pytest

from leadcrm.tickets import requester_actions, staff_actions
from leadcrm.tickets.sweep import run_ticket_sweep
from tests.support.api import call_api
from tests.support.factories import make_caller
from tests.support.lead_moves_helpers import create_lead
from tests.support.tickets_helpers import (
    WEEKDAYS_9_TO_5,
    actor_of,
    configure,
    in_uow,
    new_ticket,
    set_timezone,
    survey_row,
    ticket_history,
    ticket_mail_rows,
    ticket_row,
)

LONDON = ZoneInfo("Europe/London")
CREATED = datetime(2026, 3, 2, 9, 0, tzinfo=LONDON)  # Monday


def at(hours: float) -> datetime:
    return CREATED + timedelta(hours=hours)


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Sweeps publish after commit; the bus exists."""


@pytest.fixture
def verified_sender() -> None:
    boto3.client("sesv2", region_name="eu-west-1").create_email_identity(EmailIdentity="mail.leadcrm.local")


@pytest.fixture
def owner():
    owner = make_caller(role="owner")
    set_timezone(owner.org_id, "Europe/London")
    # First response 2h (escalation at 80%: 1h36), resolution 8h; auto-close after 48h.
    configure(owner.org_id, business_hours=WEEKDAYS_9_TO_5, sla_policies=[("normal", 120, 480)], auto_close_hours=48)
    return owner


@pytest.fixture
def coach(owner):
    return make_caller(role="coach", organization=owner.organization)


@pytest.fixture
def lead(owner):
    return create_lead(owner, "Dana Cohen", email="dana@example.com")


def _assigned(owner, lead, agent) -> dict:
    ticket = new_ticket(owner.org_id, CREATED, lead_id=lead["id"])
    return in_uow(
        staff_actions.assign, actor_of(owner), ticket["id"], assignee_user_id=agent.user.id, queue_id=None, now=CREATED
    )


def _sweep(when: datetime) -> dict[str, int]:
    """One run at `when`. The sweep is global (every organization), so tests look at their own tickets, never
    at the run's counts, which include other tests' tickets."""
    return run_ticket_sweep(when, send=lambda *a, **k: "unused")


def _transitions(ticket_id, to_status: str) -> list[dict]:
    return [e for e in ticket_history(ticket_id, "status_changed") if e["to_status"] == to_status]


def test_an_assigned_ticket_is_escalated_when_its_first_response_nears_breach_and_only_once(owner, coach, lead):
    ticket = _assigned(owner, lead, coach)
    _sweep(at(1.5))
    assert ticket_row(ticket["id"])["status"] == "assigned"
    _sweep(at(1.6))  # 80% of 2h = 1h36
    assert ticket_row(ticket["id"])["status"] == "escalated"
    _sweep(at(1.7))
    [change] = _transitions(ticket["id"], "escalated")
    assert change["payload"]["trigger"] == "escalate"
    assert change["payload"]["accountableUserId"] == str(coach.user.id)


def test_a_ticket_in_triage_is_not_escalated_but_its_breach_is_recorded(owner, lead):
    ticket = new_ticket(owner.org_id, CREATED, lead_id=lead["id"])
    _sweep(at(2.5))
    assert ticket_row(ticket["id"])["status"] == "unassigned"
    assert ticket_row(ticket["id"])["first_response_breached_at"] == at(2)


def test_a_breach_is_recorded_once_at_the_due_instant(owner, coach, lead):
    ticket = _assigned(owner, lead, coach)
    _sweep(at(1.99))
    assert ticket_row(ticket["id"])["breach_count"] == 0
    _sweep(at(3))
    _sweep(at(4))
    row = ticket_row(ticket["id"])
    assert (row["first_response_breached_at"], row["breach_count"]) == (at(2), 1)
    assert len(ticket_history(ticket["id"], "sla_breached")) == 1


def test_after_a_handover_the_new_agent_inherits_the_breach_and_the_clock_never_stopped(owner, coach, lead):
    night_shift = make_caller(role="coach", organization=owner.organization)
    ticket = _assigned(owner, lead, coach)
    _sweep(at(1.7))  # escalated while the first agent held it
    in_uow(
        staff_actions.assign,
        actor_of(owner),
        ticket["id"],
        assignee_user_id=night_shift.user.id,
        queue_id=None,
        now=at(1.8),
    )
    row = ticket_row(ticket["id"])
    assert (row["status"], row["first_response_due_at"]) == ("escalated", at(2))  # escalation continues
    _sweep(at(2.1))
    [breach] = ticket_history(ticket["id"], "sla_breached")
    assert breach["payload"]["accountableUserId"] == str(night_shift.user.id)


def test_a_running_resolution_clock_past_due_is_a_breach_and_a_paused_one_is_not(owner, coach, lead):
    actor = actor_of(owner)
    running = _assigned(owner, lead, coach)
    in_uow(staff_actions.respond, actor, running["id"], now=at(0.5))
    paused = _assigned(owner, lead, coach)
    in_uow(staff_actions.respond, actor, paused["id"], now=at(0.5))
    in_uow(staff_actions.request_info, actor, paused["id"], now=at(1))
    _sweep(at(8.5))  # Monday 17:30: the running ticket's 8 business hours ended at 17:00
    assert ticket_row(running["id"])["resolution_breached_at"] == at(8)
    assert ticket_row(paused["id"])["resolution_breached_at"] is None


def test_a_resolved_ticket_nobody_answers_is_closed_after_the_window_with_a_survey(owner, coach, lead, verified_sender):
    ticket = _assigned(owner, lead, coach)
    in_uow(staff_actions.respond, actor_of(owner), ticket["id"], now=at(0.5))
    in_uow(staff_actions.resolve, actor_of(owner), ticket["id"], resolution="Renewed", now=at(1))
    _sweep(at(48))
    assert ticket_row(ticket["id"])["status"] == "resolved"
    _sweep(at(49.5))
    row = ticket_row(ticket["id"])
    assert (row["status"], row["close_reason"]) == ("closed", "auto_closed")
    assert [(m["kind"], m["status"]) for m in ticket_mail_rows(ticket["id"])] == [
        ("resolution_confirmation", "sent"),
        ("satisfaction_survey", "sent"),
    ]
    _sweep(at(50))
    assert len(_transitions(ticket["id"], "closed")) == 1
    assert _transitions(ticket["id"], "closed")[0]["payload"] == {"trigger": "auto_close"}


def test_ticket_mails_go_through_ses_with_the_support_address_to_reply_to(owner, coach, lead, verified_sender):
    ticket = _assigned(owner, lead, coach)
    in_uow(staff_actions.respond, actor_of(owner), ticket["id"], now=at(0.5))
    in_uow(staff_actions.resolve, actor_of(owner), ticket["id"], resolution="We renewed it.", now=at(1))
    sent: list[dict] = []

    def send(to, subject, text, *, reply_to):
        sent.append({"to": to, "subject": subject, "text": text, "reply_to": reply_to})
        return "ses-message-1"

    run_ticket_sweep(at(1.1), send=send)
    [mail] = [m for m in sent if m["subject"].startswith("[#1] ") and m["to"] == "dana@example.com"]
    assert (mail["to"], mail["subject"]) == ("dana@example.com", "[#1] Resolved: Cannot book a class")
    assert "We renewed it." in mail["text"] and "2 days" in mail["text"]
    assert mail["reply_to"].startswith("support+") and mail["reply_to"].endswith("@mail.leadcrm.local")
    [row] = ticket_mail_rows(ticket["id"])
    assert (row["status"], row["provider_message_id"]) == ("sent", "ses-message-1")
    run_ticket_sweep(at(1.2), send=send)
    assert len([m for m in sent if m["reply_to"] == mail["reply_to"]]) == 1  # sent once


def test_a_mail_ses_refuses_is_recorded_as_failed_and_not_retried(owner, coach, lead):
    ticket = _assigned(owner, lead, coach)
    in_uow(staff_actions.respond, actor_of(owner), ticket["id"], now=at(0.5))
    in_uow(staff_actions.resolve, actor_of(owner), ticket["id"], resolution="x", now=at(1))
    run_ticket_sweep(at(1.1))  # no verified identity in moto: SES refuses
    [row] = ticket_mail_rows(ticket["id"])
    assert row["status"] == "failed" and "MessageRejected" in row["error"]
    run_ticket_sweep(at(1.2))
    assert [m["status"] for m in ticket_mail_rows(ticket["id"])] == ["failed"]
    assert len(ticket_history(ticket["id"], "mail_failed")) == 1


def test_a_ticket_without_an_address_records_the_mail_as_skipped(owner, coach):
    lead = create_lead(owner, "No Mail", phone="050-1234567")
    ticket = new_ticket(owner.org_id, CREATED, lead_id=lead["id"])
    in_uow(
        staff_actions.assign, actor_of(owner), ticket["id"], assignee_user_id=coach.user.id, queue_id=None, now=CREATED
    )
    in_uow(staff_actions.respond, actor_of(owner), ticket["id"], now=at(0.5))
    in_uow(staff_actions.resolve, actor_of(owner), ticket["id"], resolution="x", now=at(1))
    [row] = ticket_mail_rows(ticket["id"])
    assert (row["status"], row["error"]) == ("skipped", "no address to write to")


def test_the_survey_link_is_answered_once_and_the_answer_stored(owner, coach, lead):
    ticket = _assigned(owner, lead, coach)
    in_uow(staff_actions.respond, actor_of(owner), ticket["id"], now=at(0.5))
    in_uow(staff_actions.resolve, actor_of(owner), ticket["id"], resolution="x", now=at(1))
    in_uow(requester_actions.confirm, owner.org_id, ticket["id"], actor_user_id=None, now=at(2))
    texts: list[str] = []
    run_ticket_sweep(at(2.1), send=lambda to, subject, text, *, reply_to: texts.append(text) or "id")
    [survey_text] = [t for t in texts if owner.organization.name in t and "How satisfied" in t]
    [link] = [line for line in survey_text.splitlines() if "/public/ticket-surveys/" in line]
    path = urlparse(link.strip()).path
    assert survey_row(ticket["id"])["token_digest"] not in link  # only the digest is stored

    shown = call_api("GET", path, sub=None, authorizer=False)
    assert shown.status == 200, shown.body
    assert (shown.data["ticketNumber"], shown.data["answered"]) == (1, False)
    answered = call_api("POST", path, sub=None, authorizer=False, body={"rating": 5, "comment": "Quick!"})
    assert (answered.status, answered.data["answered"], answered.data["rating"]) == (201, True, 5)
    again = call_api("POST", path, sub=None, authorizer=False, body={"rating": 1})
    assert (again.status, again.error_code) == (409, "SURVEY_ALREADY_ANSWERED")
    assert (survey_row(ticket["id"])["rating"], survey_row(ticket["id"])["comment"]) == (5, "Quick!")
    assert [e["payload"] for e in ticket_history(ticket["id"], "survey_answered")] == [{"rating": 5}]


def test_an_unknown_survey_token_is_not_found(owner):
    for bad in ("nope", "x" * 300):
        response = call_api("GET", f"/public/ticket-surveys/{bad}", sub=None, authorizer=False)
        assert (response.status, response.error_code) == (404, "SURVEY_NOT_FOUND")
    response = call_api("POST", "/public/ticket-surveys/nope", sub=None, authorizer=False, body={"rating": 9})
    assert response.status == 400


def test_the_job_runs_from_the_task_lifecycle_function(owner, coach, lead, ctx):
    from task_lifecycle.handler import lambda_handler

    _assigned(owner, lead, coach)
    result = lambda_handler({"job": "ticket_sweep"}, ctx)
    assert result["job"] == "ticket_sweep" and {"escalated", "breached", "autoClosed", "mailsSent"} <= set(result)


def test_the_ses_adapter_names_the_address_replies_go_to():
    from botocore.stub import ANY, Stubber

    from leadcrm.platform.adapters import ses
    from leadcrm.platform.adapters.aws import client

    with Stubber(client("sesv2")) as stub:
        stub.add_response(
            "send_email",
            {"MessageId": "m-1"},
            {
                "FromEmailAddress": ses.mail_from(),
                "Destination": {"ToAddresses": ["dana@example.com"]},
                "ReplyToAddresses": ["support+abcdefghijkl@mail.leadcrm.local"],
                "Content": ANY,
            },
        )
        assert ses.send_email("dana@example.com", "s", "t", reply_to="support+abcdefghijkl@mail.leadcrm.local") == "m-1"
        stub.assert_no_pending_responses()
