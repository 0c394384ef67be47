"""The CSV import's assignment option (issue 25): with `applyAssignmentRules` the leads an import creates get
owners from the organization's assignment rules, in each chunk's transaction; without it they stay unowned."""

from __future__ import annotations

from collections import Counter

import pytest

from leadcrm.leads.rules.assignment import RULE_ASSIGNED_ACTIVITY
from tests.support.api import call_api
from tests.support.capture_helpers import activities_of, lead_rows
from tests.support.factories import make_caller
from tests.support.ingestion_helpers import csv_text, imports_path, make_imports_bucket, run_queued_imports, upload

HEADER = ["Name", "Email"]
ROWS = [[f"Person {n}", f"person{n}@example.com"] for n in range(4)]


@pytest.fixture(autouse=True)
def _aws(event_bus, ingestion_queue, monkeypatch):
    make_imports_bucket(monkeypatch)


@pytest.fixture
def owner():
    return make_caller(role="owner")


@pytest.fixture
def coaches(owner):
    return [make_caller(role="coach", organization=owner.organization) for _ in range(2)]


def _round_robin(owner, coaches) -> None:
    body = {"name": "Imports", "strategy": "round_robin", "userIds": [str(c.user.id) for c in coaches]}
    path = f"/organizations/{owner.org_id}/lead-assignment-rules"
    assert call_api("POST", path, sub=owner.sub, body=body).status == 201


def _import(owner, body: dict, queue) -> dict:
    created = call_api("POST", imports_path(owner), sub=owner.sub, body=body).data
    upload(created, csv_text(HEADER, *ROWS))
    job_id = created["job"]["id"]
    assert call_api("POST", imports_path(owner, f"/{job_id}/start"), sub=owner.sub).status == 202
    assert run_queued_imports(queue) == {"batchItemFailures": []}
    return call_api("GET", imports_path(owner, f"/{job_id}"), sub=owner.sub).data


def test_an_import_with_the_option_spreads_its_leads_by_the_rules(owner, coaches, ingestion_queue):
    _round_robin(owner, coaches)

    job = _import(owner, {"fileName": "leads.csv", "applyAssignmentRules": True}, ingestion_queue)

    assert (job["applyAssignmentRules"], job["createdCount"]) == (True, 4)
    rows = lead_rows(owner.org_id)
    assert Counter(r["assigned_to_user_id"] for r in rows) == {coaches[0].user.id: 2, coaches[1].user.id: 2}
    assert all(len(activities_of(r["id"], RULE_ASSIGNED_ACTIVITY)) == 1 for r in rows)


def test_an_import_without_the_option_leaves_its_leads_unassigned(owner, coaches, ingestion_queue):
    _round_robin(owner, coaches)

    job = _import(owner, {"fileName": "leads.csv"}, ingestion_queue)

    assert job["applyAssignmentRules"] is False
    assert {r["assigned_to_user_id"] for r in lead_rows(owner.org_id)} == {None}
