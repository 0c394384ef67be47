"""Scoring leads with the organization's model in force (qualification.rules.scoring holds the rules).

When a score is recomputed:
- in the unit of work that changed an input, by the code that changed it: an enrichment, a touch, a
  correction of the lead's details, a merge (`rescore_leads`);
- after the events in `RESCORING_EVENTS` reach task_lifecycle (`handle_lead_changed`, leadcrm.wiring);
- after the model changes: the `rescore_leads` job walks each organization whose newest model is not yet
  applied, in id order and in batches, remembering where it stopped (`scoring_models.rescore_after_lead_id`).

Reading the facts of a batch is one statement (engagement signals and the newest enrichment per field are
correlated subqueries); writing the scores is one UPDATE from a recordset, and only changed scores are
written. A lead scored for the first time enters qualification as `scored`.

Engagement signals are pluggable: `ENGAGEMENT_SIGNALS` maps a signal name a rule may use to the SQL that
counts it for a lead (conversations can register a count of replies once messages exist).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Integer,
    Uuid,
    case,
    func,
    insert,
    literal_column,
    or_,
    select,
    update,
)
from sqlalchemy.dialects.postgresql import JSONB

from leadcrm.directory.rules import Actor
from leadcrm.directory.tables import organizations
from leadcrm.leads.moves import id_list
from leadcrm.leads.tables import lead_activity_events, leads
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.recordsets import recordset
from leadcrm.platform.db.transactions import transaction
from leadcrm.platform.errors import BadRequest
from leadcrm.platform.ids import parse_uuid, uuid7
from leadcrm.qualification.rules.qualification import QualificationState
from leadcrm.qualification.rules.scoring import (
    FieldValue,
    LeadFacts,
    ScoringModel,
    highest_score,
    model_from_row,
    score_lead,
    threshold_reachable,
)
from leadcrm.qualification.tables import lead_enrichments, scoring_models

logger = logging.getLogger(__name__)

RESCORE_BATCH = 500
# Events (by type) whose lead is rescored when task_lifecycle receives them: a new lead, a returning one
# (its empty contact fields were filled), a reply (the `replied` signal; conversations own that event and its
# handler, and its payload names the lead). leadcrm.wiring runs this beside the event's own handler.
RESCORING_EVENTS = frozenset({"lead.created", "lead.returned", "conversation.inbound_received"})
RESCORE_BUDGET_SECONDS = 20.0


def _activity_count(activity_type: str) -> Callable[[], ColumnElement]:
    def count() -> ColumnElement:
        return (
            select(func.count())
            .where(
                lead_activity_events.c.organization_id == leads.c.organization_id,
                lead_activity_events.c.lead_id == leads.c.id,
                lead_activity_events.c.type == activity_type,
            )
            .scalar_subquery()
        )

    return count


def _stamped(column: ColumnElement) -> Callable[[], ColumnElement]:
    return lambda: case((column.is_not(None), 1), else_=0)


# signal name → SQL counting it for the lead row (correlated on leads). Register more with
# `register_engagement_signal`; a rule naming an unknown signal is refused when the model is saved.
ENGAGEMENT_SIGNALS: dict[str, Callable[[], ColumnElement]] = {
    "touches": _activity_count("call_logged"),  # touches logged by staff (work.touches)
    "resubmissions": _activity_count("resubmitted"),  # the person came back through the minisite
    "reached": _stamped(leads.c.last_contacted_at),  # a person was reached at least once
    "replied": _stamped(leads.c.last_inbound_at),  # the lead wrote to us at least once
}

# The lead's own columns a `field` rule may name (camelCase, as the API shows them).
LEAD_FIELDS: dict[str, ColumnElement] = {
    "name": leads.c.name,
    "email": leads.c.email,
    "phone": leads.c.phone,
    "locale": leads.c.locale,
    "campaignId": leads.c.campaign_id,
}


def register_engagement_signal(name: str, count: Callable[[], ColumnElement]) -> None:
    ENGAGEMENT_SIGNALS[name] = count


# -- models ---------------------------------------------------------------------------------------------


def model_in_force(conn: Connection, organization_id: uuid.UUID) -> ScoringModel | None:
    row = conn.execute(
        select(
            scoring_models.c.version,
            scoring_models.c.rules,
            scoring_models.c.qualify_threshold,
            scoring_models.c.nurture_days,
        )
        .where(scoring_models.c.organization_id == organization_id)
        .order_by(scoring_models.c.version.desc())
        .limit(1)
    ).first()
    if row is None:
        return None
    return model_from_row(row.version, row.rules, row.qualify_threshold, row.nurture_days)


def create_model(
    conn: Connection, actor: Actor, rules: list[dict[str, Any]], qualify_threshold: int, nurture_days: int
) -> dict[str, Any]:
    """The organization's next model version; the rescore job applies it to every lead. Versions are
    numbered under the organization's row lock (FOR NO KEY UPDATE: it lets foreign key checks through).
    400 UNKNOWN_ENGAGEMENT_SIGNAL for a rule counting a signal no service counts, 400
    SCORING_THRESHOLD_UNREACHABLE for a model no lead could ever qualify under. The caller has passed its
    gate (owner/admin) already: these rules are never told to someone the route refuses."""
    unknown = sorted({r["signal"] for r in rules if r["kind"] == "engagement"} - set(ENGAGEMENT_SIGNALS))
    if unknown:
        raise BadRequest(
            "Unknown engagement signal.",
            code="UNKNOWN_ENGAGEMENT_SIGNAL",
            signals=unknown,
            known=sorted(ENGAGEMENT_SIGNALS),
        )
    model = model_from_row(0, rules, qualify_threshold, nurture_days)
    if not threshold_reachable(model):
        raise BadRequest(
            f"No lead can reach the qualify threshold of {qualify_threshold}: these rules give at most "
            f"{round(highest_score(model.rules))} points.",
            code="SCORING_THRESHOLD_UNREACHABLE",
            qualifyThreshold=qualify_threshold,
            highestScore=round(highest_score(model.rules)),
        )

    conn.execute(
        select(organizations.c.id).where(organizations.c.id == actor.organization_id).with_for_update(key_share=True)
    )
    version = (
        conn.execute(
            select(func.coalesce(func.max(scoring_models.c.version), 0)).where(
                scoring_models.c.organization_id == actor.organization_id
            )
        ).scalar_one()
        + 1
    )
    # An older model still being applied is superseded: the job only ever applies the newest.
    conn.execute(
        update(scoring_models)
        .where(scoring_models.c.organization_id == actor.organization_id, scoring_models.c.rescored_at.is_(None))
        .values(rescored_at=sql_now())
    )
    row = conn.execute(
        insert(scoring_models)
        .values(
            id=uuid7(),
            organization_id=actor.organization_id,
            version=version,
            rules=rules,
            qualify_threshold=qualify_threshold,
            nurture_days=nurture_days,
            created_by_user_id=actor.user_id,
        )
        .returning(*_MODEL_COLUMNS)
    )
    return dict(row.mappings().one())


_MODEL_COLUMNS = (
    scoring_models.c.id,
    scoring_models.c.version,
    scoring_models.c.rules,
    scoring_models.c.qualify_threshold,
    scoring_models.c.nurture_days,
    scoring_models.c.created_by_user_id,
    scoring_models.c.created_at,
    scoring_models.c.rescored_at,
)


def list_models(conn: Connection, organization_id: uuid.UUID, limit: int = 50) -> list[dict[str, Any]]:
    rows = conn.execute(
        select(*_MODEL_COLUMNS)
        .where(scoring_models.c.organization_id == organization_id)
        .order_by(scoring_models.c.version.desc())
        .limit(limit)
    ).mappings()
    return [dict(r) for r in rows]


# -- facts and scores -------------------------------------------------------------------------------------


def _newest_enrichments() -> ColumnElement:
    """{field: [value, confidence]} of the lead's newest enrichment per field, correlated on leads."""
    newest = (
        select(lead_enrichments.c.field, lead_enrichments.c.value, lead_enrichments.c.confidence)
        .where(
            lead_enrichments.c.organization_id == leads.c.organization_id,
            lead_enrichments.c.lead_id == leads.c.id,
        )
        .distinct(lead_enrichments.c.field)
        .order_by(lead_enrichments.c.field, lead_enrichments.c.created_at.desc(), lead_enrichments.c.id.desc())
        # Two levels down from the outer leads row: say so, or the derived table would read every lead's rows.
        .correlate(leads)
        .subquery("newest")
    )
    pair = func.jsonb_build_array(newest.c.value, newest.c.confidence)
    return select(
        func.coalesce(func.jsonb_object_agg(newest.c.field, pair), literal_column("'{}'::jsonb"), type_=JSONB)
    ).scalar_subquery()


def lead_facts(
    conn: Connection, organization_id: uuid.UUID, lead_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, LeadFacts]:
    """What scoring reads about each lead, in one statement."""
    if not lead_ids:
        return {}
    signals = {name: build().label(f"signal_{name}") for name, build in ENGAGEMENT_SIGNALS.items()}
    own = {name: column.label(f"field_{name}") for name, column in LEAD_FIELDS.items()}
    rows = conn.execute(
        select(
            leads.c.id,
            leads.c.source,
            *own.values(),
            *signals.values(),
            _newest_enrichments().label("enriched"),
        ).where(leads.c.organization_id == organization_id, leads.c.id == func.any(id_list("lead_ids", lead_ids)))
    ).mappings()
    facts: dict[uuid.UUID, LeadFacts] = {}
    for row in rows:
        fields = {name: FieldValue(row[f"field_{name}"]) for name in LEAD_FIELDS if row[f"field_{name}"] is not None}
        for name, (value, confidence) in (row["enriched"] or {}).items():
            fields[name] = FieldValue(value, float(confidence))
        engagement = {name: int(row[f"signal_{name}"] or 0) for name in ENGAGEMENT_SIGNALS}
        facts[row["id"]] = LeadFacts(source=row["source"], fields=fields, engagement=engagement)
    return facts


def rescore_leads(
    conn: Connection,
    organization_id: uuid.UUID,
    lead_ids: Sequence[uuid.UUID],
    model: ScoringModel | None = None,
) -> dict[uuid.UUID, dict[str, Any]]:
    """Recomputes the leads' scores with the model in force (none: nothing to do); the score columns of
    the leads whose score changed, by id."""
    model = model or model_in_force(conn, organization_id)
    if model is None or not lead_ids:
        return {}
    scores = [
        {"id": lead_id, "score": score_lead(model, facts).score, "version": model.version}
        for lead_id, facts in lead_facts(conn, organization_id, lead_ids).items()
    ]
    return write_scores(conn, organization_id, scores)


def write_scores(
    conn: Connection, organization_id: uuid.UUID, scores: list[dict[str, Any]]
) -> dict[uuid.UUID, dict[str, Any]]:
    if not scores:
        return {}
    source = recordset("scores", "scores", scores, {"id": Uuid, "score": Integer, "version": Integer})
    first_time = leads.c.qualification_state.is_(None)
    rows = conn.execute(
        update(leads)
        .where(
            leads.c.organization_id == organization_id,
            leads.c.id == source.c.id,
            or_(
                leads.c.score.is_distinct_from(source.c.score),
                leads.c.score_model_version.is_distinct_from(source.c.version),
            ),
        )
        .values(
            score=source.c.score,
            score_model_version=source.c.version,
            scored_at=sql_now(),
            qualification_state=func.coalesce(leads.c.qualification_state, QualificationState.SCORED.value),
            qualification_changed_at=case((first_time, sql_now()), else_=leads.c.qualification_changed_at),
        )
        .returning(leads.c.id, leads.c.score, leads.c.score_model_version, leads.c.qualification_state)
    ).mappings()
    return {row["id"]: {k: row[k] for k in ("score", "score_model_version", "qualification_state")} for row in rows}


def handle_lead_changed(conn: Connection, detail: dict[str, Any]) -> bool:
    """An event about a lead whose inputs changed (created, returned, a reply): rescore it. A lead erased or
    merged away before the event arrived is simply not found."""
    organization_id = parse_uuid(str(detail.get("organizationId", "")))
    payload = detail.get("payload") if isinstance(detail.get("payload"), dict) else detail
    lead_id = parse_uuid(str(payload.get("leadId", "")))
    if organization_id is None or lead_id is None:
        return False
    return bool(rescore_leads(conn, organization_id, [lead_id]))


# -- the job ------------------------------------------------------------------------------------------------


def run_rescore_job(batch: int = RESCORE_BATCH, budget_seconds: float = RESCORE_BUDGET_SECONDS) -> dict[str, int]:
    """Applies each organization's newest model to its leads, a batch per transaction, until every pending
    model is applied or the time budget is spent (the next run carries on from the stored position)."""
    totals = {"batches": 0, "rescored": 0, "modelsDone": 0}
    deadline = time.monotonic() + budget_seconds
    while time.monotonic() < deadline:
        outcome = _rescore_batch(batch)
        if outcome is None:
            break
        totals["batches"] += 1
        totals["rescored"] += outcome[0]
        totals["modelsDone"] += int(outcome[1])
    logger.info("rescore job", extra=totals)
    return totals


def _rescore_batch(batch: int) -> tuple[int, bool] | None:
    with transaction() as conn:
        pending = conn.execute(
            select(
                scoring_models.c.id,
                scoring_models.c.organization_id,
                scoring_models.c.version,
                scoring_models.c.rules,
                scoring_models.c.qualify_threshold,
                scoring_models.c.nurture_days,
                scoring_models.c.rescore_after_lead_id,
            )
            .where(scoring_models.c.rescored_at.is_(None))
            .order_by(scoring_models.c.created_at)
            .limit(1)
            .with_for_update(skip_locked=True)
        ).first()
        if pending is None:
            return None
        model = model_from_row(pending.version, pending.rules, pending.qualify_threshold, pending.nurture_days)
        page = select(leads.c.id).where(leads.c.organization_id == pending.organization_id)
        if pending.rescore_after_lead_id is not None:
            page = page.where(leads.c.id > pending.rescore_after_lead_id)
        lead_ids = list(conn.execute(page.order_by(leads.c.id).limit(batch)).scalars())
        written = len(rescore_leads(conn, pending.organization_id, lead_ids, model))
        done = len(lead_ids) < batch
        conn.execute(
            update(scoring_models)
            .where(scoring_models.c.id == pending.id)
            .values(
                rescore_after_lead_id=lead_ids[-1] if lead_ids else pending.rescore_after_lead_id,
                rescored_at=sql_now() if done else None,
            )
        )
    return written, done
