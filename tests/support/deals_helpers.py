"""Helpers for the deals, deal pipeline, rotting, owner departure and forecast tests."""

from __future__ import annotations

import uuid
from datetime import date, datetime
from typing import Any

from sqlalchemy import insert, select, update

from leadcrm.deals.pipelines import get_deal_pipeline
from leadcrm.deals.tables import deal_history, deals
from leadcrm.leads.tables import lead_activity_events
from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.ids import uuid7
from leadcrm.platform.tables import outbox
from leadcrm.work.tables import tasks
from tests.support.api import ApiResponse, call_api, leads_path
from tests.support.factories import StaffCaller

# Evidence that satisfies every transition's rule (each test that is about one rule leaves its part out).
EVIDENCE: dict[str, dict[str, Any]] = {
    "discovery": {"activityAt": "2026-11-20T10:00:00+00:00"},
    "proposal": {"documentRef": "proposal-annual-plan.pdf"},
    "negotiation": {"activityNote": "Discussed the payment schedule"},
    "won": {"closeReason": "Signed the annual plan"},
    "lost": {"lossReason": "price", "lossNote": "Went with a cheaper studio"},
}
PATH_TO = {
    "new": [],
    "discovery": ["discovery"],
    "proposal": ["discovery", "proposal"],
    "negotiation": ["discovery", "proposal", "negotiation"],
    "won": ["discovery", "proposal", "negotiation", "won"],
    "lost": ["discovery", "proposal", "negotiation", "lost"],
}


def deals_path(org_id: Any, deal_id: Any | None = None) -> str:
    base = f"/organizations/{org_id}/deals"
    return base if deal_id is None else f"{base}/{deal_id}"


def ok(response: ApiResponse, status: int = 200) -> Any:
    assert response.status == status, response.body
    return response.data


def deal_pipeline(caller: StaffCaller) -> dict[str, Any]:
    return ok(call_api("GET", f"{deals_path(caller.org_id)}/pipeline", sub=caller.sub))


def stage_id(caller: StaffCaller, kind: str) -> str:
    return next(s["id"] for s in deal_pipeline(caller)["stages"] if s["kind"] == kind)


def create_lead(caller: StaffCaller, name: str = "Dana Cohen") -> str:
    return ok(call_api("POST", leads_path(caller.org_id), sub=caller.sub, body={"name": name}), 201)["id"]


def deal_body(**overrides: Any) -> dict[str, Any]:
    return {
        "title": "Annual plan",
        "offerType": "plan",
        "valueMinor": 120_000,
        "currency": "EUR",
        "expectedCloseDate": "2026-12-15",
        **overrides,
    }


def open_deal(caller: StaffCaller, **overrides: Any) -> dict[str, Any]:
    """A deal through the API, with a new lead unless the body names a lead or a member."""
    body = deal_body(**overrides)
    if "leadId" not in body and "membershipId" not in body:
        body["leadId"] = create_lead(caller)
    return ok(call_api("POST", deals_path(caller.org_id), sub=caller.sub, body=body), 201)


def move(caller: StaffCaller, deal: dict[str, Any], kind: str, **body: Any) -> ApiResponse:
    """Moves the deal (at the version given) to the first stage of `kind`, with `body` as the evidence."""
    payload = {"version": deal["version"], "stageId": stage_id(caller, kind), **body}
    return call_api("POST", f"{deals_path(caller.org_id, deal['id'])}/move", sub=caller.sub, body=payload)


def walk_to(caller: StaffCaller, deal: dict[str, Any], kind: str) -> dict[str, Any]:
    """Moves the deal step by step along the table to `kind`, with the evidence each step needs."""
    for step in PATH_TO[kind]:
        deal = ok(move(caller, deal, step, **EVIDENCE[step]))
    return deal


def read_deal(caller: StaffCaller, deal_id: Any) -> dict[str, Any]:
    return ok(call_api("GET", deals_path(caller.org_id, deal_id), sub=caller.sub))


def set_deal_columns(deal_id: Any, **values: Any) -> None:
    """Writes deal columns directly (backdating clocks); the seal trigger still guards won deals."""
    with get_engine().begin() as conn:
        conn.execute(update(deals).where(deals.c.id == uuid.UUID(str(deal_id))).values(**values))


def insert_deal(
    organization_id: uuid.UUID,
    *,
    kind: str,
    value_minor: int,
    currency: str = "EUR",
    expected_close_date: date,
    owner_user_id: uuid.UUID | None = None,
    status: str | None = None,
    created_at: datetime | None = None,
    closed_at: datetime | None = None,
    probability: int | None = None,
    forecast_category: str | None = None,
    lead_id: uuid.UUID | None = None,
) -> uuid.UUID:
    """A deal written straight into the table (forecast fixtures need past creation and close times), on
    the first stage of `kind` of the organization's deal pipeline."""
    deal_id = uuid7()
    with get_engine().begin() as conn:
        pipeline = get_deal_pipeline(conn, organization_id)
        stage = next(s for s in pipeline.stages if s.kind.value == kind)
        status = status or {"won": "won", "lost": "lost"}.get(kind, "open")
        values: dict[str, Any] = {
            "id": deal_id,
            "organization_id": organization_id,
            "pipeline_id": pipeline.id,
            "stage_id": stage.id,
            "status": status,
            "title": "Fixture deal",
            "offer_type": "plan",
            "value_minor": value_minor,
            "currency": currency,
            "expected_close_date": expected_close_date,
            "owner_user_id": owner_user_id,
            "probability": probability,
            "forecast_category": forecast_category,
            "lead_id": lead_id,
            "closed_at": closed_at,
            "close_reason": "fixture" if status == "won" else None,
            "loss_reason": "price" if status == "lost" else None,
            "stalled_at": closed_at or created_at or datetime.now().astimezone() if status == "stalled" else None,
        }
        if created_at is not None:
            values["created_at"] = created_at
        conn.execute(insert(deals).values(**values))
    return deal_id


def deal_row(deal_id: Any) -> dict[str, Any]:
    with get_engine().connect() as conn:
        return dict(conn.execute(select(deals).where(deals.c.id == uuid.UUID(str(deal_id)))).mappings().one())


def history_of(deal_id: Any) -> list[dict[str, Any]]:
    with get_engine().connect() as conn:
        rows = conn.execute(
            select(deal_history)
            .where(deal_history.c.deal_id == uuid.UUID(str(deal_id)))
            .order_by(deal_history.c.occurred_at, deal_history.c.id)
        ).mappings()
        return [dict(r) for r in rows]


def timeline_types(lead_id: Any) -> list[str]:
    with get_engine().connect() as conn:
        return list(
            conn.execute(
                select(lead_activity_events.c.type)
                .where(lead_activity_events.c.lead_id == uuid.UUID(str(lead_id)))
                .order_by(lead_activity_events.c.occurred_at, lead_activity_events.c.id)
            ).scalars()
        )


def events_of(org_id: uuid.UUID, event_type: str) -> list[dict[str, Any]]:
    with get_engine().connect() as conn:
        rows = conn.execute(
            select(outbox.c.type, outbox.c.aggregate_id, outbox.c.payload)
            .where(outbox.c.organization_id == org_id, outbox.c.type == event_type)
            .order_by(outbox.c.occurred_at, outbox.c.id)
        ).mappings()
        return [dict(r) for r in rows]


def tasks_of_deal(deal_id: Any) -> list[dict[str, Any]]:
    with get_engine().connect() as conn:
        rows = conn.execute(select(tasks).where(tasks.c.linked_deal_id == uuid.UUID(str(deal_id)))).mappings()
        return [dict(r) for r in rows]


def insert_task(org_id: uuid.UUID, assignee: uuid.UUID, *, status: str = "pending", lead_id: Any = None) -> uuid.UUID:
    task_id = uuid7()
    with get_engine().begin() as conn:
        conn.execute(
            insert(tasks).values(
                id=task_id,
                organization_id=org_id,
                title="Call back",
                status=status,
                assignee_user_id=assignee,
                linked_lead_id=uuid.UUID(str(lead_id)) if lead_id else None,
            )
        )
    return task_id
