"""Enrichment and qualification of a lead (qualification.rules.qualification holds the state machine).

Every write takes the lead row first (`leads.moves.lock_lead`, FOR UPDATE), like every other lead write, and
records a timeline entry and an outbox event (ids, states and codes only: evidence and enriched values stay
in their columns).

- Enrichment appends a row per field to lead_enrichments (the newest row of a field is its value): the
  lead's own columns and receipts are never touched, so what the lead sent is kept apart. The score is
  recomputed in the same unit of work.
- BANT answers are kept on the lead with their evidence, who recorded them and when.
- Transitions (qualify, nurture, disqualify, requalify) are planned by the domain; qualifying also needs no
  unresolved duplicate (qualification.merges.merge_suggestions finds none). Nurturing schedules a re-evaluation,
  which the `nurture_reevaluation` job picks up.
"""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any

from sqlalchemy import Boolean, Connection, DateTime, Uuid, case, func, insert, null, select, update

from leadcrm.directory.rules import Actor
from leadcrm.leads.activity import record_activities, record_activity
from leadcrm.leads.moves import id_list, lock_lead
from leadcrm.leads.tables import leads
from leadcrm.platform import clock
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.recordsets import recordset
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import BadRequest, Conflict, NotFound
from leadcrm.platform.events import DomainEvent
from leadcrm.platform.ids import uuid7
from leadcrm.qualification import scoring
from leadcrm.qualification.queries import has_unresolved_duplicates
from leadcrm.qualification.rules.qualification import (
    DEFAULT_NURTURE_DAYS,
    Criterion,
    CriterionStatus,
    DisqualifyReason,
    QualificationAction,
    QualificationFacts,
    QualificationRefused,
    QualificationState,
    Refusal,
    plan_transition,
    reevaluate,
    updated_criteria,
)
from leadcrm.qualification.tables import lead_enrichments

logger = logging.getLogger(__name__)

LEAD_ENRICHED = "lead.enriched"
LEAD_QUALIFICATION_CHANGED = "lead.qualification_changed"
ENRICHED_ACTIVITY = "lead_enriched"
CRITERIA_ACTIVITY = "qualification_criteria_updated"
QUALIFICATION_ACTIVITY = "qualification_changed"
REEVALUATED_ACTIVITY = "qualification_reevaluated"
ENRICHMENT_HISTORY_LIMIT = 200
REEVALUATION_BATCH = 200
REEVALUATION_BUDGET_SECONDS = 20.0

# 400 for what the request itself lacks, 409 for what the lead's state does not allow.
_BAD_REQUEST = {Refusal.REASON_REQUIRED, Refusal.EVIDENCE_REQUIRED}
_MESSAGES = {
    Refusal.NOT_SCORED: "The lead has no score yet: create a scoring model first.",
    Refusal.TRANSITION_NOT_ALLOWED: "The lead's qualification state does not allow this.",
    Refusal.BELOW_THRESHOLD: "The lead's score is below the qualification threshold.",
    Refusal.CRITERIA_NOT_MET: "Budget, authority, need and timeline must all be met, with evidence.",
    Refusal.REASON_REQUIRED: "Disqualifying a lead needs a reason code.",
    Refusal.EVIDENCE_REQUIRED: "A criterion marked met needs its evidence.",
}


def refusal_error(refusal: Refusal) -> BadRequest | Conflict:
    error = BadRequest if refusal in _BAD_REQUEST else Conflict
    return error(_MESSAGES[refusal], code=refusal.value)


# -- enrichment -------------------------------------------------------------------------------------------

_ENRICHMENT_COLUMNS = (
    lead_enrichments.c.id,
    lead_enrichments.c.lead_id,
    lead_enrichments.c.category,
    lead_enrichments.c.field,
    lead_enrichments.c.value,
    lead_enrichments.c.source,
    lead_enrichments.c.confidence,
    lead_enrichments.c.actor_user_id,
    lead_enrichments.c.created_at,
)


def enrich_lead(
    uow: UnitOfWork,
    actor: Actor,
    lead_id: uuid.UUID,
    *,
    category: str,
    field: str,
    value: Any,
    source: str,
    confidence: float,
) -> dict[str, Any]:
    """Records what staff (or an integration, as `system_actor`) learned about the lead, and rescores it."""
    conn = uow.connection
    lock_lead(conn, actor.organization_id, lead_id)
    row = (
        conn.execute(
            insert(lead_enrichments)
            .values(
                id=uuid7(),
                organization_id=actor.organization_id,
                lead_id=lead_id,
                category=category,
                field=field,
                value=value,
                source=source,
                confidence=confidence,
                actor_user_id=actor.user_id,
            )
            .returning(*_ENRICHMENT_COLUMNS)
        )
        .mappings()
        .one()
    )
    payload = {
        "enrichmentId": str(row["id"]),
        "category": category,
        "field": field,
        "source": source,
        "confidence": float(confidence),
    }
    record_activity(conn, actor.organization_id, lead_id, ENRICHED_ACTIVITY, payload, actor_user_id=actor.user_id)
    uow.add_event(_event(LEAD_ENRICHED, actor, lead_id, payload))
    scoring.rescore_leads(conn, actor.organization_id, [lead_id])
    return dict(row)


def lead_enrichments_of(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> dict[str, Any]:
    require_lead(conn, organization_id, lead_id)
    history = [
        dict(r)
        for r in conn.execute(
            select(*_ENRICHMENT_COLUMNS)
            .where(lead_enrichments.c.organization_id == organization_id, lead_enrichments.c.lead_id == lead_id)
            .order_by(lead_enrichments.c.created_at.desc(), lead_enrichments.c.id.desc())
            .limit(ENRICHMENT_HISTORY_LIMIT)
        ).mappings()
    ]
    current: dict[str, dict[str, Any]] = {}
    for row in history:
        current.setdefault(row["field"], row)
    return {"current": sorted(current.values(), key=lambda r: r["field"]), "history": history}


def require_lead(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> None:
    found = conn.execute(
        select(leads.c.id).where(leads.c.organization_id == organization_id, leads.c.id == lead_id)
    ).first()
    if found is None:
        raise NotFound("Lead not found.", code="LEAD_NOT_FOUND")


# -- qualification ----------------------------------------------------------------------------------------

_QUALIFICATION_COLUMNS = (
    leads.c.id,
    leads.c.qualification_state,
    leads.c.qualification_reason,
    leads.c.qualification_criteria,
    leads.c.qualification_changed_at,
    leads.c.reevaluate_at,
    leads.c.nurture_score,
    leads.c.score,
    leads.c.score_model_version,
    leads.c.scored_at,
)


def _view(row: dict[str, Any], threshold: int | None) -> dict[str, Any]:
    return {
        "lead_id": row["id"],
        "state": row["qualification_state"],
        "reason": row["qualification_reason"],
        "criteria": row["qualification_criteria"] or {},
        "changed_at": row["qualification_changed_at"],
        "reevaluate_at": row["reevaluate_at"],
        "score": row["score"],
        "score_model_version": row["score_model_version"],
        "scored_at": row["scored_at"],
        "qualify_threshold": threshold,
    }


def _threshold(conn: Connection, organization_id: uuid.UUID) -> tuple[int | None, int]:
    model = scoring.model_in_force(conn, organization_id)
    return (model.qualify_threshold, model.nurture_days) if model else (None, DEFAULT_NURTURE_DAYS)


def _read(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> dict[str, Any]:
    return dict(
        conn.execute(
            select(*_QUALIFICATION_COLUMNS).where(leads.c.organization_id == organization_id, leads.c.id == lead_id)
        )
        .mappings()
        .one()
    )


def qualification_of(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> dict[str, Any]:
    require_lead(conn, organization_id, lead_id)
    return _view(_read(conn, organization_id, lead_id), _threshold(conn, organization_id)[0])


def rescore_now(uow: UnitOfWork, actor: Actor, lead_id: uuid.UUID) -> dict[str, Any]:
    conn = uow.connection
    lock_lead(conn, actor.organization_id, lead_id)
    scoring.rescore_leads(conn, actor.organization_id, [lead_id])
    return qualification_of(conn, actor.organization_id, lead_id)


def update_criteria(
    uow: UnitOfWork,
    actor: Actor,
    lead_id: uuid.UUID,
    changes: dict[Criterion, tuple[CriterionStatus, str | None]],
) -> dict[str, Any]:
    conn = uow.connection
    lock_lead(conn, actor.organization_id, lead_id)
    row = _read(conn, actor.organization_id, lead_id)
    try:
        criteria = updated_criteria(
            row["qualification_criteria"] or {},
            changes,
            actor=str(actor.user_id) if actor.user_id else None,
            at=clock.now().isoformat(),
        )
    except QualificationRefused as refused:
        raise refusal_error(refused.refusal) from None
    conn.execute(
        update(leads)
        .where(leads.c.id == lead_id, leads.c.organization_id == actor.organization_id)
        .values(qualification_criteria=criteria, updated_at=sql_now())
    )
    summary = {criterion.value: status.value for criterion, (status, _) in changes.items()}
    record_activity(
        conn, actor.organization_id, lead_id, CRITERIA_ACTIVITY, {"criteria": summary}, actor_user_id=actor.user_id
    )
    return qualification_of(conn, actor.organization_id, lead_id)


def transition(
    uow: UnitOfWork,
    actor: Actor,
    lead_id: uuid.UUID,
    action: QualificationAction,
    *,
    reason: DisqualifyReason | None = None,
    note: str | None = None,
    nurture_days: int | None = None,
) -> dict[str, Any]:
    """Qualify, nurture, disqualify or requalify the lead. Every transition is a new qualification event on
    the timeline (a requalification too) and a `lead.qualification_changed`."""
    conn = uow.connection
    org = actor.organization_id
    lock_lead(conn, org, lead_id)
    row = _read(conn, org, lead_id)
    threshold, model_nurture_days = _threshold(conn, org)
    facts = QualificationFacts(
        state=QualificationState(row["qualification_state"]) if row["qualification_state"] else None,
        score=row["score"],
        threshold=threshold,
        criteria=row["qualification_criteria"] or {},
        nurture_days=model_nurture_days,
    )
    try:
        planned = plan_transition(facts, action, now=clock.now(), reason=reason, nurture_days=nurture_days)
    except QualificationRefused as refused:
        raise refusal_error(refused.refusal) from None
    if action is QualificationAction.QUALIFY and has_unresolved_duplicates(conn, org, lead_id):
        raise Conflict(
            "The lead has unresolved duplicates: merge them first (see merge-suggestions).",
            code="DUPLICATES_UNRESOLVED",
        )
    conn.execute(
        update(leads)
        .where(leads.c.id == lead_id, leads.c.organization_id == org)
        .values(
            qualification_state=planned.to_state.value,
            qualification_reason=planned.reason.value if planned.reason else None,
            qualification_changed_at=sql_now(),
            reevaluate_at=planned.reevaluate_at,
            nurture_score=planned.nurture_score,
            updated_at=sql_now(),
        )
    )
    payload = {
        "action": action.value,
        "fromState": planned.from_state.value if planned.from_state else None,
        "toState": planned.to_state.value,
        "reasonCode": planned.reason.value if planned.reason else None,
        "reevaluateAt": planned.reevaluate_at.isoformat() if planned.reevaluate_at else None,
        "score": row["score"],
        "scoreModelVersion": row["score_model_version"],
    }
    # The note is staff's own words: on the timeline entry (deleted with the lead), never in the event.
    record_activity(conn, org, lead_id, QUALIFICATION_ACTIVITY, {**payload, "note": note}, actor_user_id=actor.user_id)
    uow.add_event(_event(LEAD_QUALIFICATION_CHANGED, actor, lead_id, payload))
    return qualification_of(conn, org, lead_id)


def _event(event_type: str, actor: Actor, lead_id: uuid.UUID, payload: dict[str, Any]) -> DomainEvent:
    return DomainEvent(
        type=event_type,
        organization_id=actor.organization_id,
        aggregate_id=lead_id,
        payload={
            "leadId": str(lead_id),
            **payload,
            "actorUserId": str(actor.user_id) if actor.user_id else None,
        },
    )


# -- the nurture re-evaluation job ------------------------------------------------------------------------


def run_nurture_reevaluation(
    batch: int = REEVALUATION_BATCH, budget_seconds: float = REEVALUATION_BUDGET_SECONDS
) -> dict[str, int]:
    """Nurtured leads whose re-evaluation is due: rescored with the model in force, then back to `scored`
    when the score improved (qualification.rules.qualification.reevaluate), else looked at again later. A batch per
    transaction, rows taken with SKIP LOCKED, so two runs never take the same lead."""
    totals = {"reevaluated": 0, "backToScored": 0}
    deadline = time.monotonic() + budget_seconds
    while time.monotonic() < deadline:
        done, back = _reevaluate_batch(batch)
        totals["reevaluated"] += done
        totals["backToScored"] += back
        if done < batch:
            break
    logger.info("nurture re-evaluation", extra=totals)
    return totals


def _reevaluate_batch(batch: int) -> tuple[int, int]:
    with UnitOfWork() as uow:
        conn = uow.connection
        due = conn.execute(
            select(leads.c.id, leads.c.organization_id)
            .where(
                leads.c.qualification_state == QualificationState.NURTURING.value, leads.c.reevaluate_at <= sql_now()
            )
            .order_by(leads.c.reevaluate_at)
            .limit(batch)
            .with_for_update(skip_locked=True)
        ).all()
        by_org: dict[uuid.UUID, list[uuid.UUID]] = {}
        for lead_id, organization_id in due:
            by_org.setdefault(organization_id, []).append(lead_id)
        back = 0
        now = clock.now()
        activities: list[dict[str, Any]] = []
        outcomes: list[dict[str, Any]] = []
        for organization_id, lead_ids in by_org.items():
            model = scoring.model_in_force(conn, organization_id)
            scoring.rescore_leads(conn, organization_id, lead_ids, model)
            rows = conn.execute(
                select(leads.c.id, leads.c.score, leads.c.nurture_score).where(
                    leads.c.organization_id == organization_id, leads.c.id == func.any(id_list("due_ids", lead_ids))
                )
            ).all()
            for row in rows:
                outcome = reevaluate(
                    row.score,
                    model.qualify_threshold if model else None,
                    row.nurture_score,
                    now=now,
                    nurture_days=model.nurture_days if model else DEFAULT_NURTURE_DAYS,
                )
                outcomes.append({"id": row.id, "back": outcome.back_to_scored, "next_at": outcome.next_reevaluate_at})
                if outcome.back_to_scored:
                    back += 1
                    uow.add_event(
                        DomainEvent(
                            type=LEAD_QUALIFICATION_CHANGED,
                            organization_id=organization_id,
                            aggregate_id=row.id,
                            payload={
                                "leadId": str(row.id),
                                "action": "reevaluate",
                                "fromState": QualificationState.NURTURING.value,
                                "toState": QualificationState.SCORED.value,
                                "score": row.score,
                                "actorUserId": None,
                            },
                        )
                    )
                activities.append(
                    {
                        "organization_id": organization_id,
                        "lead_id": row.id,
                        "type": REEVALUATED_ACTIVITY,
                        "payload": {
                            "score": row.score,
                            "nurtureScore": row.nurture_score,
                            "backToScored": outcome.back_to_scored,
                            "nextReevaluateAt": outcome.next_reevaluate_at.isoformat()
                            if outcome.next_reevaluate_at
                            else None,
                        },
                    }
                )
        _write_reevaluations(conn, outcomes)
        record_activities(conn, activities)
        uow.commit()
    return len(due), back


def _write_reevaluations(conn: Connection, outcomes: list[dict[str, Any]]) -> None:
    """Every outcome of a batch in one UPDATE: back to scored, or the next re-evaluation date."""
    if not outcomes:
        return
    source = recordset(
        "outcomes", "outcomes", outcomes, {"id": Uuid, "back": Boolean, "next_at": DateTime(timezone=True)}
    )
    conn.execute(
        update(leads)
        .where(leads.c.id == source.c.id, leads.c.qualification_state == QualificationState.NURTURING.value)
        .values(
            reevaluate_at=source.c.next_at,
            qualification_state=case(
                (source.c.back, QualificationState.SCORED.value), else_=leads.c.qualification_state
            ),
            qualification_changed_at=case((source.c.back, sql_now()), else_=leads.c.qualification_changed_at),
            nurture_score=case((source.c.back, null()), else_=leads.c.nurture_score),
        )
    )
