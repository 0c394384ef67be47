"""Assignment rules at intake, through the API handler: a lead arriving without an owner gets one in the same
transaction, the timeline records the rule, and simultaneous leads spread evenly (issue 25)."""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import update

from leadcrm.directory.tables import memberships
from leadcrm.ingestion.rules.meta import META_CHANNEL
from leadcrm.leads.batch_intake import Arrival, intake_many
from leadcrm.leads.capture import PublicSubmission, capture_lead
from leadcrm.leads.dedup import open_batch_intake
from leadcrm.leads.intake import NewLead
from leadcrm.leads.rules.assignment import RULE_ASSIGNED_ACTIVITY
from leadcrm.leads.rules.returning import ReturnVia
from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.db.uow import UnitOfWork
from tests.support.api import ApiResponse, call_api
from tests.support.capture_helpers import activities_of, capture, lead_rows
from tests.support.factories import StaffCaller, make_caller
from tests.support.lead_moves_helpers import default_pipeline
from tests.support.returning_helpers import insert_lead, lead_state


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Each unit of work publishes after its commit; the bus exists."""


@pytest.fixture
def owner() -> StaffCaller:
    return make_caller(role="owner")


@pytest.fixture
def coaches(owner) -> tuple[StaffCaller, StaffCaller]:
    return make_caller(role="coach", organization=owner.organization), make_caller(
        role="coach", organization=owner.organization
    )


def add_rule(owner: StaffCaller, **body: Any) -> dict[str, Any]:
    response = call_api("POST", f"/organizations/{owner.org_id}/lead-assignment-rules", sub=owner.sub, body=body)
    assert response.status == 201, response.body
    return response.body["data"]


def round_robin(owner: StaffCaller, people: list[StaffCaller], **more: Any) -> dict[str, Any]:
    return add_rule(
        owner, name="Coaches take turns", strategy="round_robin", userIds=[str(p.user.id) for p in people], **more
    )


def set_away(caller: StaffCaller, who: StaffCaller, until: datetime) -> ApiResponse:
    return call_api(
        "PUT",
        f"/organizations/{who.org_id}/staff/{who.user.id}/availability",
        sub=caller.sub,
        body={"awayUntil": until.isoformat(), "workingHours": []},
    )


def capture_many(org_id: uuid.UUID, count: int) -> None:
    for n in range(count):
        assert capture(org_id, {"name": f"Lead {n}", "email": f"{uuid.uuid4().hex}@example.com"}).status == 201


def owners(org_id: uuid.UUID) -> Counter[uuid.UUID | None]:
    return Counter(row["assigned_to_user_id"] for row in lead_rows(org_id))


def test_a_round_robin_over_two_coaches_assigns_ten_captured_leads_five_and_five(owner, coaches):
    ada, ben = coaches
    round_robin(owner, [ada, ben])

    capture_many(owner.org_id, 10)

    assert owners(owner.org_id) == {ada.user.id: 5, ben.user.id: 5}


def test_a_coach_marked_away_is_skipped(owner, coaches):
    ada, ben = coaches
    round_robin(owner, [ada, ben])
    assert set_away(ada, ada, datetime.now(UTC) + timedelta(days=3)).status == 200  # their own

    capture_many(owner.org_id, 10)

    assert owners(owner.org_id) == {ben.user.id: 10}


def test_a_coach_whose_away_has_ended_takes_turns_again(owner, coaches):
    ada, ben = coaches
    round_robin(owner, [ada, ben])
    assert set_away(owner, ada, datetime.now(UTC) - timedelta(minutes=1)).status == 200

    capture_many(owner.org_id, 4)

    assert owners(owner.org_id) == {ada.user.id: 2, ben.user.id: 2}


def test_the_timeline_records_the_rule_that_placed_the_lead(owner, coaches):
    rule = round_robin(owner, list(coaches))

    capture_many(owner.org_id, 1)

    lead = lead_rows(owner.org_id)[0]
    (entry,) = activities_of(lead["id"], RULE_ASSIGNED_ACTIVITY)
    assert entry["payload"] == {
        "ruleId": rule["id"],
        "ruleName": "Coaches take turns",
        "toUserId": str(lead["assigned_to_user_id"]),
    }


def test_first_matching_rule_wins(owner, coaches):
    ada, ben = coaches
    add_rule(owner, name="Meta to Ada", strategy="fixed", userIds=[str(ada.user.id)], sources=["meta"])
    add_rule(owner, name="The rest to Ben", strategy="fixed", userIds=[str(ben.user.id)])

    capture_many(owner.org_id, 2)  # minisite leads: the first rule does not match

    assert owners(owner.org_id) == {ben.user.id: 2}


def test_a_lead_no_rule_can_place_stays_unassigned(owner, coaches):
    add_rule(owner, name="Only Hebrew", strategy="fixed", userIds=[str(coaches[0].user.id)], languages=["he"])

    assert capture(owner.org_id, {"name": "Ann", "email": "ann@example.com", "locale": "en-GB"}).status == 201

    assert owners(owner.org_id) == {None: 1}


def test_capacity_passes_a_full_coach_by(owner, coaches):
    ada, ben = coaches
    round_robin(owner, [ada, ben], capacity=2)

    capture_many(owner.org_id, 5)

    assert owners(owner.org_id) == {ada.user.id: 2, ben.user.id: 2, None: 1}


def test_a_rule_naming_someone_who_left_skips_them_and_reports_it(owner, coaches):
    ada, ben = coaches
    rule = round_robin(owner, [ada, ben])
    with get_engine().begin() as conn:
        conn.execute(update(memberships).where(memberships.c.id == ada.membership.id).values(status="cancelled"))

    capture_many(owner.org_id, 3)

    assert owners(owner.org_id) == {ben.user.id: 3}
    listed = call_api("GET", f"/organizations/{owner.org_id}/lead-assignment-rules", sub=owner.sub).body["data"]
    assert [(r["id"], r["problems"]) for r in listed] == [
        (rule["id"], [{"code": "ASSIGNEE_LEFT", "userId": str(ada.user.id)}])
    ]


def test_an_organization_without_rules_leaves_new_leads_unassigned(owner):
    capture_many(owner.org_id, 2)

    assert owners(owner.org_id) == {None: 2}


def test_a_returning_lead_without_an_owner_is_placed_by_the_rules(owner, coaches):
    ada, _ = coaches
    add_rule(owner, name="Ada", strategy="fixed", userIds=[str(ada.user.id)])
    lead_id = insert_lead(owner.org_id, default_pipeline(owner.org_id), "lost", email="back@example.com")

    assert capture(owner.org_id, {"email": "back@example.com", "note": "Back again"}).status == 201

    assert lead_state(lead_id)["assigned_to_user_id"] == ada.user.id
    assert len(activities_of(lead_id, RULE_ASSIGNED_ACTIVITY)) == 1


def test_a_batch_of_webhook_leads_is_placed_in_one_pass(owner, coaches):
    ada, ben = coaches
    add_rule(owner, name="Form 7", strategy="fixed", userIds=[str(ada.user.id)], formRefs=["form-7"])
    round_robin(owner, [ada, ben])
    arrivals = [
        Arrival(
            NewLead(name=f"Meta {n}", email=f"{uuid.uuid4().hex}@example.com", source="facebook", form_ref=form),
            META_CHANNEL,
            {},
            ReturnVia.META,
        )
        for n, form in enumerate(["form-7", "other", "other", "form-7", "other"])
    ]
    with UnitOfWork() as uow:
        context = open_batch_intake(uow.connection, owner.org_id, [(a.new.email, a.new.phone) for a in arrivals])
        assert context is not None
        intakes = intake_many(uow, owner.org_id, arrivals, context=context)
        uow.commit()

    placed = [i.lead["assigned_to_user_id"] for i in intakes]  # type: ignore[union-attr]
    assert placed[0] == placed[3] == ada.user.id
    assert Counter(placed[n] for n in (1, 2, 4)) == {ada.user.id: 2, ben.user.id: 1}


def _all_at_once(count: int, work: Callable[[], Any]) -> None:
    start = threading.Barrier(count, timeout=30)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            start.wait()
            work()
        except BaseException as error:  # examined on the test's thread
            errors.append(error)

    threads = [threading.Thread(target=run) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "an intake never finished (deadlock?)"
    if errors:
        raise errors[0]


def test_twenty_leads_at_once_over_two_coaches_spread_ten_and_ten(private_engine, owner, coaches):
    ada, ben = coaches
    round_robin(owner, [ada, ben])

    def submit() -> None:
        email = f"{uuid.uuid4().hex}@example.com"
        with UnitOfWork(private_engine) as uow:
            capture_lead(uow, owner.org_id, PublicSubmission(received={"email": email}, email=email))
            uow.commit()

    _all_at_once(20, submit)

    assert owners(owner.org_id) == {ada.user.id: 10, ben.user.id: 10}


def test_the_work_queues_unassigned_reason_shows_only_leads_no_rule_could_place(owner, coaches):
    add_rule(owner, name="Hebrew", strategy="fixed", userIds=[str(coaches[0].user.id)], languages=["he"])
    assert capture(owner.org_id, {"name": "Dana", "email": "dana@example.com", "locale": "he-IL"}).status == 201
    assert capture(owner.org_id, {"name": "Ann", "email": "ann@example.com", "locale": "en-GB"}).status == 201

    queue = call_api(
        "GET", f"/organizations/{owner.org_id}/leads/queue", sub=owner.sub, query={"reason": "unassigned"}
    ).body["data"]

    unplaced = [row["id"] for row in lead_rows(owner.org_id) if row["assigned_to_user_id"] is None]
    assert [item["id"] for item in queue] == [str(lead_id) for lead_id in unplaced]
    assert len(unplaced) == 1


def test_a_staff_create_without_an_assignee_is_placed_and_one_with_an_assignee_keeps_it(owner, coaches):
    ada, ben = coaches
    add_rule(owner, name="Ada", strategy="fixed", userIds=[str(ada.user.id)])
    path = f"/organizations/{owner.org_id}/leads"

    placed = call_api("POST", path, sub=owner.sub, body={"name": "Walk-in"}).body["data"]
    chosen = call_api("POST", path, sub=owner.sub, body={"name": "Ben's", "assigneeUserId": str(ben.user.id)})

    assert placed["assigneeUserId"] == str(ada.user.id)
    assert chosen.body["data"]["assigneeUserId"] == str(ben.user.id)
