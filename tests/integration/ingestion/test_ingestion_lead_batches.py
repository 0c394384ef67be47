"""One SQS batch of Meta or WhatsApp leads is one unit of work, with every rule of a single delivery kept per
lead: the natural-key claim, dedup by person (two leads of one person in a batch dedup against each other as
in two batches), and partial batch failure (a lead that fails fails its own record, never the batch)."""

from __future__ import annotations

from typing import Any

import pytest

from leadcrm.ingestion.rules.meta import LeadgenChange, fetched_lead_payload
from tests.support.analytics_helpers import touches_of
from tests.support.capture_helpers import activities_of, lead_rows, receipts_of, tasks_of
from tests.support.events import lambda_context, sqs_event, sqs_record
from tests.support.factories import make_caller
from tests.support.ingestion_helpers import (
    connect_number,
    connect_page,
    counts,
    ctwa_referral,
    deliver,
    fresh_id,
    graph_lead,
    ingested,
    webhook_message,
    whatsapp_payload,
)
from tests.support.lead_moves_helpers import default_pipeline
from tests.support.returning_helpers import insert_lead, status_events_of


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Units of work publish after commit; the bus exists."""


@pytest.fixture
def owner():
    return make_caller(role="owner")


@pytest.fixture
def page(owner):
    page_id = fresh_id()
    connect_page(owner, page_id)
    return page_id


def _fetched(page: str, leadgen_id: str, **lead: Any) -> dict[str, Any]:
    """The `meta.lead` message graph_fetch queues for a lead it read from Graph."""
    change = LeadgenChange(page_id=page, leadgen_id=leadgen_id, form_id="870000000000001")
    return {"kind": "meta.lead", "payload": fetched_lead_payload(change, graph_lead(leadgen_id, **lead))}


def _people(page: str, count: int) -> list[dict[str, Any]]:
    return [
        _fetched(page, fresh_id(), email=f"person{i}@example.com", phone=f"+4477009001{i:02d}") for i in range(count)
    ]


def test_a_batch_of_ten_people_creates_ten_leads_each_with_its_task_receipt_and_attribution(owner, page):
    assert deliver(*_people(page, 10)) == {"batchItemFailures": []}
    assert counts(owner.org_id) == {"leads": 10, "attributions": 10, "tasks": 10, "receipts": 10}


def test_a_lead_of_a_batch_is_written_as_a_lead_delivered_alone(owner, page):
    """Same task, seed follow-up, first status event, receipt and first touch as the single create
    (`intake_lead`, which a delivery alone goes through)."""
    other_page = fresh_id()
    other = make_caller(role="owner")
    connect_page(other, other_page)
    deliver(_fetched(other_page, fresh_id()))
    deliver(_fetched(page, fresh_id()), *_people(page, 2))

    def shape(org_id):
        (lead,) = [lead for lead in lead_rows(org_id) if lead["email"] == "ada@example.com"]
        (task,) = [t for t in tasks_of(org_id) if t["linked_lead_id"] == lead["id"]]
        (receipt,) = [r for r in receipts_of(org_id) if r["lead_id"] == lead["id"]]
        (touch,) = touches_of(lead["id"])
        (event,) = status_events_of(lead["id"])
        return (
            {k: lead[k] for k in ("status", "source", "next_action_type", "returned_via", "assigned_to_user_id")},
            lead["next_action_at"] is not None,
            {k: task[k] for k in ("type", "title", "priority", "source", "due_date", "status")},
            (receipt["channel"], receipt["duplicate"], receipt["received_at"] == lead["created_at"]),
            {k: touch[k] for k in ("kind", "channel", "is_first", "utm_source")},
            touch["detail"] == {"receiptId": str(receipt["id"])},
            (event["from_status"], event["to_status"], event["changed_at"] == lead["created_at"]),
        )

    assert shape(owner.org_id) == shape(other.org_id)


def test_two_leads_of_one_person_in_one_batch_dedup_as_if_they_came_in_two(owner, page):
    first, second = fresh_id(), fresh_id()

    assert deliver(_fetched(page, first), _fetched(page, second)) == {"batchItemFailures": []}

    (lead,) = lead_rows(owner.org_id)
    assert counts(owner.org_id) == {"leads": 1, "attributions": 2, "tasks": 1, "receipts": 2}
    assert (ingested("meta_lead_ads", first)["outcome"], ingested("meta_lead_ads", second)["outcome"]) == (
        "created",
        "duplicate",
    )
    assert ingested("meta_lead_ads", second)["lead_id"] == lead["id"]
    assert sorted(r["duplicate"] for r in receipts_of(owner.org_id)) == [False, True]
    assert activities_of(lead["id"], "resubmitted")[0]["payload"]["channel"] == "meta_lead_ads"


def test_a_lead_of_a_person_with_an_open_lead_in_a_batch_is_a_duplicate_of_it(owner, page):
    existing = insert_lead(owner.org_id, default_pipeline(owner.org_id), "contacted", email="ada@example.com")
    duplicate = fresh_id()

    deliver(*_people(page, 2), _fetched(page, duplicate, phone=None))

    assert counts(owner.org_id)["leads"] == 3
    assert (ingested("meta_lead_ads", duplicate)["outcome"], ingested("meta_lead_ads", duplicate)["lead_id"]) == (
        "duplicate",
        existing,
    )


def test_two_leads_of_a_person_whose_lead_was_lost_reopen_it_once_then_are_a_duplicate(owner, page):
    existing = insert_lead(owner.org_id, default_pipeline(owner.org_id), "lost", email="ada@example.com")
    first, second = fresh_id(), fresh_id()

    assert deliver(_fetched(page, first), _fetched(page, second)) == {"batchItemFailures": []}

    (lead,) = lead_rows(owner.org_id)
    assert (lead["id"], lead["status"], lead["returned_via"]) == (existing, "new", "meta")
    assert [ingested("meta_lead_ads", ref)["outcome"] for ref in (first, second)] == ["reopened", "duplicate"]


def test_the_same_leadgen_twice_in_one_batch_is_taken_in_once(owner, page):
    message = _fetched(page, fresh_id())
    assert deliver(message, message) == {"batchItemFailures": []}
    assert counts(owner.org_id) == {"leads": 1, "attributions": 1, "tasks": 1, "receipts": 1}


def test_a_replayed_lead_in_a_batch_of_new_ones_writes_nothing_again(owner, page):
    replayed = _fetched(page, fresh_id(), email="first@example.com", phone=None)
    deliver(replayed)

    assert deliver(replayed, *_people(page, 3)) == {"batchItemFailures": []}

    assert counts(owner.org_id) == {"leads": 4, "attributions": 4, "tasks": 4, "receipts": 4}


def test_a_meta_lead_and_a_whatsapp_lead_in_one_batch_are_both_taken_in(owner, page):
    number = fresh_id()
    connect_number(owner, number)
    whatsapp = webhook_message(
        "whatsapp", whatsapp_payload(number, wamid=f"wamid.{fresh_id()}", referral=ctwa_referral(ctwa_clid=fresh_id()))
    )

    assert deliver(_fetched(page, fresh_id()), whatsapp) == {"batchItemFailures": []}

    assert sorted(lead["source"] for lead in lead_rows(owner.org_id)) == ["facebook", "whatsapp"]


def test_a_record_that_does_not_read_is_rejected_alone_and_the_rest_of_the_batch_is_taken_in(owner, page):
    unreadable = {"kind": "meta.lead", "payload": {"pageId": page}}  # no leadgen id, no lead
    assert deliver(unreadable, *_people(page, 2)) == {"batchItemFailures": []}
    assert counts(owner.org_id)["leads"] == 2


def test_a_lead_that_fails_for_now_fails_only_its_record_and_is_taken_in_on_redelivery(owner, page, monkeypatch):
    from leadcrm.leads import batch_intake, intake

    find_same_person, same_person_candidates = intake.find_same_person, batch_intake.same_person_candidates
    unlucky = "unlucky@example.com"

    def find(conn, organization_id, email, phone, **kwargs):
        if email == unlucky:
            raise ConnectionResetError("the database went away")
        return find_same_person(conn, organization_id, email, phone, **kwargs)

    def candidates(conn, organization_id, people):
        if any(email == unlucky for email, _ in people):
            raise ConnectionResetError("the database went away")
        return same_person_candidates(conn, organization_id, people)

    good = _people(page, 3)
    failing_id = fresh_id()
    failing = _fetched(page, failing_id, email=unlucky, phone=None)
    monkeypatch.setattr(intake, "find_same_person", find)
    monkeypatch.setattr(batch_intake, "same_person_candidates", candidates)
    records = [sqs_record(body) for body in (good[0], failing, *good[1:])]
    from ingestion.handler import lambda_handler

    response = lambda_handler(sqs_event(*records), lambda_context("leadcrm-ingestion"))

    assert response == {"batchItemFailures": [{"itemIdentifier": records[1]["messageId"]}]}
    assert counts(owner.org_id)["leads"] == 3
    assert ingested("meta_lead_ads", failing_id) is None  # its claim went with its transaction
    monkeypatch.undo()
    assert deliver(failing) == {"batchItemFailures": []}
    assert counts(owner.org_id) == {"leads": 4, "attributions": 4, "tasks": 4, "receipts": 4}


def test_two_batches_of_the_same_people_in_opposite_orders_at_once_make_one_lead_per_person(
    owner, page, monkeypatch, caplog
):
    """Two batches of the same people at once: one lead per person, the other delivery of each a duplicate of
    it, and neither batch retaken lead by lead (the person locks are taken in one global order)."""
    from leadcrm.ingestion.rules.meta import FetchedMetaLead
    from leadcrm.ingestion.webhook_leads import Outcome, ingest_deliveries
    from tests.support.concurrency import run_together
    from tests.support.ingestion_helpers import wide_pool

    def fetched(i: int) -> FetchedMetaLead:
        leadgen_id = fresh_id()
        # a hook of its own: the two batches wait for each other on nothing before the person locks
        lead = graph_lead(leadgen_id, email=f"same{i}@example.com", phone=f"+4477009002{i:02d}", form_id=fresh_id())
        return FetchedMetaLead(LeadgenChange(page_id=page, leadgen_id=leadgen_id), lead)

    first = [fetched(i) for i in range(5)]
    second = [fetched(i) for i in reversed(range(5))]
    with wide_pool(monkeypatch):
        results, errors = run_together([lambda: ingest_deliveries(first), lambda: ingest_deliveries(second)])

    assert errors == [None, None]
    assert "a batch of webhook leads failed" not in caplog.text  # no deadlock, no retake lead by lead
    outcomes = sorted(r.outcome for batch in results for r in batch)
    assert outcomes == [Outcome.CREATED] * 5 + [Outcome.DUPLICATE] * 5
    assert counts(owner.org_id) == {"leads": 5, "attributions": 10, "tasks": 5, "receipts": 10}


# What one SQS batch of ten new leads sends to the database (issue 23): routing, claims, hooks, the person
# locks with the organization's data, the dedup candidates, the leads with everything written with them, and
# the attributions with the claims' outcomes and the outbox rows; a WhatsApp batch adds its threads and its
# messages (with the threads moved and the leads stamped). One commit, whatever the batch's size.
META_BATCH_STATEMENTS = 7
WHATSAPP_BATCH_STATEMENTS = 9


def _statements_of(*bodies: dict[str, Any]) -> int:
    from leadcrm.platform.db.engine import get_engine
    from tests.support.database import count_statements

    with count_statements(get_engine()) as sent:
        assert deliver(*bodies) == {"batchItemFailures": []}
    return len(sent)


def test_a_batch_of_ten_meta_leads_is_taken_in_by_a_fixed_number_of_statements(owner, page):
    deliver(_fetched(page, fresh_id(), email="earlier@example.com", phone=None))  # its pipeline and hook are there

    assert _statements_of(*_people(page, 10)) == META_BATCH_STATEMENTS
    assert counts(owner.org_id) == {"leads": 11, "attributions": 11, "tasks": 11, "receipts": 11}


def test_a_batch_of_ten_whatsapp_referrals_takes_in_its_leads_and_records_its_messages_in_one_go(owner):
    number = fresh_id()
    connect_number(owner, number)

    def referral(i: int) -> dict[str, Any]:
        click = ctwa_referral(ctwa_clid=fresh_id())
        payload = whatsapp_payload(number, wamid=f"wamid.{fresh_id()}", wa_id=f"4477009003{i:02d}", referral=click)
        return webhook_message("whatsapp", payload)

    deliver(referral(99))  # the organization's pipeline and the ad's hook are there

    assert _statements_of(*(referral(i) for i in range(10))) == WHATSAPP_BATCH_STATEMENTS
    assert counts(owner.org_id) == {"leads": 11, "attributions": 11, "tasks": 11, "receipts": 11}
