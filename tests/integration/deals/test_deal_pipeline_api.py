"""The deal pipeline: seeded once per organization on first use (race-safe), edited by owners and admins
with its invariants kept."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from leadcrm.deals.pipelines import get_deal_pipeline
from leadcrm.deals.tables import deal_pipelines, deal_stages
from leadcrm.platform.db.uow import UnitOfWork
from tests.support.api import call_api
from tests.support.concurrency import run_together
from tests.support.deals_helpers import deals_path, ok, open_deal
from tests.support.factories import make_caller, make_organization


@pytest.fixture(autouse=True)
def _bus(event_bus):
    """Deal writes publish their events after commit; the bus exists."""


@pytest.fixture
def owner():
    return make_caller(role="owner")


def _pipeline_path(caller) -> str:
    return f"{deals_path(caller.org_id)}/pipeline"


def _stage(pipeline, kind):
    return next(s for s in pipeline["stages"] if s["kind"] == kind)


def test_the_first_read_seeds_the_specs_pipeline(owner):
    pipeline = ok(call_api("GET", _pipeline_path(owner), sub=owner.sub))
    assert pipeline["name"] == "Deals"
    assert [
        (s["name"], s["kind"], s["probability"], s["forecastCategory"], s["rottingDays"]) for s in pipeline["stages"]
    ] == [
        ("New", "new", 10, "pipeline", None),
        ("Discovery", "discovery", 25, "pipeline", None),
        ("Proposal", "proposal", 50, "best_case", 14),
        ("Negotiation", "negotiation", 75, "best_case", 14),
        ("Closed-Won", "won", 100, "closed", None),
        ("Closed-Lost", "lost", 0, "closed", None),
    ]
    assert ok(call_api("GET", _pipeline_path(owner), sub=owner.sub))["id"] == pipeline["id"]


def test_concurrent_first_uses_seed_one_pipeline(private_engine):
    org = make_organization()

    def first_use():
        with UnitOfWork(engine=private_engine) as uow:
            pipeline = get_deal_pipeline(uow.connection, org.id)
            uow.commit()
            return pipeline.id

    results, errors = run_together([first_use] * 4)
    assert errors == [None] * 4 and len(set(results)) == 1
    with private_engine.connect() as conn:
        pipelines = conn.execute(
            select(func.count()).select_from(deal_pipelines).where(deal_pipelines.c.organization_id == org.id)
        ).scalar_one()
        stages = conn.execute(
            select(func.count()).select_from(deal_stages).where(deal_stages.c.organization_id == org.id)
        ).scalar_one()
    assert (pipelines, stages) == (1, 6)


def test_an_owner_edits_a_stages_defaults_and_open_deals_follow_them(owner):
    deal = open_deal(owner)
    new = _stage(ok(call_api("GET", _pipeline_path(owner), sub=owner.sub)), "new")
    edited = ok(
        call_api(
            "PATCH",
            f"{_pipeline_path(owner)}/stages/{new['id']}",
            sub=owner.sub,
            body={"name": "Enquiry", "probability": 15},
        )
    )
    assert (_stage(edited, "new")["name"], _stage(edited, "new")["probability"]) == ("Enquiry", 15)
    assert ok(call_api("GET", deals_path(owner.org_id, deal["id"]), sub=owner.sub))["effectiveProbability"] == 15


def test_late_negotiation_is_added_after_negotiation_as_a_commit_stage(owner):
    pipeline = ok(
        call_api(
            "POST",
            f"{_pipeline_path(owner)}/stages",
            sub=owner.sub,
            body={
                "name": "Late negotiation",
                "kind": "negotiation",
                "probability": 90,
                "forecastCategory": "commit",
                "rottingDays": 7,
            },
        ),
        201,
    )
    assert [s["name"] for s in pipeline["stages"]][3:6] == ["Negotiation", "Late negotiation", "Closed-Won"]
    assert [s["position"] for s in pipeline["stages"]] == list(range(7))


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"name": "Bonus", "kind": "won", "probability": 100, "forecastCategory": "commit"}, "VALIDATION_FAILED"),
        (
            {"name": "Intro", "kind": "new", "probability": 5, "forecastCategory": "pipeline", "position": 5},
            "DEAL_STAGE_ORDER",
        ),
        (
            {"name": "Intro", "kind": "new", "probability": 5, "forecastCategory": "pipeline", "rottingDays": 3},
            "DEAL_STAGE_CANNOT_ROT",
        ),
    ],
)
def test_an_added_stage_keeps_the_invariants(owner, body, code):
    response = call_api("POST", f"{_pipeline_path(owner)}/stages", sub=owner.sub, body=body)
    assert (response.status, response.error_code) == (400, code)


def test_the_closed_stages_keep_their_probability_and_category(owner):
    won = _stage(ok(call_api("GET", _pipeline_path(owner), sub=owner.sub)), "won")
    path = f"{_pipeline_path(owner)}/stages/{won['id']}"
    assert call_api("PATCH", path, sub=owner.sub, body={"probability": 90}).error_code == "DEAL_STAGE_PROBABILITY_FIXED"
    assert call_api("PATCH", path, sub=owner.sub, body={"forecastCategory": "commit"}).error_code == (
        "DEAL_STAGE_CATEGORY_MISMATCH"
    )
    assert _stage(ok(call_api("PATCH", path, sub=owner.sub, body={"name": "Signed"})), "won")["name"] == "Signed"


def test_a_reorder_keeps_the_phase_order(owner):
    pipeline = ok(call_api("GET", _pipeline_path(owner), sub=owner.sub))
    ids = [s["id"] for s in pipeline["stages"]]
    swapped = [ids[1], ids[0], *ids[2:]]
    response = call_api("PUT", f"{_pipeline_path(owner)}/stages/order", sub=owner.sub, body={"stageIds": swapped})
    assert (response.status, response.error_code) == (400, "DEAL_STAGE_ORDER")
    closed_swapped = [*ids[:4], ids[5], ids[4]]
    reordered = ok(
        call_api("PUT", f"{_pipeline_path(owner)}/stages/order", sub=owner.sub, body={"stageIds": closed_swapped})
    )
    assert [s["kind"] for s in reordered["stages"]][4:] == ["lost", "won"]


def test_coaches_read_but_do_not_edit_the_pipeline(owner):
    coach = make_caller(role="coach", organization=owner.organization)
    assert call_api("GET", _pipeline_path(coach), sub=coach.sub).status == 200
    response = call_api("PATCH", _pipeline_path(coach), sub=coach.sub, body={"name": "Mine"})
    assert (response.status, response.error_code) == (403, "OWNER_OR_ADMIN_ONLY")
    assert ok(call_api("PATCH", _pipeline_path(owner), sub=owner.sub, body={"name": "Sales deals"}))["name"] == (
        "Sales deals"
    )


def test_another_organizations_stage_is_not_found(owner):
    stranger = make_caller(role="owner")
    foreign = _stage(ok(call_api("GET", _pipeline_path(stranger), sub=stranger.sub)), "new")
    response = call_api("PATCH", f"{_pipeline_path(owner)}/stages/{foreign['id']}", sub=owner.sub, body={"name": "x"})
    assert (response.status, response.error_code) == (404, "DEAL_STAGE_NOT_FOUND")
