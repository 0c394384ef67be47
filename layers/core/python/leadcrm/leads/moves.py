"""Moving one lead: stage and status as one move, owner, test flag and contact edits (PATCH), and the
pieces every lead write shares.

Every write takes the lead row first (`lock_lead`, `SELECT … FOR UPDATE`; bulk operations take all their
rows in id order, so two bulk requests over overlapping leads queue instead of deadlocking), then asks the
pure rules in `leadcrm.leads.rules.moves`, then writes. Every primary move goes through the same pieces:

- `primary_move_values`: stage_id and status change together (status = the stage's category), and
  status_changed_at is bumped only when the category changes (updated_at always);
- `record_primary_move`: a lead_status_events row for every stage change (same-category moves too) and
  `lead.status_changed` (ids only) only on a category change;
- a `stage_moved` timeline entry (`primary_changed` for set-primary), written best-effort.

A move to the stage the lead is already on writes and records nothing. Secondary pipelines and set-primary
live in `leads.placements`, the bulk stage move in `leads.bulk_moves` (the same rules, written
set-based), archiving in `leads.archive`; all of them build on the pieces here.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Text, Uuid, bindparam, cast, insert, select, true, update
from sqlalchemy.dialects.postgresql import ARRAY

from leadcrm.directory.rules import Actor
from leadcrm.directory.staff import require_assignable_staff
from leadcrm.leads.activity import activities_insert
from leadcrm.leads.messages import ScoringInputsChanged
from leadcrm.leads.rules.moves import (
    LeadPosition,
    MoveRefusal,
    MoveRefused,
    StageMove,
    is_converted,
    lost_reason_correction,
    plan_stage_move,
    requested_status_needs_move,
)
from leadcrm.leads.tables import LEAD_COLUMNS, lead_status_events, leads
from leadcrm.pipelines.rules.statuses import StageCategory
from leadcrm.pipelines.stages import (
    STAGE_ROW_NAMES,
    StageRow,
    first_active_stage,
    first_active_stage_lookup,
    resolve_stage,
    stage_lookup,
    stage_not_found,
    stage_row_of,
)
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import BadRequest, NotFound
from leadcrm.platform.events import LEAD_STATUS_CHANGED, DomainEvent
from leadcrm.platform.ids import uuid7
from leadcrm.platform.messagebus import handle

logger = logging.getLogger(__name__)

# Timeline entry types (lead_activity_events.type) this module writes (STAGE_MOVED: every stage move).
STAGE_MOVED = "stage_moved"
OWNER_CHANGED = "owner_changed"
LOST_REASON_CHANGED = "lost_reason_changed"
DETAILS_UPDATED = "details_updated"
TEST_FLAG_CHANGED = "test_flag_changed"

# Bulk requests: the most ids one request may name (the API refuses more before anything runs).
MAX_BULK_LEADS = 10_000

# Plain lead columns a PATCH may correct, by their camelCase names on the timeline.
EDITABLE_DETAILS: dict[str, str] = {
    "name": "name",
    "email": "email",
    "phone": "phone",
    "note": "note",
    "locale": "locale",
    "trial_date": "trialDate",
}
CONTACT_FIELDS = ("name", "email", "phone")

_REFUSALS: dict[MoveRefusal, tuple[str, str]] = {
    MoveRefusal.CONVERT_REQUIRED: (
        "CONVERT_REQUIRED",
        "Only converting the lead puts it into a converted stage.",
    ),
    MoveRefusal.NOT_IN_PIPELINE: ("STAGE_NOT_IN_PIPELINE", "The stage is not in this pipeline of the lead."),
    MoveRefusal.STAGE_ARCHIVED: ("STAGE_ARCHIVED", "The stage is archived."),
    MoveRefusal.LOST_REASON_REQUIRED: ("LOST_REASON_REQUIRED", "A lead marked lost needs a lost reason."),
    MoveRefusal.LOST_REASON_NOT_LOST: ("LOST_REASON_NOT_LOST", "A lost reason is only kept for a lost lead."),
}


def refusal_error(refusal: MoveRefusal) -> BadRequest:
    code, message = _REFUSALS[refusal]
    return BadRequest(message, code=code)


def _lead_not_found() -> NotFound:
    return NotFound("Lead not found.", code="LEAD_NOT_FOUND")


# -- reading and locking ---------------------------------------------------------------------------------

_LOCK_COLUMNS = (*LEAD_COLUMNS, leads.c.converted_membership_id)


def lock_lead(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> dict[str, Any]:
    """The lead row, locked until the transaction ends; another organization's lead is not found."""
    row = (
        conn.execute(
            select(*_LOCK_COLUMNS)
            .where(leads.c.organization_id == organization_id, leads.c.id == lead_id)
            .with_for_update()
        )
        .mappings()
        .first()
    )
    if row is None:
        raise _lead_not_found()
    return dict(row)


@dataclass(frozen=True)
class LockedLead:
    """The lead row as `lock_lead` reads it (plus any columns the caller asked for), and the stages the same
    statement looked up: by stage id, or by category (the first active one in the lead's primary pipeline;
    None when it has none)."""

    row: dict[str, Any]
    stages: Mapping[uuid.UUID | StageCategory, StageRow | None]


def lock_lead_with_stages(
    conn: Connection,
    organization_id: uuid.UUID,
    lead_id: uuid.UUID,
    *,
    stage_id: uuid.UUID | None = None,
    categories: Sequence[StageCategory] = (),
    columns: Sequence[Any] = (),
    join: Any = None,
) -> LockedLead:
    """`lock_lead` with the stages a write may move the lead to, read by the same statement (LATERAL joins,
    each stage FOR KEY SHARE as `resolve_stage` / `first_active_stage` take it; the lead FOR UPDATE), and
    `columns` of the tables in `join` (joined to leads). 404 LEAD_NOT_FOUND first, then STAGE_NOT_FOUND for a
    `stage_id` that is no stage of the organization."""
    lookups: list[tuple[uuid.UUID | StageCategory, Any]] = []
    if stage_id is not None:
        lookups.append((stage_id, stage_lookup(organization_id, stage_id)))
    for category in dict.fromkeys(categories):
        lookups.append((category, first_active_stage_lookup(organization_id, leads.c.pipeline_id, category)))
    source: Any = join if join is not None else leads
    selected: list[Any] = [*_LOCK_COLUMNS, *columns]
    for n, (_, lookup) in enumerate(lookups):
        stage = lookup.lateral(f"stage_{n}")
        source = source.outerjoin(stage, true())
        selected.extend(stage.c[name].label(f"stage_{n}_{name}") for name in STAGE_ROW_NAMES)
    row = (
        conn.execute(
            select(*selected)
            .select_from(source)
            .where(leads.c.organization_id == organization_id, leads.c.id == lead_id)
            .with_for_update(of=leads)
        )
        .mappings()
        .first()
    )
    if row is None:
        raise _lead_not_found()
    stages = {key: stage_row_of(row, f"stage_{n}_") for n, (key, _) in enumerate(lookups)}
    if stage_id is not None and stages[stage_id] is None:
        raise stage_not_found()
    return LockedLead({c.name: row[c.name] for c in (*_LOCK_COLUMNS, *columns)}, stages)


def lead_position(row: Mapping[str, Any]) -> LeadPosition:
    return LeadPosition(
        lead_id=row["id"],
        pipeline_id=row["pipeline_id"],
        stage_id=row["stage_id"],
        status=StageCategory(row["status"]),
        converted=is_converted(row["status"], row["converted_membership_id"]),
        lost_reason=row["lost_reason"],
    )


def public_lead(row: Mapping[str, Any]) -> dict[str, Any]:
    """The lead as the API shows it (LEAD_COLUMNS)."""
    return {c.name: row[c.name] for c in LEAD_COLUMNS}


def lead_row_update(row: Mapping[str, Any], values: Mapping[str, Any], returning: Sequence[Any] = ()) -> Any:
    """The UPDATE of the locked lead row, RETURNING LEAD_COLUMNS (and `returning`)."""
    return (
        update(leads)
        .where(leads.c.id == row["id"], leads.c.organization_id == row["organization_id"])
        .values(**values, updated_at=sql_now())
        .returning(*LEAD_COLUMNS, *returning)
    )


def update_lead_row(conn: Connection, row: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    return dict(conn.execute(lead_row_update(row, values)).mappings().one())


# -- the move machinery ----------------------------------------------------------------------------------


def primary_move_values(move: StageMove) -> dict[str, Any]:
    """Stage and status together; statusChangedAt only when the category changes."""
    values: dict[str, Any] = {
        "stage_id": move.to_stage_id,
        "status": move.to_status.value,
        "lost_reason": move.lost_reason,
    }
    if move.category_changed:
        values["status_changed_at"] = sql_now()
    return values


def status_event_row(actor: Actor, move: StageMove) -> dict[str, Any]:
    return {
        "id": uuid7(),
        "organization_id": actor.organization_id,
        "lead_id": move.lead_id,
        "from_status": move.from_status.value,
        "to_status": move.to_status.value,
        "from_stage_id": move.from_stage_id,
        "to_stage_id": move.to_stage_id,
        "actor_user_id": actor.user_id,
        "reason": move.status_reason,
    }


def stage_moved_payload(pipeline_id: uuid.UUID, move: StageMove) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "pipelineId": str(pipeline_id),
        "primary": True,
        "fromStageId": str(move.from_stage_id),
        "toStageId": str(move.to_stage_id),
        "fromStatus": move.from_status.value,
        "toStatus": move.to_status.value,
    }
    if move.status_reason:
        payload["lostReason"] = move.status_reason
    return payload


def secondary_stage_moved_payload(target: StageRow, from_stage_id: uuid.UUID) -> dict[str, Any]:
    """A secondary placement's move: the lead's status does not change, the stage's category is named."""
    return {
        "pipelineId": str(target.pipeline_id),
        "primary": False,
        "fromStageId": str(from_stage_id),
        "toStageId": str(target.id),
        "toCategory": target.category.value,
    }


def status_changed_event(actor: Actor, move: StageMove) -> DomainEvent:
    return DomainEvent(
        type=LEAD_STATUS_CHANGED,
        organization_id=actor.organization_id,
        aggregate_id=move.lead_id,
        payload={
            "leadId": str(move.lead_id),
            "fromStatus": move.from_status.value,
            "toStatus": move.to_status.value,
            "fromStageId": str(move.from_stage_id),
            "toStageId": str(move.to_stage_id),
            "actorUserId": str(actor.user_id) if actor.user_id else None,  # None: the system (system_actor)
        },
    )


def status_changed_events(actor: Actor, moves: Sequence[StageMove]) -> list[DomainEvent]:
    """`status_changed_event` of each move that changes its lead's category, for a bulk move: the same events,
    with each stage id and the actor written out once instead of once per lead."""
    text_of: dict[uuid.UUID, str] = {}

    def text(value: uuid.UUID) -> str:
        written = text_of.get(value)
        if written is None:
            written = text_of[value] = str(value)
        return written

    actor_user_id = str(actor.user_id) if actor.user_id else None  # None: the system (system_actor)
    return [
        DomainEvent(
            type=LEAD_STATUS_CHANGED,
            organization_id=actor.organization_id,
            aggregate_id=move.lead_id,
            payload={
                "leadId": str(move.lead_id),
                "fromStatus": move.from_status.value,
                "toStatus": move.to_status.value,
                "fromStageId": text(move.from_stage_id),
                "toStageId": text(move.to_stage_id),
                "actorUserId": actor_user_id,
            },
        )
        for move in moves
        if move.category_changed
    ]


def activity_row(actor: Actor, lead_id: uuid.UUID, activity_type: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {
        "organization_id": actor.organization_id,
        "lead_id": lead_id,
        "type": activity_type,
        "payload": payload,
        "actor_user_id": actor.user_id,
    }


def status_event_insert(actor: Actor, move: StageMove) -> Any:
    """The status event as an INSERT another statement carries (a CTE of the move's UPDATE)."""
    return insert(lead_status_events).values(**status_event_row(actor, move))


def record_primary_move(uow: UnitOfWork, actor: Actor, move: StageMove) -> None:
    """The history of one primary stage change: the status event and, on a category change, the event."""
    uow.connection.execute(insert(lead_status_events).values(**status_event_row(actor, move)))
    if move.category_changed:
        uow.add_event(status_changed_event(actor, move))


def move_lead_to_stage(
    uow: UnitOfWork,
    actor: Actor,
    lead_id: uuid.UUID,
    stage_id: uuid.UUID,
    *,
    lost_reason: str | None = None,
) -> dict[str, Any]:
    """Moves the lead's primary placement onto `stage_id` (a stage of its primary pipeline); the lead after.

    400 STAGE_NOT_IN_PIPELINE / STAGE_ARCHIVED / CONVERT_REQUIRED / LOST_REASON_REQUIRED; 404 for a lead
    or stage that is not in the organization. Moving to the stage the lead is on changes nothing.
    """
    return update_lead(uow, actor, lead_id, LeadUpdate(stage_id=stage_id, lost_reason=lost_reason))


# -- PATCH lead --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LeadUpdate:
    """What a PATCH asks for. `details` holds only the plain columns the caller sent (None clears one)."""

    stage_id: uuid.UUID | None = None
    status: StageCategory | None = None
    lost_reason: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    is_test: bool | None = None
    assign: bool = False  # whether assigned_to_user_id was sent at all (None then unassigns)
    assigned_to_user_id: uuid.UUID | None = None


@dataclass(frozen=True)
class AlsoWritten:
    """What a caller writes with the update, in its statement: more lead columns (SQL expressions allowed),
    more timeline entries (after the update's own), more columns to return, and more CTEs (writes of other
    tables, e.g. the lead's task)."""

    values: Mapping[str, Any] = field(default_factory=dict)
    activities: Sequence[dict[str, Any]] = ()
    returning: Sequence[Any] = ()
    carried: Sequence[Any] = ()


def update_lead(
    uow: UnitOfWork,
    actor: Actor,
    lead_id: uuid.UUID,
    change: LeadUpdate,
    *,
    locked: LockedLead | dict[str, Any] | None = None,
    also: AlsoWritten | None = None,
) -> dict[str, Any]:
    """One PATCH: a stage/status move, owner, test flag and contact corrections, in one UPDATE that also
    writes the status event, the timeline entries and the unit's outbox rows (CTEs). `locked`: the caller
    holds the lead's lock (with the stages it looked up); `also`: what it writes in the same statement.

    stageId wins over status; a bare status resolves to the first active stage of that category in the
    lead's primary pipeline (and is no move when the lead already has it). What did not change is not
    written and not recorded.
    """
    conn = uow.connection
    if locked is None:
        locked = lock_lead_with_stages(
            conn,
            actor.organization_id,
            lead_id,
            stage_id=change.stage_id,
            categories=[change.status] if change.stage_id is None and change.status is not None else [],
        )
    row = locked.row if isinstance(locked, LockedLead) else locked
    stages = locked.stages if isinstance(locked, LockedLead) else {}
    lead = lead_position(row)
    values: dict[str, Any] = dict(also.values) if also else {}
    activities: list[dict[str, Any]] = []

    move = _requested_move(conn, actor, lead, change, stages)
    if move is not None:
        values.update(primary_move_values(move))
        activities.append(activity_row(actor, lead_id, STAGE_MOVED, stage_moved_payload(lead.pipeline_id, move)))
    elif change.lost_reason is not None:
        try:
            corrected = lost_reason_correction(lead, change.lost_reason)
        except MoveRefused as refused:
            raise refusal_error(refused.refusal) from None
        if corrected is not None:
            values["lost_reason"] = corrected
            activities.append(
                activity_row(actor, lead_id, LOST_REASON_CHANGED, {"from": row["lost_reason"], "to": corrected})
            )

    if change.assign and change.assigned_to_user_id != row["assigned_to_user_id"]:
        if change.assigned_to_user_id is not None:
            require_assignable_staff(conn, actor.organization_id, change.assigned_to_user_id)
        values["assigned_to_user_id"] = change.assigned_to_user_id
        activities.append(activity_row(actor, lead_id, OWNER_CHANGED, _owner_payload(row, change.assigned_to_user_id)))

    if change.is_test is not None and change.is_test != row["is_test"]:
        values["is_test"] = change.is_test
        activities.append(activity_row(actor, lead_id, TEST_FLAG_CHANGED, {"isTest": change.is_test}))

    edited = {name: value for name, value in change.details.items() if row[name] != value}
    if edited:
        if not any(edited.get(name, row[name]) for name in CONTACT_FIELDS):
            raise BadRequest("A lead needs at least a name, an email or a phone.", code="LEAD_NEEDS_CONTACT")
        values.update(edited)
        # Field names only: the values are corrections the lead row now holds (the original receipt is kept).
        activities.append(
            activity_row(actor, lead_id, DETAILS_UPDATED, {"fields": [EDITABLE_DETAILS[name] for name in edited]})
        )

    if also:
        activities.extend(also.activities)
    if not values and not (also and also.carried):
        return public_lead(row)
    # The lead, its status event, its timeline entries and the unit's outbox rows: one statement.
    carried = []
    if move is not None:
        carried.append(status_event_insert(actor, move).cte("status_event"))
        if move.category_changed:
            uow.add_event(status_changed_event(actor, move))
    if activities:
        carried.append(activities_insert(activities, "lead_update_activities").cte("timeline_entries"))
    if also:
        carried.extend(also.carried)
    statement = lead_row_update(row, values, also.returning if also else ()).add_cte(*carried)
    updated = dict(uow.execute_with_events(statement).mappings().one())
    if edited:  # the lead's own fields are scoring inputs (qualification.scoring)
        for rescored in handle(conn, ScoringInputsChanged(actor.organization_id, (lead_id,))):
            updated = {**updated, **rescored.get(lead_id, {})}
    return updated


def _requested_move(
    conn: Connection,
    actor: Actor,
    lead: LeadPosition,
    change: LeadUpdate,
    looked_up: Mapping[uuid.UUID | StageCategory, StageRow | None],
) -> StageMove | None:
    """`looked_up`: the stages the lock's statement read (`lock_lead_with_stages`); others are read here."""
    target: StageRow | None = None
    if change.stage_id is not None:
        if change.stage_id in looked_up:
            target = looked_up[change.stage_id]
        else:
            target = resolve_stage(conn, actor.organization_id, change.stage_id)
    elif change.status is not None and requested_status_needs_move(lead.status, change.status):
        if change.status in looked_up:
            target = looked_up[change.status]
        else:
            target = first_active_stage(conn, actor.organization_id, lead.pipeline_id, change.status)
        if target is None:
            raise BadRequest(
                "The lead's pipeline has no active stage for this status.",
                code="NO_STAGE_FOR_STATUS",
                status=StageCategory(change.status).value,
            )
    if target is None:
        return None
    try:
        return plan_stage_move(lead, target, lost_reason=change.lost_reason)
    except MoveRefused as refused:
        raise refusal_error(refused.refusal) from None


def _owner_payload(row: Mapping[str, Any], to_user_id: uuid.UUID | None) -> dict[str, Any]:
    previous = row["assigned_to_user_id"]
    return {
        "fromUserId": str(previous) if previous else None,
        "toUserId": str(to_user_id) if to_user_id else None,
    }


# -- shared by the bulk operations (leads.bulk_moves, leads.archive) ------------------------

# Many values travel as ONE parameter that PostgreSQL unpacks: pg8000 converts a list parameter element by
# element in Python (about 0.1 ms per element), while a string is sent as it is.


def id_list(name: str, ids: Sequence[uuid.UUID]) -> Any:
    """The ids as a uuid[] for `= ANY(…)`: an array literal cast in SQL.

    The cast sits in a scalar subquery, so PostgreSQL runs it once (an InitPlan) instead of for every row it
    filters (a text-to-array cast is not constant-folded: with 10k ids that is 10k parses of 10k ids). The
    outer cast keeps `= ANY(array)` from being read as `= ANY(subquery)`.
    """
    literal_array = "{" + ",".join(str(i) for i in ids) + "}"
    once = select(cast(bindparam(name, literal_array, type_=Text), ARRAY(Uuid))).scalar_subquery()
    return cast(once, ARRAY(Uuid))
