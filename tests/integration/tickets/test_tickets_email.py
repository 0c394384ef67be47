"""The email seam (tickets.email): mail to the organization's support address opens a ticket; a
reply finds its ticket by In-Reply-To or by the [#number] its requester kept in the subject, and resumes the
clock, confirms, reopens with the reply as the reason, or opens a follow-up ticket after a close."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from leadcrm.platform.db.engine import get_engine
from leadcrm.tickets import creation, staff_actions
from leadcrm.tickets import email as tickets_email
from leadcrm.tickets.config import settings_view
from leadcrm.tickets.email import EmailOutcome, open_or_update_ticket_from_email
from tests.support.factories import make_caller
from tests.support.lead_moves_helpers import create_lead
from tests.support.tickets_helpers import (
    actor_of,
    configure,
    in_uow,
    set_ticket_columns,
    set_timezone,
    ticket_history,
    ticket_mail_rows,
    ticket_row,
)

LONDON = ZoneInfo("Europe/London")
MONDAY = datetime(2026, 3, 2, 9, 0, tzinfo=LONDON)
SES_DOMAIN = "eu-west-1.amazonses.com"


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Writes publish after commit; the bus exists."""


@pytest.fixture
def owner():
    owner = make_caller(role="owner")
    set_timezone(owner.org_id, "Europe/London")
    configure(owner.org_id, business_hours={d: [["09:00", "17:00"]] for d in ("mon", "tue", "wed", "thu", "fri")})
    return owner


def _mail(
    owner,
    *,
    sender="dana@example.com",
    subject="Cannot book",
    text="The app says expired.",
    message_id="<m1@example.com>",
    at=MONDAY,
    in_reply_to=None,
):
    return in_uow(open_or_update_ticket_from_email, owner.org_id, sender, subject, text, message_id, at, in_reply_to)


def _to_in_progress(owner, ticket_id, at):
    actor = actor_of(owner)
    in_uow(staff_actions.assign, actor, ticket_id, assignee_user_id=owner.user.id, queue_id=None, now=at)
    in_uow(staff_actions.respond, actor, ticket_id, now=at)


def _resolved_with_mail_sent(owner, ticket_id, at, provider_id="0102018c-aaaa-000000"):
    _to_in_progress(owner, ticket_id, at)
    in_uow(staff_actions.resolve, actor_of(owner), ticket_id, resolution="Renewed", now=at)
    [mail] = ticket_mail_rows(ticket_id)
    from sqlalchemy import update

    from leadcrm.tickets.tables import ticket_mails

    with get_engine().begin() as conn:
        conn.execute(
            update(ticket_mails)
            .where(ticket_mails.c.id == mail["id"])
            .values(status="sent", provider_message_id=provider_id)
        )
    return f"<{provider_id}@{SES_DOMAIN}>"


def test_the_support_address_names_its_organization_and_no_other_address_does(owner):
    with get_engine().begin() as conn:
        address = settings_view(conn, owner.org_id)["support_address"]
        assert tickets_email.organization_for_support_address(conn, address) == owner.org_id
        assert tickets_email.organization_for_support_address(conn, f"Help <{address.upper()}>") == owner.org_id
        assert tickets_email.organization_for_support_address(conn, "support+abcdefghijkl@mail.leadcrm.local") is None
        assert tickets_email.organization_for_support_address(conn, "reply+t123@mail.leadcrm.local") is None


def test_a_new_message_opens_an_email_ticket_linked_to_the_lead_with_that_address(owner):
    lead = create_lead(owner, "Dana Cohen", email="Dana@Example.com")
    result = _mail(owner)
    assert result.outcome is EmailOutcome.CREATED
    ticket = ticket_row(result.ticket_id)
    assert (ticket["channel"], ticket["requester_type"], str(ticket["lead_id"])) == ("email", "lead", lead["id"])
    assert (ticket["subject"], ticket["description"], ticket["status"]) == (
        "Cannot book",
        "The app says expired.",
        "unassigned",
    )
    assert ticket["created_at"] == MONDAY


def test_a_message_from_a_member_is_the_members_ticket(owner):
    member = make_caller(role="member", organization=owner.organization)
    ticket = ticket_row(_mail(owner, sender=member.user.email.upper()).ticket_id)
    assert (ticket["requester_type"], ticket["membership_id"]) == ("member", member.membership.id)


def test_a_message_from_a_stranger_is_an_unknown_requesters_ticket(owner):
    ticket = ticket_row(_mail(owner, sender="who@nowhere.test", subject="").ticket_id)
    assert (ticket["requester_type"], ticket["requester_email"], ticket["subject"]) == (
        "unknown",
        "who@nowhere.test",
        "(no subject)",
    )


def test_the_same_message_delivered_twice_changes_nothing(owner):
    first = _mail(owner)
    again = _mail(owner)
    assert (again.outcome, again.ticket_id) == (EmailOutcome.DUPLICATE, first.ticket_id)
    assert ticket_row(first.ticket_id)["number"] == 1
    assert len(ticket_history(first.ticket_id, "created")) == 1


def test_a_reply_while_awaiting_the_customer_resumes_the_clock(owner):
    ticket_id = _mail(owner).ticket_id
    _to_in_progress(owner, ticket_id, MONDAY + timedelta(hours=1))
    in_uow(staff_actions.request_info, actor_of(owner), ticket_id, now=MONDAY + timedelta(hours=2))
    assert ticket_row(ticket_id)["sla_running_since"] is None
    reply = _mail(
        owner,
        text="Tuesday yoga",
        message_id="<m2@example.com>",
        at=MONDAY + timedelta(days=2),
        in_reply_to="<m1@example.com>",
    )
    assert (reply.outcome, reply.ticket_id) == (EmailOutcome.RESUMED, ticket_id)
    row = ticket_row(ticket_id)
    assert (row["status"], row["sla_running_since"]) == ("in_progress", MONDAY + timedelta(days=2))


def test_a_reply_on_an_open_ticket_is_recorded_and_moves_nothing(owner):
    ticket_id = _mail(owner).ticket_id
    result = _mail(owner, text="Any news?", message_id="<m2@example.com>", in_reply_to="<m1@example.com>")
    assert (result.outcome, ticket_row(ticket_id)["status"]) == (EmailOutcome.RECORDED, "unassigned")
    assert len(ticket_history(ticket_id, "customer_message")) == 1


def test_a_confirming_reply_to_the_resolution_mail_closes_the_ticket_and_sends_the_survey(owner):
    ticket_id = _mail(owner).ticket_id
    message_id = _resolved_with_mail_sent(owner, ticket_id, MONDAY + timedelta(hours=1))
    result = _mail(
        owner,
        subject="Re: [#1] Resolved: Cannot book",
        text="Yes, works now. Thanks!",
        message_id="<m3@example.com>",
        in_reply_to=message_id,
        at=MONDAY + timedelta(hours=3),
    )
    assert result.outcome is EmailOutcome.CONFIRMED
    row = ticket_row(ticket_id)
    assert (row["status"], row["close_reason"]) == ("closed", "confirmed")
    assert [m["kind"] for m in ticket_mail_rows(ticket_id)] == ["resolution_confirmation", "satisfaction_survey"]


def test_a_reply_saying_it_persists_reopens_the_ticket_with_the_reply_as_the_reason(owner):
    ticket_id = _mail(owner).ticket_id
    message_id = _resolved_with_mail_sent(owner, ticket_id, MONDAY + timedelta(hours=1))
    reopened_at = MONDAY + timedelta(days=1)
    result = _mail(
        owner,
        subject="Re: [#1] Resolved",
        text="No, it still says expired.\n> quoted",
        message_id="<m3@example.com>",
        in_reply_to=message_id,
        at=reopened_at,
    )
    assert result.outcome is EmailOutcome.REOPENED
    row = ticket_row(ticket_id)
    assert (row["status"], row["reopen_reason"], row["sla_cycle_started_at"]) == (
        "reopened",
        "No, it still says expired.",
        reopened_at,
    )


def test_the_subject_reference_finds_the_ticket_only_from_its_requester(owner):
    ticket_id = _mail(owner).ticket_id
    _resolved_with_mail_sent(owner, ticket_id, MONDAY + timedelta(hours=1))
    stranger = _mail(
        owner, sender="mallory@evil.test", subject="Re: [#1] Resolved", text="not fixed", message_id="<m4@example.com>"
    )
    assert stranger.outcome is EmailOutcome.CREATED and stranger.ticket_id != ticket_id
    assert ticket_row(ticket_id)["status"] == "resolved"
    requester = _mail(owner, subject="Re: [#1] Resolved", text="still not fixed", message_id="<m5@example.com>")
    assert (requester.outcome, requester.ticket_id) == (EmailOutcome.REOPENED, ticket_id)


def test_a_reply_to_a_closed_ticket_opens_a_follow_up_that_points_at_it(owner):
    ticket_id = _mail(owner).ticket_id
    set_ticket_columns(ticket_id, status="closed")
    result = _mail(owner, text="It broke again", message_id="<m6@example.com>", in_reply_to="<m1@example.com>")
    assert result.outcome is EmailOutcome.FOLLOW_UP
    follow_up = ticket_row(result.ticket_id)
    assert (follow_up["previous_ticket_id"], follow_up["number"], follow_up["status"]) == (ticket_id, 2, "unassigned")


def test_a_conversation_id_is_kept_on_the_ticket_without_a_foreign_key_yet(owner):
    thread = uuid.uuid4()
    result = in_uow(
        open_or_update_ticket_from_email,
        owner.org_id,
        "dana@example.com",
        "Hi",
        "Help",
        "<c1@example.com>",
        MONDAY,
        None,
        conversation_id=thread,
    )
    assert ticket_row(result.ticket_id)["conversation_id"] == thread


def test_a_malformed_in_reply_to_never_matches_a_mail_that_was_not_sent(owner):
    lead = create_lead(owner, "Dana Cohen", email="dana@example.com")
    ticket = in_uow(
        creation.create_ticket,
        owner.org_id,
        creation.NewTicket(subject="x", description="", channel=creation.Channel.PHONE, lead_id=uuid.UUID(lead["id"])),
        now=MONDAY,
    )
    _to_in_progress(owner, ticket["id"], MONDAY)
    in_uow(staff_actions.resolve, actor_of(owner), ticket["id"], resolution="x", now=MONDAY)  # mail pending, no SES id
    result = _mail(
        owner, sender="other@example.com", subject="hello", in_reply_to="not-a-message-id", message_id="<m9@x>"
    )
    assert result.outcome is EmailOutcome.CREATED and result.ticket_id != ticket["id"]
    assert ticket_row(ticket["id"])["status"] == "resolved"


def test_nul_characters_in_a_message_are_dropped_not_fatal(owner):
    result = _mail(owner, subject="Hi\x00there", text="bad\x00byte", message_id="<nul@example.com>")
    row = ticket_row(result.ticket_id)
    assert (row["subject"], row["description"]) == ("Hithere", "badbyte")
