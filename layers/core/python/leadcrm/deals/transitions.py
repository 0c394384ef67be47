"""Moving a deal between stages (deals.rules.deals decides what a move needs and refuses), reactivating a lost
deal, and recording a compensation on a sealed one: each a versioned write with its history row and event."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import insert

from leadcrm.deals.deals import (
    DEAL_COMPENSATION_RECORDED,
    DEAL_REACTIVATED,
    DEAL_STAGE_CHANGED,
    HISTORY_COMPENSATION,
    HISTORY_REACTIVATED,
    HISTORY_STAGE_CHANGED,
    _write,
    deal_event,
    history_row,
    lock_deal,
    record_history,
    refusal_error,
    stage_point,
)
from leadcrm.deals.pipelines import get_deal_pipeline
from leadcrm.deals.queries import read_deal
from leadcrm.deals.rules import deals as rules
from leadcrm.deals.rules.deals import (
    DealRefused,
    DealStatus,
    Evidence,
    StageKind,
    StagePoint,
    Transition,
)
from leadcrm.deals.tables import deal_compensations
from leadcrm.directory.rules import Actor
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import Conflict
from leadcrm.platform.ids import uuid7


def move_deal(
    uow: UnitOfWork, actor: Actor, deal_id: uuid.UUID, version: int, stage_id: uuid.UUID, evidence: Evidence
) -> dict[str, Any]:
    """A staff move along the pipeline (deals.rules.deals.plan_move); closing won seals value, currency and date."""
    conn = uow.connection
    deal = lock_deal(conn, actor.organization_id, deal_id, version)
    pipeline = get_deal_pipeline(conn, actor.organization_id)
    try:
        transition = rules.plan_move(
            DealStatus(deal["status"]),
            stage_point(pipeline, deal["stage_id"]),
            stage_point(pipeline, stage_id),
            evidence,
        )
    except DealRefused as refused:
        raise refusal_error(refused) from None
    values: dict[str, Any] = {
        "stage_id": transition.to_stage.id,
        "status": transition.to_status.value,
        "stage_entered_at": sql_now(),
        "last_activity_at": sql_now(),
    }
    reason = None
    if transition.to_status is DealStatus.WON:
        reason = evidence.close_reason
        values.update(closed_at=sql_now(), close_reason=evidence.close_reason)
    elif transition.to_status is DealStatus.LOST:
        assert evidence.loss_reason is not None
        reason = evidence.loss_reason.value
        values.update(closed_at=sql_now(), loss_reason=reason, loss_note=evidence.loss_note)
    _write(conn, deal, values)
    history = history_row(
        actor.user_id, deal, HISTORY_STAGE_CHANGED, transition=transition, reason=reason, payload=_evidence(evidence)
    )
    if transition.seals:
        history["payload"]["sealed"] = {"valueMinor": deal["value_minor"], "currency": deal["currency"]}
    event = deal_event(DEAL_STAGE_CHANGED, actor, deal, **_transition_payload(transition))
    record_history(uow, actor, deal, history, event)
    return read_deal(conn, actor.organization_id, deal_id)

def _evidence(evidence: Evidence) -> dict[str, Any]:
    found = {
        "activityAt": evidence.activity_at.isoformat() if evidence.activity_at else None,
        "activityNote": evidence.activity_note,
        "documentRef": evidence.document_ref,
        "quoteRef": evidence.quote_ref,
        "lossNote": evidence.loss_note,
    }
    return {name: value for name, value in found.items() if value}

def _transition_payload(transition: Transition) -> dict[str, Any]:
    return {
        "fromStageId": str(transition.from_stage.id),
        "toStageId": str(transition.to_stage.id),
        "fromStatus": transition.from_status.value,
        "toStatus": transition.to_status.value,
    }

def reactivate_deal(uow: UnitOfWork, actor: Actor, deal_id: uuid.UUID, version: int, reason: str) -> dict[str, Any]:
    """Stalled → open on the stage it stalled on; closed-lost → open on the first discovery stage (audited:
    the history keeps the actor, the reason, the loss it undid). Closed-won: 409 DEAL_SEALED."""
    conn = uow.connection
    deal = lock_deal(conn, actor.organization_id, deal_id, version)
    pipeline = get_deal_pipeline(conn, actor.organization_id)
    discovery = pipeline.first_of(StageKind.DISCOVERY)
    try:
        transition = rules.plan_reactivation(
            DealStatus(deal["status"]),
            stage_point(pipeline, deal["stage_id"]),
            StagePoint(discovery.id, discovery.kind) if discovery else None,
            reason,
        )
    except DealRefused as refused:
        raise refusal_error(refused) from None
    values: dict[str, Any] = {"status": DealStatus.OPEN.value, "stalled_at": None, "last_activity_at": sql_now()}
    payload: dict[str, Any] = {}
    if transition.from_status is DealStatus.LOST:
        values.update(
            stage_id=transition.to_stage.id,
            stage_entered_at=sql_now(),
            closed_at=None,
            loss_reason=None,
            loss_note=None,
        )
        payload = {"undidLoss": {"lossReason": deal["loss_reason"], "closedAt": deal["closed_at"].isoformat()}}
    _write(conn, deal, values)
    history = history_row(
        actor.user_id, deal, HISTORY_REACTIVATED, transition=transition, reason=reason.strip(), payload=payload
    )
    reactivated = deal_event(DEAL_REACTIVATED, actor, deal, **_transition_payload(transition))
    record_history(uow, actor, deal, history, reactivated)
    if transition.to_stage.id != transition.from_stage.id:
        uow.add_event(deal_event(DEAL_STAGE_CHANGED, actor, deal, reactivated=True, **_transition_payload(transition)))
    return read_deal(conn, actor.organization_id, deal_id)

def record_compensation(
    uow: UnitOfWork, actor: Actor, deal_id: uuid.UUID, amount_minor: int, reason: str, document_ref: str | None
) -> dict[str, Any]:
    """A correction of a closed-won deal, recorded beside it (spec: "Compensating documents created; deal
    not reopened"): a signed amount in the deal's currency. 409 DEAL_NOT_WON for any other deal."""
    conn = uow.connection
    deal = lock_deal(conn, actor.organization_id, deal_id, None)
    if deal["status"] != DealStatus.WON:
        raise Conflict("Only a closed-won deal is corrected by a compensation.", code="DEAL_NOT_WON")
    compensation_id = uuid7()
    row = (
        conn.execute(
            insert(deal_compensations)
            .values(
                id=compensation_id,
                organization_id=actor.organization_id,
                deal_id=deal_id,
                amount_minor=amount_minor,
                currency=deal["currency"],
                reason=reason,
                document_ref=document_ref,
                created_by_user_id=actor.user_id,
            )
            .returning(*deal_compensations.c)
        )
        .mappings()
        .one()
    )
    history = history_row(
        actor.user_id,
        deal,
        HISTORY_COMPENSATION,
        reason=reason,
        payload={"compensationId": str(compensation_id), "amountMinor": amount_minor, "currency": deal["currency"]},
    )
    event = deal_event(DEAL_COMPENSATION_RECORDED, actor, deal, compensationId=str(compensation_id))
    record_history(uow, actor, deal, history, event)
    return dict(row)
