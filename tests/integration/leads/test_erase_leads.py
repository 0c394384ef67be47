"""Erasing a lead (owner/admin): the lead and its linked tasks go in one transaction, gates and 404s as the
rest of the API, and bulk erase reports each lead it could not erase."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import select
from sqlalchemy.exc import OperationalError

from leadcrm.directory.tables import memberships
from leadcrm.leads.tables import leads
from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.tables import idempotency_keys
from tests.support.api import call_api, leads_path
from tests.support.erase_helpers import make_task, outbox_rows, task_rows, task_status
from tests.support.factories import make_caller, make_membership, make_user
from tests.support.lead_moves_helpers import create_lead


@pytest.fixture
def owner():
    return make_caller(role="owner")


def _erase(caller, lead_id, *, org_id=None):
    return call_api("DELETE", leads_path(org_id or caller.org_id, lead_id), sub=caller.sub)


def _bulk_erase(caller, lead_ids):
    return call_api(
        "POST", f"{leads_path(caller.org_id)}/bulk-erase", sub=caller.sub, body={"leadIds": [str(i) for i in lead_ids]}
    )


def _lead_exists(lead_id) -> bool:
    with get_engine().connect() as conn:
        return conn.execute(select(leads.c.id).where(leads.c.id == uuid.UUID(str(lead_id)))).first() is not None


def test_an_owner_erases_a_lead_with_its_linked_tasks(owner):
    lead = create_lead(owner, "Erase Me")
    make_task(owner.org_id, lead_id=lead["id"], task_type="general", status="completed", title="Call Erase Me")
    response = _erase(owner, lead["id"])
    assert response.status == 204, response.body
    assert not _lead_exists(lead["id"])
    assert task_rows(lead_id=lead["id"]) == []


def test_an_admin_may_erase_too():
    admin = make_caller(role="admin")
    lead = create_lead(admin, "Admin Erase")
    assert _erase(admin, lead["id"]).status == 204


def test_unlinked_tasks_are_not_touched(owner):
    lead = create_lead(owner, "Linked Lead")
    unlinked = make_task(owner.org_id, title="Call Linked Lead")
    _erase(owner, lead["id"])
    assert task_status(unlinked) == "pending"


def test_a_coach_cannot_erase(owner):
    coach = make_caller(role="coach", organization=owner.organization)
    lead = create_lead(owner, "Kept Lead")
    response = _erase(coach, lead["id"])
    assert (response.status, response.error_code) == (403, "OWNER_OR_ADMIN_ONLY")
    assert _lead_exists(lead["id"])
    bulk = _bulk_erase(coach, [lead["id"]])
    assert (bulk.status, bulk.error_code) == (403, "OWNER_OR_ADMIN_ONLY")


def test_a_non_member_cannot_erase(owner):
    stranger = make_caller(role="owner")
    lead = create_lead(owner, "Guarded Lead")
    response = _erase(stranger, lead["id"], org_id=owner.org_id)
    assert (response.status, response.error_code) == (403, "NOT_A_MEMBER")


def test_another_organizations_lead_answers_like_a_random_id(owner):
    other = make_caller(role="owner")
    foreign = create_lead(other, "Foreign Lead")
    foreign_answer = _erase(owner, foreign["id"])
    random_answer = _erase(owner, uuid.uuid4())
    assert (foreign_answer.status, foreign_answer.error_code) == (404, "LEAD_NOT_FOUND")
    assert (random_answer.status, random_answer.body) == (foreign_answer.status, foreign_answer.body)
    assert _lead_exists(foreign["id"])


def test_an_id_that_is_not_a_uuid_is_not_found(owner):
    response = _erase(owner, "not-a-lead")
    assert (response.status, response.error_code) == (404, "LEAD_NOT_FOUND")


def test_erasing_twice_answers_not_found_the_second_time(owner):
    lead = create_lead(owner, "Once Lead")
    assert _erase(owner, lead["id"]).status == 204
    assert _erase(owner, lead["id"]).status == 404


def test_lead_erased_is_emitted_with_ids_only(owner):
    lead = create_lead(owner, "Event Lead")
    _erase(owner, lead["id"])
    (event,) = outbox_rows(lead["id"], "lead.erased")
    assert event["payload"] == {"leadId": lead["id"], "actorUserId": str(owner.user.id)}


def test_a_member_who_came_from_the_lead_is_kept_without_the_link(owner):
    lead = create_lead(owner, "Member Source")
    member = make_membership(owner.organization, make_user(), role="member")
    with get_engine().begin() as conn:
        conn.execute(
            memberships.update().where(memberships.c.id == member.id).values(source_lead_id=uuid.UUID(lead["id"]))
        )
    assert _erase(owner, lead["id"]).status == 204
    with get_engine().connect() as conn:
        source = conn.execute(select(memberships.c.source_lead_id).where(memberships.c.id == member.id)).scalar_one()
    assert source is None


def test_a_staff_creates_stored_answer_is_forgotten(owner):
    response = call_api(
        "POST",
        leads_path(owner.org_id),
        sub=owner.sub,
        body={"name": "Keyed Lead", "email": "keyed.lead@example.com"},
        headers={"Idempotency-Key": "erase-key-1"},
    )
    assert response.status == 201
    _erase(owner, response.data["id"])
    with get_engine().connect() as conn:
        stored = conn.execute(
            select(idempotency_keys.c.key).where(
                idempotency_keys.c.scope == f"leads.create:{owner.org_id}", idempotency_keys.c.key == "erase-key-1"
            )
        ).first()
    assert stored is None


# -- bulk ------------------------------------------------------------------------------------------------


def test_bulk_erase_erases_each_lead_and_reports_the_ones_it_could_not(owner):
    mine = [create_lead(owner, f"Bulk {i}")["id"] for i in range(3)]
    foreign = create_lead(make_caller(role="owner"), "Not Yours")["id"]
    unknown = str(uuid.uuid4())
    response = _bulk_erase(owner, [*mine, foreign, unknown, mine[0]])
    assert response.status == 200, response.body
    assert sorted(response.data["erased"]) == sorted(mine)
    assert sorted(response.data["failed"], key=lambda f: f["leadId"]) == sorted(
        [{"leadId": foreign, "reason": "LEAD_NOT_FOUND"}, {"leadId": unknown, "reason": "LEAD_NOT_FOUND"}],
        key=lambda f: f["leadId"],
    )
    assert not any(_lead_exists(lead_id) for lead_id in mine)
    assert _lead_exists(foreign)
    assert all(task_rows(lead_id=lead_id) == [] for lead_id in mine)
    assert all(len(outbox_rows(lead_id, "lead.erased")) == 1 for lead_id in mine)


class _LockTimeout(Exception):
    def __init__(self) -> None:
        super().__init__({"S": "ERROR", "C": "55P03", "M": "canceling statement due to lock timeout"})


def test_one_lead_failing_is_rolled_back_alone_and_reported(owner, monkeypatch):
    from leadcrm.leads import erase

    failing, healthy = create_lead(owner, "Failing")["id"], create_lead(owner, "Healthy")["id"]
    real = erase._forget_capture_keys

    def break_for_one(conn, organization_id, lead_id):
        if str(lead_id) == failing:
            raise OperationalError("SELECT", {}, _LockTimeout())
        return real(conn, organization_id, lead_id)

    monkeypatch.setattr(erase, "_forget_capture_keys", break_for_one)
    response = _bulk_erase(owner, [failing, healthy])
    assert response.data == {"erased": [healthy], "failed": [{"leadId": failing, "reason": "ERASE_FAILED"}]}
    assert _lead_exists(failing) and len(task_rows(lead_id=failing)) == 1
    assert outbox_rows(failing, "lead.erased") == []


def test_bulk_erase_takes_at_most_1000_ids(owner):
    response = _bulk_erase(owner, [uuid.uuid4() for _ in range(1001)])
    assert response.status == 400


def test_bulk_erase_needs_at_least_one_id(owner):
    response = _bulk_erase(owner, [])
    assert response.status == 400


def test_bulk_erase_refuses_ids_that_are_not_uuids(owner):
    response = call_api("POST", f"{leads_path(owner.org_id)}/bulk-erase", sub=owner.sub, body={"leadIds": ["nope"]})
    assert response.status == 400
