"""The bulk stage move: many leads onto one stage in a fixed number of statements.

The same rules as a single move (`plan_bulk_move`), written set-based: the leads are taken in id order (two
bulk requests over overlapping leads queue instead of deadlocking), and the rows written are those of
`leads.moves` (status events, `lead.status_changed` on a category change, `stage_moved` entries).

Python does nothing per lead but name it: the lock hands the leads back grouped by what the rules read (a
handful of groups whatever their number), the rules decide once per group, and one statement writes every
lead's rows from a document of the groups, PostgreSQL making each row's id (`platform.db.ids.SqlUuid7`)
and, past what the request publishes itself, each `lead.status_changed` outbox row.
"""

from __future__ import annotations

import functools
import uuid
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Connection,
    Integer,
    Select,
    Text,
    Uuid,
    bindparam,
    case,
    cast,
    column,
    func,
    insert,
    literal,
    literal_column,
    not_,
    select,
    true,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB

from leadcrm.directory.rules import Actor
from leadcrm.leads.moves import (
    STAGE_MOVED,
    refusal_error,
    secondary_stage_moved_payload,
    stage_moved_payload,
    status_changed_event,
    status_changed_events,
)
from leadcrm.leads.rules.moves import (
    CATEGORY_OF,
    BulkCandidate,
    LeadPosition,
    MoveRefusal,
    MoveRefused,
    StageMove,
    distinct_in_order,
    plan_bulk_move,
)
from leadcrm.leads.tables import lead_activity_events, lead_pipeline_placements, lead_status_events, leads
from leadcrm.pipelines.rules.statuses import StageCategory
from leadcrm.pipelines.stages import StageRow, resolve_stage
from leadcrm.platform.db.ids import SqlUuid7
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.recordsets import recordset, recordset_document
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.events import LEAD_STATUS_CHANGED
from leadcrm.platform.ids import uuid7_block
from leadcrm.platform.tables import outbox


@dataclass(frozen=True)
class BulkMoveResult:
    moved: list[uuid.UUID]
    skipped: list[tuple[uuid.UUID, str]]


@dataclass(frozen=True)
class _Group:
    """Requested leads that stand alike for the rules, as the lock read them: the same primary placement,
    category and conversion, the same secondary placement stage in the target pipeline, and (only when the
    target is lost, where a lost lead keeps its own) the same lost reason. `pipeline_id` None: not leads of
    the organization. `positions`: where its leads are in the request."""

    pipeline_id: uuid.UUID | None
    stage_id: uuid.UUID | None
    status: str | None
    converted: bool | None
    lost_reason: str | None
    placement_stage_id: uuid.UUID | None
    positions: list[int]


def bulk_move_stage(
    uow: UnitOfWork,
    actor: Actor,
    stage_id: uuid.UUID,
    lead_ids: list[uuid.UUID],
    *,
    lost_reason: str | None = None,
) -> BulkMoveResult:
    """Moves many leads onto one stage in a fixed number of statements, whatever their number.

    The target stage's pipeline decides: leads whose primary pipeline it is move by the primary rules (one
    UPDATE for all, one INSERT … SELECT for their status events, one for their timeline entries, and one
    lead.status_changed per category change); leads with a secondary placement there move it (one UPDATE).
    Unconverted leads aimed at a converted stage, leads not in the pipeline and ids that are not leads of
    the organization are skipped and reported. A move into lost needs `lost_reason` (400 otherwise).

    The lock hands back the leads grouped by what the rules read, and the rules (`plan_bulk_move`) decide
    once per group, each group standing for its leads: Python does nothing per lead but name it.
    """
    conn = uow.connection
    target = resolve_stage(conn, actor.organization_id, stage_id)
    if target.archived_at is not None:
        raise refusal_error(MoveRefusal.STAGE_ARCHIVED)
    requested = list(distinct_in_order(lead_ids))
    id_texts = [str(lead_id) for lead_id in requested]
    groups = _lock_bulk_groups(conn, actor.organization_id, target, id_texts)
    # Each group is planned as one lead, its first: the same rules, once per group instead of once per lead.
    group_of = {requested[group.positions[0]]: group for group in groups}
    candidates = {
        first: BulkCandidate(
            lead_id=first,
            position=LeadPosition(
                first, g.pipeline_id, g.stage_id, CATEGORY_OF[g.status], bool(g.converted), g.lost_reason
            ),
            placement_stage_id=g.placement_stage_id,
        )
        for first, g in group_of.items()
        if g.pipeline_id is not None and g.stage_id is not None and g.status is not None
    }
    try:
        plan = plan_bulk_move(list(group_of), candidates, target, lost_reason)
    except MoveRefused as refused:
        raise refusal_error(refused.refusal) from None

    primary = [(move, group_of[move.lead_id].positions) for move in plan.primary_moves]
    secondary = [(from_stage, group_of[first].positions) for first, from_stage in plan.secondary_moves]
    moved = sorted(
        position
        for positions in (
            *(p for _, p in primary),
            *(p for _, p in secondary),
            *(group_of[first].positions for first in plan.unchanged),
        )
        for position in positions
    )
    skipped = sorted((position, reason) for first, reason in plan.skipped for position in group_of[first].positions)
    result = BulkMoveResult(
        moved=[requested[p] for p in moved], skipped=[(requested[p], reason) for p, reason in skipped]
    )
    if not primary and not secondary:
        return result

    changes = sum(len(positions) for move, positions in primary if move.category_changed)
    events_in_sql = not uow.publishes_inline_with(changes)
    if events_in_sql:
        # More than the request publishes: PostgreSQL builds the rows for the relay, in the same statement.
        uow.add_relayed_events(changes)
    else:
        # A few: each lead's own move, in request order, and the events a single move makes.
        changed = sorted((p, move) for move, positions in primary if move.category_changed for p in positions)
        for event in status_changed_events(actor, [replace(move, lead_id=requested[p]) for p, move in changed]):
            uow.add_event(event)
    uow.execute_with_events(
        _move_statement(status_changed_rows=events_in_sql),
        _bulk_move_parameters(actor, target, id_texts, primary, secondary, status_changed_rows=events_in_sql),
    )
    return result


def _lock_bulk_groups(
    conn: Connection, organization_id: uuid.UUID, target: StageRow, id_texts: list[str]
) -> list[_Group]:
    """The requested leads of this organization locked in id order, handed back grouped by what the rules
    read (a handful of rows whatever the number of leads), each group with its leads' request positions."""
    if not id_texts:
        return []
    rows = conn.execute(
        _lock_statement(lost_target=target.category == StageCategory.LOST),
        {
            "bulk_organization_id": organization_id,
            "bulk_target_pipeline_id": target.pipeline_id,
            "bulk_lead_ids": "{" + ",".join(id_texts) + "}",
        },
    ).all()
    position_of = {text: position for position, text in enumerate(id_texts)}
    groups = [
        _Group(
            pipeline, stage, status, converted, lost_reason, placement_stage, [position_of[t] for t in ids.split(",")]
        )
        for pipeline, stage, status, converted, lost_reason, placement_stage, ids in rows
    ]
    found = sum(len(group.positions) for group in groups)
    if found < len(id_texts):  # ids that are not leads of the organization: one group of their own
        seen = {position for group in groups for position in group.positions}
        groups.append(_Group(None, None, None, None, None, None, [p for p in range(len(id_texts)) if p not in seen]))
    return groups


# The two statements are built once per shape, their values bound at each execution: building one and
# computing its cache key costs about as much as PostgreSQL takes to move a few dozen leads. The parameters
# are named apart from every column (an UPDATE would take a value named after a column as one to SET).


@functools.cache
def _lock_statement(*, lost_target: bool) -> Select[Any]:
    # The ids travel as one text parameter, unpacked once (an InitPlan, see `id_list`) for one index scan.
    ids = select(cast(bindparam("bulk_lead_ids", type_=Text), ARRAY(Uuid))).scalar_subquery()
    placement = lead_pipeline_placements
    target_pipeline = bindparam("bulk_target_pipeline_id", type_=Uuid)
    locked = (
        select(
            leads.c.id,
            leads.c.pipeline_id,
            leads.c.stage_id,
            leads.c.status,
            # is_converted, computed where the row is
            (leads.c.converted_membership_id.is_not(None) | (leads.c.status == StageCategory.CONVERTED.value)).label(
                "converted"
            ),
            # Only a lost lead moving between lost stages keeps its own reason; elsewhere it splits no group.
            (leads.c.lost_reason if lost_target else literal(None, Text)).label("lost_reason"),
            # Its secondary placement's stage in the target pipeline, looked up only when that pipeline is not
            # its primary one.
            case(
                (
                    leads.c.pipeline_id != target_pipeline,
                    select(placement.c.stage_id)
                    .where(placement.c.lead_id == leads.c.id, placement.c.pipeline_id == target_pipeline)
                    .scalar_subquery(),
                )
            ).label("placement_stage_id"),
        )
        .where(
            leads.c.organization_id == bindparam("bulk_organization_id", type_=Uuid),
            leads.c.id == func.any(cast(ids, ARRAY(Uuid))),
        )
        .order_by(leads.c.id)
        # Placements are written only under their lead's lock, so locking the lead rows is enough.
        .with_for_update(of=leads)
        .cte("locked")
        .prefix_with("MATERIALIZED")
    )
    keys = [c for c in locked.c if c.name != "id"]
    return select(*keys, func.string_agg(cast(locked.c.id, Text), literal(",", Text))).group_by(*keys)


_MOVE_GROUP_COLUMNS = {
    "lead_ids": Text,
    "is_primary": Boolean,
    "from_stage_id": Uuid,
    "from_status": Text,
    "lost_reason": Text,
    "status_reason": Text,
    "category_changed": Boolean,
    "entry": JSONB,
    "event": JSONB,
}
_IDS = SqlUuid7("move_ids")


def _bulk_move_parameters(
    actor: Actor,
    target: StageRow,
    id_texts: list[str],
    primary: list[tuple[StageMove, list[int]]],
    secondary: list[tuple[uuid.UUID, list[int]]],
    *,
    status_changed_rows: bool,
) -> dict[str, Any]:
    """The values of `_move_statement`: one document of the groups, each with its leads' ids and what is the
    same for all of them (the timeline entry; the event but its lead id), made by the single move's own
    functions."""

    def lead_ids(positions: list[int]) -> str:
        return "{" + ",".join([id_texts[p] for p in positions]) + "}"

    groups = [
        {
            "lead_ids": lead_ids(positions),
            "is_primary": True,
            "from_stage_id": str(m.from_stage_id),
            "from_status": m.from_status.value,
            "lost_reason": m.lost_reason,
            "status_reason": m.status_reason,
            "category_changed": m.category_changed,
            "entry": {**stage_moved_payload(target.pipeline_id, m), "bulk": True},
            "event": _status_changed_payload(actor, m) if status_changed_rows and m.category_changed else None,
        }
        for m, positions in primary
    ] + [
        {
            "lead_ids": lead_ids(positions),
            "is_primary": False,
            "entry": {**secondary_stage_moved_payload(target, from_stage), "bulk": True},
        }
        for from_stage, positions in secondary
    ]
    count = sum(len(positions) for _, positions in primary) + sum(len(positions) for _, positions in secondary)
    return {
        "move_groups": recordset_document(groups),
        "bulk_organization_id": actor.organization_id,
        "bulk_actor_user_id": actor.user_id,
        "bulk_to_status": target.category.value,
        "bulk_to_stage_id": target.id,
        "bulk_target_pipeline_id": target.pipeline_id,
        "bulk_move_count": count,
        # Three ids a lead at most (status event, stage_moved entry, outbox row), each its own run of stamps.
        **_IDS.parameters(uuid7_block(3 * count)),
    }


@functools.cache
def _move_statement(*, status_changed_rows: bool) -> Select[Any]:
    """The whole move as one statement over the document of the groups: the primary leads' UPDATE, their
    status events, the secondary placements' UPDATE, every lead's `stage_moved` entry and, when
    `status_changed_rows`, the `lead.status_changed` outbox rows (data-modifying CTEs; the unit's own outbox
    rows join them through `execute_with_events`). PostgreSQL unpacks each group into its leads."""
    document = recordset("move_groups", "move_groups", [], _MOVE_GROUP_COLUMNS)
    member = (
        func.unnest(cast(document.c.lead_ids, ARRAY(Uuid)))
        .table_valued(column("lead_id", Uuid))
        .render_derived(name="member")
    )
    # The document is bound and unpacked once; the writes read the unpacked rows, numbered for their ids, in
    # lead id order (the leads' rows and index pages in the order the lock took them).
    moves = (
        select(
            member.c.lead_id,
            *(document.c[name] for name in _MOVE_GROUP_COLUMNS if name != "lead_ids"),
            (func.row_number().over(order_by=member.c.lead_id) - 1).label("n"),
        )
        .select_from(document.join(member, true()))
        .order_by(member.c.lead_id)
        .cte("moves")
        .prefix_with("MATERIALIZED")
    )
    count = bindparam("bulk_move_count", type_=BigInteger)

    def ids(run: int) -> Any:
        return _IDS.id(literal(run, BigInteger) * count + moves.c.n)

    organization_id = bindparam("bulk_organization_id", type_=Uuid)
    actor_id = bindparam("bulk_actor_user_id", type_=Uuid)
    to_status = bindparam("bulk_to_status", type_=Text)
    to_stage = bindparam("bulk_to_stage_id", type_=Uuid)
    primary_leads = (
        update(leads)
        .where(leads.c.organization_id == organization_id, leads.c.id == moves.c.lead_id, moves.c.is_primary)
        .values(
            stage_id=to_stage,
            status=to_status,
            lost_reason=moves.c.lost_reason,
            status_changed_at=case((moves.c.category_changed, sql_now()), else_=leads.c.status_changed_at),
            updated_at=sql_now(),
        )
    )
    status_events = insert(lead_status_events).from_select(
        ["id", "organization_id", "lead_id", "from_status", "to_status", "from_stage_id", "to_stage_id",
         "actor_user_id", "reason"],
        select(ids(0), organization_id, moves.c.lead_id, moves.c.from_status, to_status,
               moves.c.from_stage_id, to_stage, actor_id, moves.c.status_reason).where(moves.c.is_primary),
    )  # fmt: skip
    placements = lead_pipeline_placements
    secondary_placements = (
        update(placements)
        .where(
            placements.c.organization_id == organization_id,
            placements.c.pipeline_id == bindparam("bulk_target_pipeline_id", type_=Uuid),
            placements.c.lead_id == moves.c.lead_id,
            not_(moves.c.is_primary),
        )
        .values(stage_id=to_stage, updated_at=sql_now())
    )
    activities = insert(lead_activity_events).from_select(
        ["id", "organization_id", "lead_id", "type", "payload", "actor_user_id"],
        select(ids(1), organization_id, moves.c.lead_id, literal(STAGE_MOVED, Text), moves.c.entry, actor_id),
    )
    statement = (
        select(func.count())
        .select_from(moves)
        .add_cte(moves)
        .add_cte(primary_leads.cte("primary_leads"))
        .add_cte(status_events.cte("status_events"))
        .add_cte(secondary_placements.cte("secondary_placements"))
        .add_cte(activities.cte("stage_moved_entries"))
    )
    if status_changed_rows:
        # The group's event payload with each lead's id set in; left to the relay (no attempt counted: the
        # request publishes none of them).
        payload = func.jsonb_set(
            moves.c.event, literal_column("'{leadId}'"), func.to_jsonb(cast(moves.c.lead_id, Text)), type_=JSONB
        )
        status_changed = insert(outbox).from_select(
            ["id", "organization_id", "type", "aggregate_id", "payload", "occurred_at", "attempts"],
            select(
                ids(2),
                organization_id,
                literal(LEAD_STATUS_CHANGED, Text),
                moves.c.lead_id,
                payload,
                sql_now(),
                literal(0, Integer),
            ).where(moves.c.event.is_not(None)),
        )
        statement = statement.add_cte(status_changed.cte("status_changed_rows"))
    return statement


def _status_changed_payload(actor: Actor, move: StageMove) -> dict[str, Any]:
    """`status_changed_event`'s payload for a group's move, but its lead id, set per lead in SQL."""
    payload = dict(status_changed_event(actor, move).payload)
    del payload["leadId"]
    return payload
