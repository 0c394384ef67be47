"""The tickets API: open from a lead or member with the channel recorded, route, and walk §6 through the
routes staff use; invalid transitions are 409; another organization's ids are 404."""

from __future__ import annotations

import uuid

import pytest

from tests.support.factories import make_caller
from tests.support.lead_moves_helpers import activities, create_lead
from tests.support.tickets_helpers import (
    config_call,
    get_ticket,
    open_ticket,
    ticket_action,
    ticket_history,
    ticket_mail_rows,
    ticket_row,
)


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Writes publish after commit; the bus exists."""


@pytest.fixture
def owner():
    return make_caller(role="owner")


@pytest.fixture
def coach(owner):
    return make_caller(role="coach", organization=owner.organization)


@pytest.fixture
def lead(owner):
    return create_lead(owner, "Dana Cohen", email="dana@example.com")


def _open(caller, lead, **body):
    response = open_ticket(caller, {"subject": "Cannot book a class", "leadId": lead["id"], **body})
    assert response.status == 201, response.body
    return response.data


def test_staff_open_a_ticket_for_a_lead_with_the_channel_they_took_it_on(coach, lead):
    ticket = _open(coach, lead, channel="phone", priority="high", description="The app says expired.")
    assert (ticket["number"], ticket["channel"], ticket["priority"]) == (1, "phone", "high")
    assert (ticket["requesterType"], ticket["leadId"], ticket["requesterEmail"]) == (
        "lead",
        lead["id"],
        "dana@example.com",
    )
    assert ticket["sla"]["timer"] == "running"


def test_the_leads_timeline_shows_the_ticket(coach, lead):
    ticket = _open(coach, lead, channel="chat")
    [entry] = activities(lead["id"], "ticket_opened")
    assert entry["payload"] == {"ticketId": ticket["id"], "number": 1, "channel": "chat"}
    assert entry["actor_user_id"] == coach.user.id


def test_tickets_are_numbered_per_organization(coach, lead):
    assert [_open(coach, lead)["number"] for _ in range(3)] == [1, 2, 3]
    other = make_caller(role="owner")
    assert _open(other, create_lead(other))["number"] == 1


def test_a_ticket_from_a_member_links_their_membership(owner, coach):
    member = make_caller(role="member", organization=owner.organization)
    ticket = open_ticket(coach, {"subject": "Locker", "membershipId": str(member.membership.id), "channel": "chat"})
    assert ticket.status == 201, ticket.body
    assert (ticket.data["requesterType"], ticket.data["membershipId"]) == ("member", str(member.membership.id))
    assert ticket.data["requesterEmail"] == member.user.email


def test_staff_must_name_who_asks(coach):
    response = open_ticket(coach, {"subject": "?"})
    assert (response.status, response.error_code) == (400, "TICKET_REQUESTER_REQUIRED")


def test_another_organizations_lead_is_not_found(coach):
    stranger = make_caller(role="owner")
    response = open_ticket(coach, {"subject": "x", "leadId": create_lead(stranger)["id"]})
    assert (response.status, response.error_code) == (404, "LEAD_NOT_FOUND")


def test_bad_input_is_a_400_not_a_500(coach, lead):
    assert open_ticket(coach, {"subject": "", "leadId": lead["id"]}).status == 400
    assert open_ticket(coach, {"subject": "x", "leadId": lead["id"], "channel": "fax"}).status == 400
    assert open_ticket(coach, {"subject": "x", "leadId": "not-a-uuid"}).status == 400


def test_a_member_opens_a_ticket_for_themselves_and_sees_only_their_own(owner, coach, lead):
    member = make_caller(role="member", organization=owner.organization)
    mine = open_ticket(member, {"subject": "My locker is stuck", "channel": "phone"})
    assert mine.status == 201, mine.body
    assert (mine.data["channel"], mine.data["membershipId"]) == ("portal", str(member.membership.id))
    staff_ticket = _open(coach, lead)
    assert get_ticket(member, staff_ticket["id"]).status == 404
    assert get_ticket(member, mine.data["id"]).status == 200
    listed = config_call(member, "GET", "tickets")
    assert [t["id"] for t in listed.data] == [mine.data["id"]]
    assert ticket_action(member, mine.data["id"], "resolve", {"resolution": "x"}).status == 403


def test_no_rule_leaves_the_ticket_in_the_triage_queue(coach, lead):
    ticket = _open(coach, lead)
    assert (ticket["status"], ticket["queueId"], ticket["assigneeUserId"]) == ("unassigned", None, None)
    [created, routed] = ticket_history(ticket["id"])
    assert (created["type"], routed["from_status"], routed["to_status"]) == ("created", "new", "unassigned")
    assert routed["payload"] == {"trigger": "route_unmatched"}


def test_the_first_matching_rule_in_order_assigns_the_queue_and_agent(owner, coach, lead):
    billing = config_call(owner, "POST", "ticket-queues", {"name": "Billing"}).data
    general = config_call(owner, "POST", "ticket-queues", {"name": "General"}).data
    catch_all = config_call(owner, "POST", "ticket-routing-rules", {"name": "All", "queueId": general["id"]}).data
    refunds = config_call(
        owner,
        "POST",
        "ticket-routing-rules",
        {
            "name": "Refunds",
            "keywords": ["refund"],
            "queueId": billing["id"],
            "assigneeUserId": str(coach.user.id),
            "position": 0,
        },
    ).data
    assert [r["id"] for r in config_call(owner, "GET", "ticket-routing-rules").data] == [refunds["id"], catch_all["id"]]

    refund = _open(coach, lead, subject="Refund please")
    assert (refund["status"], refund["queueId"], refund["assigneeUserId"]) == (
        "assigned",
        billing["id"],
        str(coach.user.id),
    )
    [assigned] = ticket_history(refund["id"], "assigned")
    assert assigned["payload"]["routingRuleId"] == refunds["id"]
    other = _open(coach, lead, subject="Locker")
    assert (other["status"], other["queueId"], other["routingRuleId"]) == ("assigned", general["id"], catch_all["id"])


def test_reordering_rules_changes_which_matches_first(owner, coach, lead):
    a = config_call(owner, "POST", "ticket-queues", {"name": "A"}).data
    b = config_call(owner, "POST", "ticket-queues", {"name": "B"}).data
    first = config_call(owner, "POST", "ticket-routing-rules", {"name": "A", "queueId": a["id"]}).data
    second = config_call(owner, "POST", "ticket-routing-rules", {"name": "B", "queueId": b["id"]}).data
    ordered = config_call(owner, "PUT", "ticket-routing-rules/order", {"ruleIds": [second["id"], first["id"]]})
    assert [r["position"] for r in ordered.data] == [0, 1]
    assert _open(coach, lead)["queueId"] == b["id"]
    partial = config_call(owner, "PUT", "ticket-routing-rules/order", {"ruleIds": [second["id"]]})
    assert (partial.status, partial.error_code) == (400, "TICKET_RULE_ORDER_MISMATCH")


def test_only_owners_and_admins_configure_routing(coach):
    response = config_call(coach, "POST", "ticket-queues", {"name": "Mine"})
    assert (response.status, response.error_code) == (403, "OWNER_OR_ADMIN_ONLY")


def test_a_ticket_walks_section_6_from_triage_to_closed(owner, coach, lead):
    ticket = _open(coach, lead)
    tid = ticket["id"]
    assigned = ticket_action(owner, tid, "assign", {"assigneeUserId": str(coach.user.id)})
    assert assigned.data["status"] == "assigned"

    responded = ticket_action(coach, tid, "respond", {"message": "Looking into it"})
    assert responded.data["status"] == "in_progress"
    assert responded.data["sla"]["firstRespondedAt"] is not None

    waiting = ticket_action(coach, tid, "request-info", {"message": "Which class?"})
    assert (waiting.data["status"], waiting.data["sla"]["timer"]) == ("awaiting_customer", "paused")
    assert waiting.data["sla"]["resolutionDueAt"] is None

    replied = ticket_action(coach, tid, "customer-reply", {"message": "Tuesday yoga", "channel": "phone"})
    assert (replied.data["status"], replied.data["sla"]["timer"]) == ("in_progress", "running")
    assert replied.data["sla"]["resolutionDueAt"] is not None

    resolved = ticket_action(coach, tid, "resolve", {"resolution": "Renewed the membership."})
    assert (resolved.data["status"], resolved.data["resolution"]) == ("resolved", "Renewed the membership.")
    assert [(m["kind"], m["status"], m["to_address"]) for m in ticket_mail_rows(tid)] == [
        ("resolution_confirmation", "pending", "dana@example.com")
    ]

    closed = ticket_action(coach, tid, "confirm")
    assert (closed.data["status"], closed.data["closeReason"], closed.data["sla"]["timer"]) == (
        "closed",
        "confirmed",
        "stopped",
    )
    assert [m["kind"] for m in ticket_mail_rows(tid)] == ["resolution_confirmation", "satisfaction_survey"]

    transitions = [
        (e["from_status"], e["to_status"], e["payload"]["trigger"]) for e in ticket_history(tid, "status_changed")
    ]
    assert transitions == [
        ("new", "unassigned", "route_unmatched"),
        ("unassigned", "assigned", "assign"),
        ("assigned", "in_progress", "respond"),
        ("in_progress", "awaiting_customer", "request_info"),
        ("awaiting_customer", "in_progress", "customer_reply"),
        ("in_progress", "resolved", "resolve"),
        ("resolved", "closed", "confirm"),
    ]
    detail = get_ticket(coach, tid).data
    assert [e["type"] for e in detail["history"]].count("assigned") == 1
    assert [m["body"] for m in detail["messages"]] == ["Looking into it", "Which class?", "Tuesday yoga"]


def test_a_transition_the_state_does_not_have_is_a_409_naming_it(coach, lead):
    ticket = _open(coach, lead)
    response = ticket_action(coach, ticket["id"], "resolve", {"resolution": "x"})
    assert (response.status, response.error_code) == (409, "TICKET_INVALID_TRANSITION")
    assert (response.body["error"]["status"], response.body["error"]["trigger"]) == ("unassigned", "resolve")
    assert ticket_row(ticket["id"])["status"] == "unassigned"


def test_reopening_needs_a_reason_and_restarts_the_resolution_clock(owner, coach, lead):
    tid = _open(coach, lead)["id"]
    ticket_action(owner, tid, "assign", {"assigneeUserId": str(coach.user.id)})
    ticket_action(coach, tid, "respond")
    ticket_action(coach, tid, "resolve", {"resolution": "Done"})
    assert ticket_action(coach, tid, "reopen", {"reason": ""}).status == 400
    reopened = ticket_action(coach, tid, "reopen", {"reason": "Still cannot book"})
    assert (reopened.data["status"], reopened.data["reopenReason"], reopened.data["reopenCount"]) == (
        "reopened",
        "Still cannot book",
        1,
    )
    assert reopened.data["sla"]["cycleStartedAt"] == reopened.data["reopenedAt"]
    assert reopened.data["sla"]["resolutionElapsedSeconds"] == 0
    assert ticket_action(coach, tid, "respond").data["status"] == "in_progress"


def test_only_a_higher_tier_agent_takes_an_escalated_ticket_and_the_chain_is_recorded(owner, coach, lead):
    tid = _open(coach, lead)["id"]
    ticket_action(owner, tid, "assign", {"assigneeUserId": str(coach.user.id)})
    from tests.support.tickets_helpers import set_ticket_columns

    set_ticket_columns(tid, status="escalated")
    refused = ticket_action(coach, tid, "take-ownership")
    assert (refused.status, refused.error_code) == (403, "TICKET_HIGHER_TIER_ONLY")
    taken = ticket_action(owner, tid, "take-ownership")
    assert (taken.data["status"], taken.data["assigneeUserId"]) == ("in_progress", str(owner.user.id))
    [chain] = ticket_history(tid, "escalation_chain")
    assert chain["payload"]["fromAssigneeUserId"] == str(coach.user.id)
    assert chain["payload"]["chain"] == [str(owner.user.id)]


def test_the_queues_escalation_agent_may_take_its_escalated_tickets(owner, coach, lead):
    senior = make_caller(role="coach", organization=owner.organization)
    queue = config_call(
        owner, "POST", "ticket-queues", {"name": "Tier 2", "escalationUserId": str(senior.user.id)}
    ).data
    tid = _open(coach, lead)["id"]
    ticket_action(owner, tid, "assign", {"assigneeUserId": str(coach.user.id), "queueId": queue["id"]})
    from tests.support.tickets_helpers import set_ticket_columns

    set_ticket_columns(tid, status="escalated")
    assert ticket_action(senior, tid, "take-ownership").data["assigneeUserId"] == str(senior.user.id)


def test_a_handover_changes_the_accountable_agent_but_not_the_clock(owner, coach, lead):
    other = make_caller(role="coach", organization=owner.organization)
    tid = _open(coach, lead)["id"]
    ticket_action(owner, tid, "assign", {"assigneeUserId": str(coach.user.id)})
    ticket_action(coach, tid, "respond")
    before = ticket_row(tid)
    handed = ticket_action(owner, tid, "assign", {"assigneeUserId": str(other.user.id)})
    assert (handed.data["status"], handed.data["assigneeUserId"]) == ("in_progress", str(other.user.id))
    after = ticket_row(tid)
    for column in ("sla_running_since", "resolution_due_at", "resolution_elapsed_seconds", "sla_cycle_started_at"):
        assert after[column] == before[column]
    [_, handover] = ticket_history(tid, "assigned")
    assert (handover["payload"]["fromAssigneeUserId"], handover["payload"]["assigneeUserId"]) == (
        str(coach.user.id),
        str(other.user.id),
    )


def test_assigning_a_member_is_refused(owner, coach, lead):
    member = make_caller(role="member", organization=owner.organization)
    tid = _open(coach, lead)["id"]
    response = ticket_action(owner, tid, "assign", {"assigneeUserId": str(member.user.id)})
    assert (response.status, response.error_code) == (400, "ASSIGNEE_NOT_STAFF")


def test_another_organizations_ticket_answers_like_a_random_id(coach, lead):
    tid = _open(coach, lead)["id"]
    stranger = make_caller(role="owner")
    for response in (
        get_ticket(stranger, tid),
        get_ticket(stranger, uuid.uuid4()),
        get_ticket(stranger, "not-an-id"),
        ticket_action(stranger, tid, "respond"),
    ):
        assert (response.status, response.error_code) == (404, "TICKET_NOT_FOUND")


def test_lists_page_newest_first_and_filter(owner, coach, lead):
    ids = [_open(coach, lead)["id"] for _ in range(3)]
    ticket_action(owner, ids[0], "assign", {"assigneeUserId": str(coach.user.id)})
    first = config_call(coach, "GET", "tickets", query={"limit": "2"})
    assert [t["id"] for t in first.data] == [ids[2], ids[1]]
    rest = config_call(coach, "GET", "tickets", query={"limit": "2", "cursor": first.body["nextCursor"]})
    assert ([t["id"] for t in rest.data], rest.body["nextCursor"]) == ([ids[0]], None)
    mine = config_call(coach, "GET", "tickets", query={"assignee": "me"})
    assert [t["id"] for t in mine.data] == [ids[0]]
    triage = config_call(coach, "GET", "tickets", query={"assignee": "unassigned"})
    assert [t["id"] for t in triage.data] == [ids[2], ids[1]]
    bad = config_call(coach, "GET", "tickets", query={"cursor": "garbage"})
    assert (bad.status, bad.error_code) == (400, "INVALID_CURSOR")


def test_tickets_opened_at_the_same_moment_get_distinct_numbers(owner, lead, private_engine):
    from datetime import UTC, datetime

    from leadcrm.platform.db.uow import UnitOfWork
    from leadcrm.tickets import creation
    from leadcrm.tickets.rules.routing import Channel
    from tests.support.concurrency import run_together

    def open_one() -> int:
        with UnitOfWork(engine=private_engine, publisher=lambda events: None) as uow:
            new = creation.NewTicket(
                subject="Same time", description="", channel=Channel.PHONE, lead_id=uuid.UUID(lead["id"])
            )
            number = creation.create_ticket(uow, owner.org_id, new, now=datetime.now(UTC))["number"]
            uow.commit()
        return number

    numbers, errors = run_together([open_one] * 4)
    assert errors == [None] * 4
    assert sorted(numbers) == [1, 2, 3, 4]


def test_an_idempotency_key_replays_the_first_answer(coach, lead):
    body = {"subject": "Cannot book a class", "leadId": lead["id"]}
    first = open_ticket(coach, body, headers={"idempotency-key": "t-1"})
    again = open_ticket(coach, body, headers={"idempotency-key": "t-1"})
    assert (again.status, again.data["id"], again.headers.get("idempotent-replayed")) == (201, first.data["id"], "true")
    other = open_ticket(coach, {**body, "subject": "Another"}, headers={"idempotency-key": "t-1"})
    assert other.status == 422
    assert ticket_row(first.data["id"])["number"] == 1 and open_ticket(coach, body).data["number"] == 2
