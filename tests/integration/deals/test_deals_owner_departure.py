"""Owner departure (spec section 8): a departed member's open deals, leads and tasks go to one active staff
member in one audited operation, from the platform's event or an owner/admin's request; idempotent."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from sqlalchemy import select

from leadcrm.deals import owner_departure, transitions
from leadcrm.deals.rules.deals import Evidence
from leadcrm.deals.tables import ownership_handovers
from leadcrm.directory.rules import LEAD_MANAGEMENT, Actor, Role
from leadcrm.directory.tables import memberships
from leadcrm.leads.tables import leads
from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import AppError
from leadcrm.work.tables import tasks
from tests.support.api import call_api
from tests.support.concurrency import run_together
from tests.support.conversion_helpers import deliver_platform_event
from tests.support.deals_helpers import (
    create_lead,
    deal_row,
    deals_path,
    events_of,
    history_of,
    insert_task,
    open_deal,
    set_deal_columns,
    stage_id,
    timeline_types,
    walk_to,
)
from tests.support.factories import make_caller


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Deal writes publish their events after commit; the bus exists."""


@pytest.fixture
def task_lifecycle(ctx):
    from task_lifecycle.handler import lambda_handler

    return lambda event: lambda_handler(event, ctx)


@pytest.fixture
def owner():
    return make_caller(role="owner")


@pytest.fixture
def leaver(owner):
    return make_caller(role="coach", organization=owner.organization)


@pytest.fixture
def successor(owner):
    return make_caller(role="admin", organization=owner.organization)


@pytest.fixture
def book(leaver):
    """The leaver's work: two open deals (one stalled), a won and a lost deal, an open lead, a lost lead, an
    open task and a completed one."""
    open_one = open_deal(leaver)
    stalled = walk_to(leaver, open_deal(leaver), "proposal")
    set_deal_columns(stalled["id"], status="stalled", stalled_at=deal_row(stalled["id"])["updated_at"])
    won = walk_to(leaver, open_deal(leaver), "won")
    lost = walk_to(leaver, open_deal(leaver), "lost")
    lead_id = create_lead(leaver, "Maya")
    lost_lead = create_lead(leaver, "Gil")
    call_api(
        "PATCH",
        f"/organizations/{leaver.org_id}/leads/{lost_lead}",
        sub=leaver.sub,
        body={"status": "lost", "lostReason": "not_interested"},
    )
    with get_engine().begin() as conn:
        conn.execute(
            leads.update()
            .where(leads.c.id.in_([uuid.UUID(lead_id), uuid.UUID(lost_lead)]))
            .values(assigned_to_user_id=leaver.user.id)
        )
    open_task = insert_task(leaver.org_id, leaver.user.id, lead_id=lead_id)
    done_task = insert_task(leaver.org_id, leaver.user.id, status="completed")
    return {
        "open_deals": [open_one["id"], stalled["id"]],
        "closed_deals": [won["id"], lost["id"]],
        "open_lead": lead_id,
        "lost_lead": lost_lead,
        "open_task": open_task,
        "done_task": done_task,
        "deal_lead": open_one["leadId"],
    }


def _owner_of_lead(lead_id) -> uuid.UUID | None:
    with get_engine().connect() as conn:
        return conn.execute(select(leads.c.assigned_to_user_id).where(leads.c.id == uuid.UUID(lead_id))).scalar_one()


def _assignee_of_task(task_id) -> uuid.UUID | None:
    with get_engine().connect() as conn:
        return conn.execute(select(tasks.c.assignee_user_id).where(tasks.c.id == task_id)).scalar_one()


def _handovers(org_id) -> list[dict]:
    with get_engine().connect() as conn:
        rows = conn.execute(select(ownership_handovers).where(ownership_handovers.c.organization_id == org_id))
        return [dict(r) for r in rows.mappings()]


def _departed(task_lifecycle, leaver, status="cancelled", changed_at="2026-11-29T09:00:00Z"):
    return deliver_platform_event(
        task_lifecycle,
        "membership.status_changed",
        {
            "organizationId": str(leaver.org_id),
            "membershipId": str(leaver.membership.id),
            "status": status,
            **({"changedAt": changed_at} if changed_at else {}),
        },
    )


def _set_default(owner, user_id) -> None:
    response = call_api(
        "PUT", f"/organizations/{owner.org_id}/default-assignee", sub=owner.sub, body={"userId": str(user_id)}
    )
    assert response.status == 200, response.body


def test_a_departure_hands_open_work_to_the_default_assignee_and_leaves_closed_work(
    task_lifecycle, owner, leaver, successor, book
):
    _set_default(owner, successor.user.id)
    assert _departed(task_lifecycle, leaver) == {"batchItemFailures": []}

    assert [deal_row(d)["owner_user_id"] for d in book["open_deals"]] == [successor.user.id] * 2
    assert [deal_row(d)["owner_user_id"] for d in book["closed_deals"]] == [leaver.user.id] * 2
    assert (_owner_of_lead(book["open_lead"]), _owner_of_lead(book["lost_lead"])) == (successor.user.id, leaver.user.id)
    assert _assignee_of_task(book["open_task"]) == successor.user.id
    assert _assignee_of_task(book["done_task"]) == leaver.user.id


def test_the_departure_is_audited_on_every_item_and_once_as_a_whole(task_lifecycle, owner, leaver, successor, book):
    _set_default(owner, successor.user.id)
    _departed(task_lifecycle, leaver)

    [handover] = _handovers(owner.org_id)
    assert (handover["from_user_id"], handover["to_user_id"], handover["via"]) == (
        leaver.user.id,
        successor.user.id,
        "platform_event",
    )
    # Leads: the open one the leaver owned, and the leads of the deals they opened (auto-assigned to them).
    assert (handover["deals_count"], handover["tasks_count"]) == (2, 1)
    assert history_of(book["open_deals"][0])[-1]["type"] == "owner_handed_over"
    assert history_of(book["open_deals"][0])[-1]["payload"]["toUserId"] == str(successor.user.id)
    assert "owner_changed" in timeline_types(book["open_lead"])
    assert "deal_owner_changed" in timeline_types(book["deal_lead"])
    [event] = events_of(owner.org_id, "ownership.handed_over")
    assert (event["payload"]["deals"], event["payload"]["tasks"]) == (2, 1)
    with get_engine().connect() as conn:
        status = conn.execute(select(memberships.c.status).where(memberships.c.id == leaver.membership.id)).scalar_one()
    assert status == "cancelled"  # the membership mirrors the platform's


def test_a_redelivered_departure_hands_nothing_over_twice(task_lifecycle, owner, leaver, successor, book):
    _set_default(owner, successor.user.id)
    _departed(task_lifecycle, leaver)
    _departed(task_lifecycle, leaver)
    assert len(_handovers(owner.org_id)) == 1
    assert len(events_of(owner.org_id, "ownership.handed_over")) == 1


def test_a_departure_without_a_time_redelivered_moves_and_records_nothing_more(
    task_lifecycle, owner, leaver, successor, book
):
    _set_default(owner, successor.user.id)
    _departed(task_lifecycle, leaver, changed_at=None)
    _departed(task_lifecycle, leaver, changed_at=None)
    counts = sorted((h["deals_count"], h["tasks_count"]) for h in _handovers(owner.org_id))
    assert counts == [(2, 1)]  # the redelivery found nothing open left: no second handover
    assert len(events_of(owner.org_id, "ownership.handed_over")) == 1


def test_without_a_default_assignee_the_oldest_active_owner_takes_the_work(task_lifecycle, owner, leaver, book):
    _departed(task_lifecycle, leaver, status="suspended")
    assert deal_row(book["open_deals"][0])["owner_user_id"] == owner.user.id


def test_a_departure_nobody_can_take_over_keeps_the_work_until_an_owner_names_someone(task_lifecycle):
    coach = make_caller(role="coach")  # an organization without an owner or a default assignee
    deal = open_deal(coach)
    _departed(task_lifecycle, coach)
    assert deal_row(deal["id"])["owner_user_id"] == coach.user.id
    assert _handovers(coach.org_id) == []


def test_a_member_with_nothing_open_leaves_no_empty_handover(task_lifecycle, owner):
    member = make_caller(role="member", organization=owner.organization)
    _departed(task_lifecycle, member)
    assert _handovers(owner.org_id) == []


def test_an_active_membership_keeps_its_work(task_lifecycle, owner, leaver, book):
    _departed(task_lifecycle, leaver, status="active")
    assert deal_row(book["open_deals"][0])["owner_user_id"] == leaver.user.id
    assert _handovers(owner.org_id) == []


def _platform_membership(leaver, minutes=0, **changes):
    return {
        "membershipId": str(leaver.membership.id),
        "organizationId": str(leaver.org_id),
        "userId": str(leaver.user.id),
        "role": "coach",
        "status": "active",
        "updatedAt": f"2026-12-01T09:{minutes:02d}:00Z",
        **changes,
    }


def test_a_coach_demoted_by_the_platform_hands_their_open_work_over(task_lifecycle, owner, leaver, successor, book):
    _set_default(owner, successor.user.id)
    demoted = _platform_membership(leaver, role="member")
    assert deliver_platform_event(task_lifecycle, "membership.updated", demoted) == {"batchItemFailures": []}
    assert [deal_row(d)["owner_user_id"] for d in book["open_deals"]] == [successor.user.id] * 2
    deliver_platform_event(task_lifecycle, "membership.updated", demoted)  # a redelivery
    assert len(_handovers(owner.org_id)) == 1


def test_a_membership_the_platform_deletes_hands_its_open_work_over(task_lifecycle, owner, leaver, book):
    deletion = {
        "membershipId": str(leaver.membership.id),
        "organizationId": str(leaver.org_id),
        "deletedAt": "2026-12-01T09:30:00Z",
    }
    assert deliver_platform_event(task_lifecycle, "membership.deleted", deletion) == {"batchItemFailures": []}
    assert _assignee_of_task(book["open_task"]) == owner.user.id
    [handover] = _handovers(owner.org_id)
    assert (handover["from_user_id"], handover["via"]) == (leaver.user.id, "platform_event")


def test_a_coach_promoted_by_the_platform_keeps_their_work(task_lifecycle, owner, leaver, book):
    deliver_platform_event(task_lifecycle, "membership.updated", _platform_membership(leaver, role="admin"))
    assert deal_row(book["open_deals"][0])["owner_user_id"] == leaver.user.id
    assert _handovers(owner.org_id) == []


@pytest.mark.parametrize(
    "detail",
    [{}, {"organizationId": "x", "membershipId": "y", "status": "cancelled"}, {"status": "gone"}],
)
def test_malformed_details_are_acknowledged_and_dropped(task_lifecycle, detail):
    assert deliver_platform_event(task_lifecycle, "membership.status_changed", detail) == {"batchItemFailures": []}


# -- the owner/admin API -------------------------------------------------------------------------------------


def _hand_over(caller, membership_id, body=None):
    return call_api(
        "POST",
        f"/organizations/{caller.org_id}/memberships/{membership_id}/handover",
        sub=caller.sub,
        body=body or {},
    )


def _deactivate(membership_id) -> None:
    with get_engine().begin() as conn:
        conn.execute(memberships.update().where(memberships.c.id == membership_id).values(status="cancelled"))


def test_an_owner_hands_a_departed_members_work_to_a_chosen_member(owner, leaver, successor, book):
    _deactivate(leaver.membership.id)
    response = _hand_over(owner, leaver.membership.id, {"toUserId": str(successor.user.id)})
    assert response.status == 200, response.body
    assert (response.data["toUserId"], response.data["deals"], response.data["tasks"], response.data["via"]) == (
        str(successor.user.id),
        2,
        1,
        "api",
    )
    assert deal_row(book["open_deals"][1])["owner_user_id"] == successor.user.id
    again = _hand_over(owner, leaver.membership.id, {"toUserId": str(successor.user.id)})
    assert (again.data["deals"], again.data["leads"], again.data["tasks"]) == (0, 0, 0)  # idempotent


def test_an_active_staff_members_work_is_not_handed_over(owner, leaver):
    response = _hand_over(owner, leaver.membership.id)
    assert (response.status, response.error_code) == (409, "MEMBERSHIP_STILL_ACTIVE")


def test_the_recipient_must_be_active_staff(owner, leaver):
    _deactivate(leaver.membership.id)
    member = make_caller(role="member", organization=owner.organization)
    response = _hand_over(owner, leaver.membership.id, {"toUserId": str(member.user.id)})
    assert (response.status, response.error_code) == (400, "ASSIGNEE_NOT_STAFF")


def test_only_owners_and_admins_hand_work_over_and_another_orgs_membership_is_not_found(owner, leaver):
    assert _hand_over(leaver, leaver.membership.id).error_code == "OWNER_OR_ADMIN_ONLY"
    stranger = make_caller(role="coach")
    assert _hand_over(owner, stranger.membership.id).error_code == "MEMBERSHIP_NOT_FOUND"
    assert _hand_over(owner, "nope").status == 404


def test_a_stale_edit_after_a_handover_is_refused(owner, leaver, successor, book):
    _deactivate(leaver.membership.id)
    _hand_over(owner, leaver.membership.id, {"toUserId": str(successor.user.id)})
    response = call_api(
        "PATCH", deals_path(owner.org_id, book["open_deals"][0]), sub=owner.sub, body={"version": 1, "valueMinor": 1}
    )
    assert response.error_code == "DEAL_VERSION_CONFLICT"


def test_the_default_assignee_must_be_active_staff(owner):
    member = make_caller(role="member", organization=owner.organization)
    response = call_api(
        "PUT", f"/organizations/{owner.org_id}/default-assignee", sub=owner.sub, body={"userId": str(member.user.id)}
    )
    assert (response.status, response.error_code) == (400, "ASSIGNEE_NOT_STAFF")
    read = call_api("GET", f"/organizations/{owner.org_id}/default-assignee", sub=owner.sub)
    assert read.data == {"userId": None}


def test_a_handover_and_a_move_of_the_same_deal_at_once_queue_instead_of_deadlocking(
    owner, leaver, successor, private_engine
):
    deal = open_deal(leaver)  # its lead is the leaver's too: the handover locks both rows the move touches
    discovery = uuid.UUID(stage_id(leaver, "discovery"))
    _deactivate(leaver.membership.id)
    manager = Actor(owner.user.id, owner.org_id, owner.membership.id, Role.OWNER, frozenset({LEAD_MANAGEMENT}))

    def hand_over():
        with UnitOfWork(engine=private_engine, publisher=lambda events: None) as uow:
            result = owner_departure.hand_over_from_api(uow, manager, leaver.membership.id, successor.user.id)
            uow.commit()
            return result.deals

    def move_it():
        with UnitOfWork(engine=private_engine, publisher=lambda events: None) as uow:
            moved = transitions.move_deal(
                uow, manager, uuid.UUID(deal["id"]), deal["version"], discovery, Evidence(activity_at=datetime.now(UTC))
            )
            uow.commit()
            return moved["stage_kind"]

    results, errors = run_together([hand_over, move_it])
    assert errors[0] is None and results[0] == 1
    assert errors[1] is None or (isinstance(errors[1], AppError) and errors[1].code == "DEAL_VERSION_CONFLICT")
    assert deal_row(deal["id"])["owner_user_id"] == successor.user.id
