"""Enrichment and scoring: a versioned model per organization; each lead's score stored with the version it
came from, recomputed when its inputs change (enrichment, touches, corrections, lead.created) and, after a
model change, by the rescore_leads job in batches."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import select

from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.events import DomainEvent
from leadcrm.platform.ids import uuid7
from leadcrm.qualification.scoring import run_rescore_job
from leadcrm.qualification.tables import scoring_models
from tests.support.api import call_api
from tests.support.erase_helpers import deliver, outbox_detail, outbox_rows
from tests.support.factories import make_caller
from tests.support.follow_ups_helpers import touch
from tests.support.lead_moves_helpers import (
    activities,
    insert_leads,
    lead_row,
    patch_lead,
    pipeline_of,
    set_lead_columns,
)
from tests.support.qualification_helpers import create_model, enrich, lead_path, new_lead, qualification


@pytest.fixture
def owner():
    return make_caller(role="owner")


@pytest.fixture
def coach(owner):
    return make_caller(role="coach", organization=owner.organization)


@pytest.fixture
def task_lifecycle(ctx):
    from task_lifecycle.handler import lambda_handler

    return lambda event: lambda_handler(event, ctx)


def _score(lead_id) -> tuple[int | None, int | None, str | None]:
    row = lead_row(lead_id)
    return row["score"], row["score_model_version"], row["qualification_state"]


def test_a_new_scoring_model_is_the_next_version(owner):
    first = create_model(owner)
    second = create_model(owner, threshold=70)
    assert (first.status, second.status) == (201, 201)
    assert (first.data["version"], second.data["version"]) == (1, 2)
    listed = call_api("GET", f"/organizations/{owner.org_id}/scoring-models", sub=owner.sub).data
    assert [m["version"] for m in listed] == [2, 1]


def test_only_an_owner_or_admin_changes_the_model(coach):
    response = create_model(coach)
    assert (response.status, response.error_code) == (403, "OWNER_OR_ADMIN_ONLY")


def test_a_rule_on_an_unknown_engagement_signal_is_refused(owner):
    response = create_model(owner, [{"kind": "engagement", "signal": "telepathy", "weight": 5}])
    assert (response.status, response.error_code) == (400, "UNKNOWN_ENGAGEMENT_SIGNAL")


def test_a_comparison_rule_without_a_value_is_refused(owner):
    response = create_model(owner, [{"kind": "field", "field": "companySize", "operator": "gte", "weight": 5}])
    assert (response.status, response.error_code) == (400, "VALIDATION_FAILED")


def test_a_comparison_rule_on_a_value_that_is_not_a_number_is_refused(owner):
    """gte / lte compare numbers: with a word the rule could never add its points."""
    rule = {"kind": "field", "field": "companySize", "operator": "gte", "value": "large", "weight": 60}
    response = create_model(owner, [rule])
    assert (response.status, response.error_code) == (400, "VALIDATION_FAILED")


def test_a_model_whose_threshold_no_lead_can_reach_is_refused_and_not_kept(owner):
    rules = [
        {"kind": "field", "field": "email", "weight": 30},
        {"kind": "source", "sources": ["referral"], "weight": 20},
    ]
    response = create_model(owner, rules, threshold=60)
    assert (response.status, response.error_code) == (400, "SCORING_THRESHOLD_UNREACHABLE"), response.body
    assert (response.body["error"]["highestScore"], response.body["error"]["qualifyThreshold"]) == (50, 60)
    assert call_api("GET", f"/organizations/{owner.org_id}/scoring-models", sub=owner.sub).data == []
    assert create_model(owner, rules, threshold=50).status == 201


def test_an_enrichment_is_a_timeline_event_and_rescores_the_lead_in_the_same_request(owner, coach):
    create_model(owner)
    lead = new_lead(coach, name="Dana", email="dana.score@example.com")
    patch_lead(coach, lead["id"], {"note": "rescore"})  # the lead's own fields count: email +10

    response = enrich(coach, lead["id"], "companySize", 120, source="clearbit", confidence=0.5)

    assert response.status == 201, response.body
    assert _score(lead["id"]) == (30, 1, "scored")  # 10 (email) + 40 × 0.5 (companySize at 0.5 confidence)
    (entry,) = activities(lead["id"], "lead_enriched")
    assert entry["payload"] == {
        "enrichmentId": response.data["id"],
        "category": "firmographic",
        "field": "companySize",
        "source": "clearbit",
        "confidence": 0.5,
    }
    (event,) = outbox_rows(lead["id"], "lead.enriched")
    # The value stays in its column (ids left aside: a random UUID may spell "120").
    assert "120" not in str({k: v for k, v in event["payload"].items() if not k.endswith("Id")})


def test_what_the_lead_sent_is_never_overwritten_by_an_enrichment(coach):
    lead = new_lead(coach, name="Dana", email="dana.own@example.com")
    enrich(coach, lead["id"], "email", "dana.work@corp.example", category="demographic")

    assert lead_row(lead["id"])["email"] == "dana.own@example.com"
    found = call_api("GET", lead_path(coach, lead["id"], "/enrichments"), sub=coach.sub).data
    assert [(e["field"], e["value"]) for e in found["current"]] == [("email", "dana.work@corp.example")]


def test_the_newest_enrichment_of_a_field_is_its_value_and_the_history_is_kept(coach):
    lead = new_lead(coach, name="Dana")
    enrich(coach, lead["id"], "companySize", 10)
    enrich(coach, lead["id"], "companySize", 80)

    found = call_api("GET", lead_path(coach, lead["id"], "/enrichments"), sub=coach.sub).data

    assert [e["value"] for e in found["current"]] == [80]
    assert [e["value"] for e in found["history"]] == [80, 10]


def test_an_enrichment_needs_its_source_and_a_confidence_between_0_and_1(coach):
    lead = new_lead(coach, name="Dana")
    assert enrich(coach, lead["id"], "companySize", 10, confidence=1.5).status == 400
    assert enrich(coach, lead["id"], "companySize", 10, source="").status == 400


def test_an_enrichment_of_another_organizations_lead_is_not_found(coach):
    other = make_caller(role="coach")
    theirs = new_lead(other, name="Dana")
    response = enrich(coach, theirs["id"], "companySize", 10)
    assert (response.status, response.error_code) == (404, "LEAD_NOT_FOUND")


def test_a_touch_is_engagement_and_rescores_the_lead(owner, coach):
    create_model(owner)
    lead = new_lead(coach, name="Dana")
    response = touch(coach, lead["id"], {"channel": "call", "outcome": "no_answer", "followUp": {"action": "keep"}})
    assert response.status == 200, response.body
    touch(coach, lead["id"], {"channel": "call", "outcome": "no_answer", "followUp": {"action": "keep"}})

    assert _score(lead["id"])[0] == 20  # two touches at 10 each


def test_correcting_the_leads_own_fields_rescores_it(owner, coach):
    create_model(owner)
    lead = new_lead(coach, name="Dana")
    response = patch_lead(coach, lead["id"], {"email": "dana.fix@example.com"})
    assert response.data["score"] == 10
    assert _score(lead["id"]) == (10, 1, "scored")


def test_a_new_lead_is_scored_when_lead_created_reaches_task_lifecycle(owner, coach, task_lifecycle):
    create_model(owner, [{"kind": "source", "sources": ["referral"], "weight": 25}], threshold=25)
    lead = new_lead(coach, name="Dana", source="referral")
    assert _score(lead["id"]) == (None, None, None)

    (created,) = outbox_rows(lead["id"], "lead.created")
    assert deliver(task_lifecycle, outbox_detail(created)) == {"batchItemFailures": []}

    assert _score(lead["id"]) == (25, 1, "scored")
    assert qualification(coach, lead["id"]).data["state"] == "scored"


def test_a_model_change_rescores_every_lead_in_batches(owner):
    first = new_lead(owner, name="Dana")  # seeds the default pipeline
    more = insert_leads(owner.org_id, pipeline_of(lead_row(first["id"])["pipeline_id"]), 4)
    create_model(owner, [{"kind": "field", "field": "name", "weight": 15}], threshold=10)

    first_run = run_rescore_job(batch=2, budget_seconds=0.0001)  # one batch, then out of time
    totals = run_rescore_job(batch=2)

    assert first_run["batches"] == 1
    assert totals["rescored"] >= 4  # the job is global: other organizations' pending models count too
    assert {_score(lead_id)[:2] for lead_id in [first["id"], *more]} == {(15, 1)}
    with get_engine().connect() as conn:
        assert (
            conn.execute(
                select(scoring_models.c.rescored_at).where(scoring_models.c.organization_id == owner.org_id)
            ).scalar_one()
            is not None
        )


def test_the_newest_model_supersedes_one_still_being_applied(owner):
    new_lead(owner, name="Dana")
    create_model(owner, [{"kind": "field", "field": "name", "weight": 15}], threshold=15)
    create_model(owner, [{"kind": "field", "field": "name", "weight": 35}], threshold=35)

    run_rescore_job(batch=100)

    with get_engine().connect() as conn:
        rows = conn.execute(
            select(scoring_models.c.version, scoring_models.c.rescored_at).where(
                scoring_models.c.organization_id == owner.org_id
            )
        ).all()
    assert all(r.rescored_at is not None for r in rows)
    listed = call_api("GET", f"/organizations/{owner.org_id}/leads", sub=owner.sub).data
    assert [(lead["score"], lead["scoreModelVersion"]) for lead in listed] == [(35, 2)]


def test_an_organization_without_a_model_has_no_scores(coach):
    lead = new_lead(coach, name="Dana")
    assert call_api("POST", lead_path(coach, lead["id"], "/score"), sub=coach.sub).data["score"] is None


def test_a_reply_reaching_task_lifecycle_rescores_the_lead(owner, coach, task_lifecycle):
    """conversation.inbound_received has no handler of ours: the lead is rescored beside whatever handles it."""
    create_model(owner, [{"kind": "engagement", "signal": "replied", "weight": 40}])
    lead = new_lead(coach, name="Dana")
    set_lead_columns(lead["id"], last_inbound_at=datetime.now(UTC))
    reply = DomainEvent(
        type="conversation.inbound_received",
        organization_id=owner.org_id,
        aggregate_id=uuid7(),
        payload={"organizationId": str(owner.org_id), "leadId": lead["id"], "channel": "email"},
    )

    assert deliver(task_lifecycle, reply.detail()) == {"batchItemFailures": []}

    assert _score(lead["id"])[:2] == (40, 1)
