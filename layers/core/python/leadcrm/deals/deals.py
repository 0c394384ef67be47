"""Deals (staff): open, edit, move through the pipeline, reactivate, compensate (reads: deals.queries).

Every write takes the deal row (`SELECT … FOR UPDATE`) and checks the version the caller read: two staff
moving one deal queue on the lock, and the second finds the version moved on (409 DEAL_VERSION_CONFLICT)
instead of silently applying a change made against a deal that no longer looks like what they saw. Then
the pure rules of `deals.rules.deals` decide, and the write bumps the version. Each change is written three
times in the same transaction: a `deal_history` row (the deal's audit trail), an entry on the lead's
timeline (when the deal has a lead; best-effort, `leads.activity`) and an outbox event (ids only).

Closed-won is sealed: the service refuses every change (409 DEAL_SEALED) and migration 0017's trigger
refuses it to any other writer; a correction is a compensating record beside the deal.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from sqlalchemy import Connection, insert, select, update

from leadcrm.deals.pipelines import DealPipeline
from leadcrm.deals.queries import deal_not_found, read_deal
from leadcrm.deals.rules import deals as rules
from leadcrm.deals.rules.deals import (
    CONFLICT_REFUSALS,
    DealRefused,
    DealStatus,
    ForecastCategory,
    OfferType,
    StagePoint,
    Transition,
)
from leadcrm.deals.tables import deal_history, deals
from leadcrm.directory.rules import Actor
from leadcrm.directory.staff import require_assignable_staff
from leadcrm.leads.activity import record_activity
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import AppError, BadRequest, Conflict
from leadcrm.platform.events import DomainEvent
from leadcrm.platform.ids import uuid7

# Outbox event types (ids only in their payloads).
DEAL_CREATED = "deal.created"
DEAL_UPDATED = "deal.updated"
DEAL_STAGE_CHANGED = "deal.stage_changed"
DEAL_STALLED = "deal.stalled"
DEAL_REACTIVATED = "deal.reactivated"
DEAL_COMPENSATION_RECORDED = "deal.compensation_recorded"

# deal_history.type, and the lead timeline's entry types (lead_activity_events.type) for the same changes.
HISTORY_CREATED = "created"
HISTORY_UPDATED = "updated"
HISTORY_STAGE_CHANGED = "stage_changed"
HISTORY_STALLED = "stalled"
HISTORY_REACTIVATED = "reactivated"
HISTORY_COMPENSATION = "compensation_recorded"
HISTORY_OWNER_HANDED_OVER = "owner_handed_over"
HISTORY_MEMBER_LINKED = "member_linked"
TIMELINE_TYPES = {
    HISTORY_CREATED: "deal_created",
    HISTORY_UPDATED: "deal_updated",
    HISTORY_STAGE_CHANGED: "deal_stage_changed",
    HISTORY_STALLED: "deal_stalled",
    HISTORY_REACTIVATED: "deal_reactivated",
    HISTORY_COMPENSATION: "deal_compensation_recorded",
    HISTORY_OWNER_HANDED_OVER: "deal_owner_changed",
}


def refusal_error(refused: DealRefused) -> AppError:
    messages = {
        rules.Refusal.SEALED: "The deal is closed-won and sealed; record a compensation instead.",
        rules.Refusal.CLOSED: "The deal is closed-lost; reactivate it first.",
        rules.Refusal.STALLED: "The deal is stalled; reactivate it first.",
        rules.Refusal.NOT_ALLOWED: "The deal cannot move from its stage to that one.",
        rules.Refusal.NOT_STALLED_OR_LOST: "Only a stalled or closed-lost deal is reactivated.",
        rules.Refusal.ACTIVITY_REQUIRED: "Moving to discovery needs the discovery activity's time (activityAt).",
        rules.Refusal.PROPOSAL_REFERENCE_REQUIRED: "A proposal needs a document or a quote reference.",
        rules.Refusal.NEGOTIATION_ACTIVITY_REQUIRED: "Negotiation needs the negotiation activity (activityNote).",
        rules.Refusal.CLOSE_REASON_REQUIRED: "Closing won needs a closure reason.",
        rules.Refusal.LOSS_REASON_REQUIRED: "Closing lost needs a loss reason code.",
        rules.Refusal.REACTIVATION_REASON_REQUIRED: "A reactivation needs a reason.",
        rules.Refusal.SAME_STAGE: "The deal is already on that stage.",
    }
    error_type = Conflict if refused.refusal in CONFLICT_REFUSALS else BadRequest
    return error_type(messages[refused.refusal], code=refused.refusal.value)


# -- writing: shared pieces ------------------------------------------------------------------------------


def lock_deal(conn: Connection, organization_id: uuid.UUID, deal_id: uuid.UUID, version: int | None) -> dict[str, Any]:
    """The deal row locked until the transaction ends; 404 for another organization's, 409 when the caller
    read another version (`None`: the caller does not name one, e.g. the compensation of a sealed deal)."""
    row = (
        conn.execute(
            select(deals).where(deals.c.organization_id == organization_id, deals.c.id == deal_id).with_for_update()
        )
        .mappings()
        .first()
    )
    if row is None:
        raise deal_not_found()
    if version is not None and row["version"] != version:
        raise Conflict(
            "The deal changed since you read it; reload and try again.",
            code="DEAL_VERSION_CONFLICT",
            currentVersion=row["version"],
        )
    return dict(row)


def history_row(
    actor_user_id: uuid.UUID | None,
    deal: Mapping[str, Any],
    history_type: str,
    *,
    transition: Transition | None = None,
    reason: str | None = None,
    payload: dict[str, Any] | None = None,
) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": uuid7(),
        "organization_id": deal["organization_id"],
        "deal_id": deal["id"],
        "type": history_type,
        "actor_user_id": actor_user_id,
        "reason": reason,
        "payload": payload or {},
        "from_stage_id": None,
        "to_stage_id": None,
        "from_status": None,
        "to_status": None,
    }
    if transition is not None:
        row.update(
            from_stage_id=transition.from_stage.id,
            to_stage_id=transition.to_stage.id,
            from_status=transition.from_status.value,
            to_status=transition.to_status.value,
        )
    return row


def record_history(
    uow: UnitOfWork, actor: Actor, deal: Mapping[str, Any], history: dict[str, Any], event: DomainEvent
) -> None:
    """The change on the deal's history, the lead's timeline and the outbox."""
    conn = uow.connection
    conn.execute(insert(deal_history).values(**history))
    if deal["lead_id"] is not None:
        timeline_payload = {"dealId": str(deal["id"]), **_ids_only(history)}
        record_activity(
            conn,
            deal["organization_id"],
            deal["lead_id"],
            TIMELINE_TYPES[history["type"]],
            timeline_payload,
            actor.user_id,
        )
    uow.add_event(event)


def _ids_only(history: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, name in (
        ("from_stage_id", "fromStageId"),
        ("to_stage_id", "toStageId"),
        ("from_status", "fromStatus"),
        ("to_status", "toStatus"),
    ):
        if history.get(key) is not None:
            out[name] = str(history[key])
    return out


def deal_event(event_type: str, actor: Actor, deal: Mapping[str, Any], **extra: Any) -> DomainEvent:
    return DomainEvent(
        type=event_type,
        organization_id=deal["organization_id"],
        aggregate_id=deal["id"],
        payload={
            "dealId": str(deal["id"]),
            "leadId": str(deal["lead_id"]) if deal["lead_id"] else None,
            "membershipId": str(deal["membership_id"]) if deal["membership_id"] else None,
            "actorUserId": str(actor.user_id) if actor.user_id else None,
            **extra,
        },
    )


def _write(conn: Connection, deal: Mapping[str, Any], values: dict[str, Any]) -> None:
    conn.execute(
        update(deals)
        .where(deals.c.organization_id == deal["organization_id"], deals.c.id == deal["id"])
        .values(**values, version=deals.c.version + 1, updated_at=sql_now())
    )


def stage_point(pipeline: DealPipeline, stage_id: uuid.UUID) -> StagePoint:
    stage = pipeline.stage(stage_id)
    return StagePoint(id=stage.id, kind=stage.kind)


# -- create ----------------------------------------------------------------------------------------------








# -- edit ------------------------------------------------------------------------------------------------

# Columns a PATCH may change, by the names the history shows.
EDITABLE = {
    "title": "title",
    "offer_type": "offerType",
    "offer_ref": "offerRef",
    "value_minor": "valueMinor",
    "currency": "currency",
    "expected_close_date": "expectedCloseDate",
    "owner_user_id": "assigneeUserId",
    "probability": "probability",
    "forecast_category": "forecastCategory",
}
# Free text stays out of the history's from/to values (only that it changed is recorded).
_TEXT_FIELDS = frozenset({"title", "offer_ref"})


@dataclass(frozen=True)
class DealChange:
    """Column name → new value, for the fields a PATCH sent (None clears a nullable one)."""

    changes: dict[str, Any] = field(default_factory=dict)


def update_deal(uow: UnitOfWork, actor: Actor, deal_id: uuid.UUID, version: int, change: DealChange) -> dict[str, Any]:
    """Edits an open or stalled deal. 409 DEAL_SEALED on closed-won, DEAL_CLOSED on closed-lost."""
    conn = uow.connection
    deal = lock_deal(conn, actor.organization_id, deal_id, version)
    try:
        rules.require_changeable(DealStatus(deal["status"]))
    except DealRefused as refused:
        raise refusal_error(refused) from None
    values = {name: _stored(value) for name, value in change.changes.items() if deal[name] != _stored(value)}
    if "currency" in values and not rules.valid_currency(values["currency"]):
        raise BadRequest("currency must be an ISO 4217 code.", code="CURRENCY_UNKNOWN")
    if values.get("owner_user_id") is not None:
        require_assignable_staff(conn, actor.organization_id, values["owner_user_id"])
    if not values:
        return read_deal(conn, actor.organization_id, deal_id)
    _write(conn, deal, {**values, "last_activity_at": sql_now()})
    changed = {
        EDITABLE[name]: ({} if name in _TEXT_FIELDS else {"from": _json(deal[name]), "to": _json(value)})
        for name, value in values.items()
    }
    history = history_row(actor.user_id, deal, HISTORY_UPDATED, payload={"fields": changed})
    record_history(uow, actor, deal, history, deal_event(DEAL_UPDATED, actor, deal, fields=sorted(changed)))
    return read_deal(conn, actor.organization_id, deal_id)


def _stored(value: Any) -> Any:
    return value.value if isinstance(value, ForecastCategory | OfferType) else value


def _json(value: Any) -> Any:
    if isinstance(value, uuid.UUID):
        return str(value)
    return value.isoformat() if isinstance(value, date) else value


# -- move, reactivate --------------------------------------------------------------------------------------










# -- compensation ------------------------------------------------------------------------------------------


