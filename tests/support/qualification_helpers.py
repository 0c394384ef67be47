"""Helpers for the qualification, scoring, merge and pseudonymization tests: the routes and reads back."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import select

from leadcrm.leads.tables import leads
from leadcrm.platform.db.engine import get_engine
from leadcrm.qualification.tables import lead_merges
from tests.support.api import ApiResponse, call_api, leads_path
from tests.support.factories import StaffCaller

# A model with one rule of each kind; 60 to qualify.
DEFAULT_RULES: list[dict[str, Any]] = [
    {"kind": "field", "field": "email", "weight": 10},
    {"kind": "field", "field": "companySize", "operator": "gte", "value": 50, "weight": 40},
    {"kind": "source", "sources": ["referral"], "weight": 20},
    {"kind": "engagement", "signal": "touches", "weight": 10, "max": 30},
]


def lead_path(caller: StaffCaller, lead_id: Any, tail: str = "", *, org_id: Any = None) -> str:
    return leads_path(org_id or caller.org_id, lead_id) + tail


def new_lead(caller: StaffCaller, **body: Any) -> dict[str, Any]:
    body = body or {"name": f"Lead {uuid.uuid4().hex[:6]}"}
    response = call_api("POST", leads_path(caller.org_id), sub=caller.sub, body=body)
    assert response.status == 201, response.body
    return response.data


def create_model(
    caller: StaffCaller, rules: list[dict[str, Any]] | None = None, threshold: int = 60, **extra: Any
) -> ApiResponse:
    body = {"rules": rules or DEFAULT_RULES, "qualifyThreshold": threshold, **extra}
    return call_api("POST", f"/organizations/{caller.org_id}/scoring-models", sub=caller.sub, body=body)


def enrich(caller: StaffCaller, lead_id: Any, field: str, value: Any, **extra: Any) -> ApiResponse:
    body = {"category": "firmographic", "field": field, "value": value, "source": "clearbit", "confidence": 1.0}
    return call_api("POST", lead_path(caller, lead_id, "/enrichments"), sub=caller.sub, body={**body, **extra})


def qualification(caller: StaffCaller, lead_id: Any) -> ApiResponse:
    return call_api("GET", lead_path(caller, lead_id, "/qualification"), sub=caller.sub)


def transition(caller: StaffCaller, lead_id: Any, action: str, body: Any = None) -> ApiResponse:
    return call_api("POST", lead_path(caller, lead_id, f"/qualification/{action}"), sub=caller.sub, body=body or {})


def put_criteria(caller: StaffCaller, lead_id: Any, body: Any) -> ApiResponse:
    return call_api("PUT", lead_path(caller, lead_id, "/qualification/criteria"), sub=caller.sub, body=body)


ALL_MET = {
    name: {"status": "met", "evidence": f"{name} confirmed on the call"}
    for name in ("budget", "authority", "need", "timeline")
}


def merge(caller: StaffCaller, survivor_id: Any, merged_id: Any, *, org_id: Any = None) -> ApiResponse:
    return call_api(
        "POST",
        lead_path(caller, survivor_id, "/merge", org_id=org_id),
        sub=caller.sub,
        body={"mergedLeadId": str(merged_id)},
    )


def undo(caller: StaffCaller, merge_id: Any) -> ApiResponse:
    return call_api("POST", f"/organizations/{caller.org_id}/lead-merges/{merge_id}/undo", sub=caller.sub)


def read_lead(caller: StaffCaller, lead_id: Any) -> ApiResponse:
    return call_api("GET", leads_path(caller.org_id, lead_id), sub=caller.sub)


def lead_exists(lead_id: Any) -> bool:
    with get_engine().connect() as conn:
        return conn.execute(select(leads.c.id).where(leads.c.id == uuid.UUID(str(lead_id)))).first() is not None


def merge_row(merge_id: Any) -> dict[str, Any]:
    with get_engine().connect() as conn:
        return dict(
            conn.execute(select(lead_merges).where(lead_merges.c.id == uuid.UUID(str(merge_id)))).mappings().one()
        )
