"""Owner departure (spec section 8: "Deals reassigned to new owner; ownership change audited").

When a membership stops being active staff (a platform event the directory applies: `membership.updated`,
`.deleted` or `.status_changed`, told here by `directory.messages.MembershipLeftStaff`; or an owner/admin
asking through the API), the departed member's open work goes to one active staff member in ONE
transaction and a few set-based statements, whatever its size:

- open deals (open or stalled; closed-won stays sealed, closed-lost stays as it closed),
- open leads (an open status category) they own,
- open tasks (pending or in progress) assigned to them.

It is audited three ways: an `ownership_handovers` row (who, to whom, why, what counts), an entry per item
(the deal's history, the lead's timeline) and one `ownership.handed_over` event (ids and counts).

Recipient: the member the API names, else the organization's default assignee (the setting, when it names
an active staff member), else its oldest active owner. Idempotent: a second handover finds nothing left to
move (through the API its row records zeros and nothing is announced; from an event nothing is recorded at
all when the member owns nothing open), and a redelivered event is recognised by its key (the platform's
change: type, membership and version) and hands nothing over twice.

Locks: the rows are taken FOR NO KEY UPDATE in id order (leads, then tasks, then deals), which queues behind
a lead or deal write under way without blocking foreign-key checks (KEY SHARE), so a deal move that writes
on its lead's timeline never deadlocks with a handover.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, insert, or_, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert

from leadcrm.deals.deals import HISTORY_OWNER_HANDED_OVER, TIMELINE_TYPES
from leadcrm.deals.rules.deals import OPEN_STATUSES
from leadcrm.deals.tables import deal_history, deals, ownership_handovers
from leadcrm.directory.default_assignee import default_assignee
from leadcrm.directory.messages import MembershipLeftStaff
from leadcrm.directory.rules import Actor, MembershipStatus, is_staff_role
from leadcrm.directory.staff import require_assignable_staff
from leadcrm.directory.tables import memberships
from leadcrm.leads.activity import record_activities
from leadcrm.leads.tables import leads
from leadcrm.pipelines.rules.statuses import OPEN_CATEGORIES
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import Conflict, NotFound
from leadcrm.platform.events import DomainEvent
from leadcrm.platform.ids import uuid7
from leadcrm.work.tables import tasks

logger = logging.getLogger(__name__)

OWNERSHIP_HANDED_OVER = "ownership.handed_over"
LEAD_OWNER_CHANGED = "owner_changed"  # the lead timeline's type for an owner change (leads.moves)
VIA_API = "api"
VIA_PLATFORM_EVENT = "platform_event"
OPEN_TASK_STATUSES = ("pending", "in_progress")


@dataclass(frozen=True)
class Handover:
    id: uuid.UUID
    membership_id: uuid.UUID
    from_user_id: uuid.UUID
    to_user_id: uuid.UUID
    via: str
    deals: int
    leads: int
    tasks: int


# -- the handover -----------------------------------------------------------------------------------------


def hand_over_from_api(
    uow: UnitOfWork, actor: Actor, membership_id: uuid.UUID, to_user_id: uuid.UUID | None
) -> Handover:
    """Owner/admin: hands a departed member's open work to `to_user_id` (or the default assignee).

    404 MEMBERSHIP_NOT_FOUND; 409 MEMBERSHIP_STILL_ACTIVE for an active staff member (their work is theirs);
    400 ASSIGNEE_NOT_STAFF for a recipient who is not active staff; 409 NO_ASSIGNEE when nobody is left."""
    conn = uow.connection
    membership = _lock_membership(conn, actor.organization_id, membership_id)
    if membership is None:
        raise NotFound("Membership not found.", code="MEMBERSHIP_NOT_FOUND")
    if _still_active_staff(membership):
        raise Conflict("The member is still active staff; their work stays theirs.", code="MEMBERSHIP_STILL_ACTIVE")
    if to_user_id is not None:
        require_assignable_staff(conn, actor.organization_id, to_user_id)
    recipient = to_user_id or default_assignee(conn, actor.organization_id, excluding=membership.user_id)
    if recipient is None:
        raise Conflict("No active owner or default assignee can take the work; name one.", code="NO_ASSIGNEE")
    handover = _hand_over(uow, membership, recipient, via=VIA_API, actor_user_id=actor.user_id, source_key=None)
    assert handover is not None  # only a replayed source key returns None
    return handover


def hand_over_for_departure(conn: Connection, message: MembershipLeftStaff) -> Handover | None:
    """Answers `directory.messages.MembershipLeftStaff` (a platform event took a membership out of active
    staff: `membership.updated`, `.deleted` or `.status_changed`): hands its open work to the default assignee.

    A member with nothing open leaves nothing (no empty handover); with nobody to take it, the work stays until
    an owner/admin names someone through the API; a redelivery (the same `source_key`) hands nothing twice."""
    membership = _lock_membership(conn, message.organization_id, message.membership_id)
    if membership is None or _still_active_staff(membership):
        return None
    if not _owns_open_work(conn, message.organization_id, membership.user_id):
        return None  # a member (or a coach with nothing open) leaving: nothing to hand over, nothing to audit
    recipient = default_assignee(conn, message.organization_id, excluding=membership.user_id)
    if recipient is None:
        logger.warning(
            "departed member's work kept: no default assignee", extra={"membershipId": str(message.membership_id)}
        )
        return None
    return _hand_over(
        message.uow, membership, recipient, via=VIA_PLATFORM_EVENT, actor_user_id=None, source_key=message.source_key
    )


def _owns_open_work(conn: Connection, organization_id: uuid.UUID, user_id: uuid.UUID) -> bool:
    """Whether the user owns an open deal or lead, or has an open task here (one statement of three EXISTS)."""
    owned = (
        select(deals.c.id).where(
            deals.c.organization_id == organization_id,
            deals.c.owner_user_id == user_id,
            deals.c.status.in_([s.value for s in OPEN_STATUSES]),
        ),
        select(leads.c.id).where(
            leads.c.organization_id == organization_id,
            leads.c.assigned_to_user_id == user_id,
            leads.c.status.in_([c.value for c in OPEN_CATEGORIES]),
        ),
        select(tasks.c.id).where(
            tasks.c.organization_id == organization_id,
            tasks.c.assignee_user_id == user_id,
            tasks.c.status.in_(OPEN_TASK_STATUSES),
            tasks.c.deleted_at.is_(None),
        ),
    )
    return bool(conn.execute(select(or_(*(q.exists() for q in owned)))).scalar_one())


def _lock_membership(conn: Connection, organization_id: uuid.UUID, membership_id: uuid.UUID) -> Any:
    """FOR UPDATE: two handovers of one membership run one after the other (the second moves nothing)."""
    return conn.execute(
        select(
            memberships.c.id,
            memberships.c.organization_id,
            memberships.c.user_id,
            memberships.c.role,
            memberships.c.status,
            memberships.c.deleted_at,
        )
        .where(memberships.c.organization_id == organization_id, memberships.c.id == membership_id)
        .with_for_update()
    ).first()


def _still_active_staff(membership: Any) -> bool:
    return (
        membership.deleted_at is None
        and membership.status == MembershipStatus.ACTIVE.value
        and is_staff_role(membership.role)
    )


def _hand_over(
    uow: UnitOfWork,
    membership: Any,
    to_user_id: uuid.UUID,
    *,
    via: str,
    actor_user_id: uuid.UUID | None,
    source_key: str | None,
) -> Handover | None:
    conn = uow.connection
    organization_id = membership.organization_id
    from_user_id = membership.user_id
    handover_id = uuid7()
    claimed = conn.execute(
        pg_insert(ownership_handovers)
        .values(
            id=handover_id,
            organization_id=organization_id,
            membership_id=membership.id,
            from_user_id=from_user_id,
            to_user_id=to_user_id,
            via=via,
            actor_user_id=actor_user_id,
            source_event_id=source_key,
        )
        .on_conflict_do_nothing(
            index_elements=["source_event_id"], index_where=ownership_handovers.c.source_event_id.is_not(None)
        )
        .returning(ownership_handovers.c.id)
    ).first()
    if claimed is None:
        return None
    moved_leads = _reassign(
        conn,
        leads,
        leads.c.assigned_to_user_id,
        organization_id,
        from_user_id,
        to_user_id,
        leads.c.status.in_([c.value for c in OPEN_CATEGORIES]),
    )
    moved_tasks = _reassign(
        conn,
        tasks,
        tasks.c.assignee_user_id,
        organization_id,
        from_user_id,
        to_user_id,
        tasks.c.status.in_(OPEN_TASK_STATUSES),
        tasks.c.deleted_at.is_(None),
    )
    moved_deals = _reassign(
        conn,
        deals,
        deals.c.owner_user_id,
        organization_id,
        from_user_id,
        to_user_id,
        deals.c.status.in_([s.value for s in OPEN_STATUSES]),
        bump_version=True,
    )
    change = {"fromUserId": str(from_user_id), "toUserId": str(to_user_id), "handoverId": str(handover_id)}
    if moved_deals:
        conn.execute(
            insert(deal_history).values(
                [
                    {
                        "id": uuid7(),
                        "organization_id": organization_id,
                        "deal_id": d.id,
                        "type": HISTORY_OWNER_HANDED_OVER,
                        "actor_user_id": actor_user_id,
                        "reason": "owner_departure",
                        "payload": change,
                    }
                    for d in moved_deals
                ]
            )
        )
    timeline = [
        {
            "organization_id": organization_id,
            "lead_id": lead.id,
            "type": LEAD_OWNER_CHANGED,
            "payload": {**change, "via": "handover"},
            "actor_user_id": actor_user_id,
        }
        for lead in moved_leads
    ] + [
        {
            "organization_id": organization_id,
            "lead_id": d.lead_id,
            "type": TIMELINE_TYPES[HISTORY_OWNER_HANDED_OVER],
            "payload": {**change, "dealId": str(d.id)},
            "actor_user_id": actor_user_id,
        }
        for d in moved_deals
        if d.lead_id is not None
    ]
    record_activities(conn, timeline)
    counts = {"deals": len(moved_deals), "leads": len(moved_leads), "tasks": len(moved_tasks)}
    conn.execute(
        update(ownership_handovers)
        .where(ownership_handovers.c.id == handover_id)
        .values(deals_count=counts["deals"], leads_count=counts["leads"], tasks_count=counts["tasks"])
    )
    handover = Handover(
        id=handover_id, membership_id=membership.id, from_user_id=from_user_id, to_user_id=to_user_id, via=via, **counts
    )
    if any(counts.values()):  # a handover that moved nothing is audited (its row) but not announced
        uow.add_event(
            DomainEvent(
                type=OWNERSHIP_HANDED_OVER,
                organization_id=organization_id,
                aggregate_id=handover_id,
                payload={
                    "handoverId": str(handover_id),
                    "membershipId": str(membership.id),
                    "via": via,
                    "actorUserId": str(actor_user_id) if actor_user_id else None,
                    **change,
                    **counts,
                },
            )
        )
    return handover


def _reassign(
    conn: Connection,
    table: Any,
    owner_column: Any,
    organization_id: uuid.UUID,
    from_user_id: uuid.UUID,
    to_user_id: uuid.UUID,
    *conditions: Any,
    bump_version: bool = False,
) -> list[Any]:
    """One UPDATE of every matching row (locked FOR NO KEY UPDATE in id order first); the rows it moved."""
    locked = (
        select(table.c.id)
        .where(table.c.organization_id == organization_id, owner_column == from_user_id, *conditions)
        .order_by(table.c.id)
        .with_for_update(key_share=True)
        .scalar_subquery()
    )
    values: dict[str, Any] = {owner_column.name: to_user_id, "updated_at": sql_now()}
    if bump_version:
        values["version"] = table.c.version + 1
    returning = [table.c.id, table.c.lead_id] if table is deals else [table.c.id]
    return list(
        conn.execute(
            update(table)
            .where(table.c.organization_id == organization_id, table.c.id.in_(locked))
            .values(**values)
            .returning(*returning)
        )
    )
