"""Assignment rules at intake: a lead that arrives without an owner gets one from the organization's rules, in
the entry point's transaction (the rules themselves: leads.rules.assignment; their CRUD:
leads.assignment_rules).

Race safety: `place_many` reads the organization's active rules `FOR UPDATE`, so intakes of one organization
that has rules queue on its rule rows: each reads the cursors and the open-lead counts the previous one
committed, chooses, and moves the cursors before it commits. Twenty leads at once over a round-robin of two
coaches land ten and ten. The locks are taken after the person locks (the order every intake takes them) and
the rule CRUD takes only rule rows, so nothing waits in a circle.

Cost: an organization without rules pays nothing. The intake learns whether it has any from the statement
that already reads the organization (`has_rules`, in `leads.dedup.open_intake`). With rules, a placement is
three statements (the locked rules, the named staff's state, the cursor update); the timeline entry that
records the rule goes in the lead's own INSERT (`rule_activities`).

A named person who left the organization is never chosen (the rule is skipped when nobody else can take the
lead) and is reported: logged here, and on the rule itself (`problems` in the rules list).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Integer, Uuid, and_, exists, func, select, update

from leadcrm.directory.rules import STAFF_ROLES, MembershipStatus
from leadcrm.directory.tables import memberships, organizations, staff_availability
from leadcrm.leads.activity import activities_insert, record_activities
from leadcrm.leads.rules.assignment import (
    RULE_ASSIGNED_ACTIVITY,
    AssignmentRule,
    Availability,
    LeadTraits,
    StaffState,
    Strategy,
    TimeWindow,
    WorkingHours,
    assign_many,
    language_of,
    local_moment,
    parse_clock,
)
from leadcrm.leads.tables import lead_assignment_rules, leads
from leadcrm.pipelines.rules.statuses import OPEN_CATEGORIES
from leadcrm.pipelines.stages import default_new_stage
from leadcrm.platform import clock
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.recordsets import recordset

logger = logging.getLogger(__name__)

rules_table = lead_assignment_rules


@dataclass(frozen=True)
class Placed:
    """A rule placed a lead with a person."""

    user_id: uuid.UUID
    rule_id: uuid.UUID
    rule_name: str


def has_rules(organization_id: Any) -> Any:
    """Whether the organization has an active rule: a column for the statement that reads the organization."""
    return exists().where(rules_table.c.organization_id == organization_id, rules_table.c.active.is_(True))


def lead_traits(
    *,
    source: str | None,
    campaign_id: uuid.UUID | None,
    pipeline_id: uuid.UUID | None,
    form_ref: str | None,
    locale: str | None,
    timezone: str | None,
    at: datetime | None = None,
) -> LeadTraits:
    _, minute = local_moment(at or clock.now(), timezone)
    return LeadTraits(source, campaign_id, pipeline_id, form_ref, language_of(locale), minute)


def rule_of(row: Any) -> AssignmentRule:
    window = None
    if row["window_from"] is not None and row["window_to"] is not None:
        window = TimeWindow(row["window_from"], row["window_to"])
    return AssignmentRule(
        id=row["id"],
        name=row["name"],
        strategy=Strategy(row["strategy"]),
        user_ids=tuple(row["user_ids"]),
        sources=frozenset(row["sources"]),
        campaign_ids=frozenset(row["campaign_ids"]),
        pipeline_ids=frozenset(row["pipeline_ids"]),
        form_refs=frozenset(row["form_refs"]),
        languages=frozenset(row["languages"]),
        window=window,
        capacity=row["capacity"],
        cursor=row["cursor"],
    )


def availability_of(away_until: datetime | None, working_hours: Any) -> Availability:
    """The stored row as the rules read it (working hours: [{"day", "from", "to"}], validated on save)."""
    hours = tuple(
        WorkingHours(int(h["day"]), TimeWindow(parse_clock(h["from"]), parse_clock(h["to"])))
        for h in (working_hours or [])
    )
    return Availability(away_until, hours)


def place(conn: Connection, organization_id: uuid.UUID, traits: LeadTraits, timezone: str | None) -> Placed | None:
    return place_many(conn, organization_id, [traits], timezone)[0]


def place_many(
    conn: Connection, organization_id: uuid.UUID, traits: Sequence[LeadTraits], timezone: str | None
) -> list[Placed | None]:
    """The person each lead goes to (None: no rule could place it), in one pass for a batch; see the module
    docstring for the locks. Moves the round-robin cursors it used."""
    if not traits:
        return []
    rows = (
        conn.execute(
            select(rules_table)
            .where(rules_table.c.organization_id == organization_id, rules_table.c.active.is_(True))
            .order_by(rules_table.c.position, rules_table.c.id)
            .with_for_update()
        )
        .mappings()
        .all()
    )
    if not rows:
        return [None] * len(traits)
    rules = [rule_of(row) for row in rows]
    named = sorted({person for rule in rules for person in rule.user_ids}, key=str)
    states = staff_states(conn, organization_id, named, clock.now(), timezone)
    assignments, cursors = assign_many(rules, traits, states)
    if cursors:
        _move_cursors(conn, cursors)
    reported: set[tuple[uuid.UUID, uuid.UUID]] = set()
    for assignment in assignments:
        for rule_id, departed in assignment.departed.items():
            for person in departed:
                if (rule_id, person) not in reported:
                    reported.add((rule_id, person))
                    logger.warning(
                        "assignment rule names someone who left: skipped",
                        extra={"ruleId": str(rule_id), "userId": str(person), "organizationId": str(organization_id)},
                    )
    return [
        Placed(a.choice.user_id, a.choice.rule.id, a.choice.rule.name) if a.choice is not None else None
        for a in assignments
    ]


def staff_states(
    conn: Connection, organization_id: uuid.UUID, user_ids: Sequence[uuid.UUID], at: datetime, timezone: str | None
) -> dict[uuid.UUID, StaffState]:
    """Each named person's state in one statement: still active staff here, their availability, and how many
    open leads they own (an open status, not archived)."""
    if not user_ids:
        return {}
    people = recordset("named_staff", "named_staff", [{"user_id": u} for u in user_ids], {"user_id": Uuid})
    active = (
        select(memberships.c.id)
        .where(
            memberships.c.organization_id == organization_id,
            memberships.c.user_id == people.c.user_id,
            memberships.c.deleted_at.is_(None),
            memberships.c.status == MembershipStatus.ACTIVE.value,
            memberships.c.role.in_([r.value for r in STAFF_ROLES]),
        )
        .exists()
    )
    open_leads = (
        select(func.count())
        .where(
            leads.c.organization_id == organization_id,
            leads.c.assigned_to_user_id == people.c.user_id,
            leads.c.archived_at.is_(None),
            leads.c.status.in_(sorted(c.value for c in OPEN_CATEGORIES)),
        )
        .scalar_subquery()
    )
    rows = conn.execute(
        select(
            people.c.user_id,
            active.label("active"),
            staff_availability.c.away_until,
            staff_availability.c.working_hours,
            open_leads.label("open_leads"),
        ).select_from(
            people.outerjoin(
                staff_availability,
                and_(
                    staff_availability.c.organization_id == organization_id,
                    staff_availability.c.user_id == people.c.user_id,
                ),
            )
        )
    ).all()
    return {
        row.user_id: StaffState(
            active=bool(row.active),
            available=availability_of(row.away_until, row.working_hours).is_available(at, timezone),
            open_leads=int(row.open_leads),
        )
        for row in rows
    }


def _move_cursors(conn: Connection, cursors: dict[uuid.UUID, int]) -> None:
    """Every round-robin cursor a placement moved, in one statement (the rows are locked already)."""
    moved = recordset(
        "rule_cursors",
        "rule_cursors",
        [{"id": rule_id, "cursor": cursor} for rule_id, cursor in cursors.items()],
        {"id": Uuid, "cursor": Integer},
    )
    conn.execute(
        update(rules_table).where(rules_table.c.id == moved.c.id).values(cursor=moved.c.cursor, updated_at=sql_now())
    )


def rule_activity_row(organization_id: uuid.UUID, lead_id: uuid.UUID, placed: Placed) -> dict[str, Any]:
    """The timeline entry that records which rule placed the lead with whom."""
    return {
        "organization_id": organization_id,
        "lead_id": lead_id,
        "type": RULE_ASSIGNED_ACTIVITY,
        "payload": {"ruleId": str(placed.rule_id), "ruleName": placed.rule_name, "toUserId": str(placed.user_id)},
    }


def rule_activities(rows: list[dict[str, Any]], name: str = "rule_activities") -> Any:
    """The entries of `rule_activity_row` as a CTE for the INSERT of the leads they record (no round trip)."""
    return activities_insert(rows, name).cte(name)


def organization_rules(conn: Connection, organization_id: uuid.UUID) -> tuple[str | None, bool]:
    """(the organization's timezone, whether it has an active rule), in one statement: what a path that did
    not read the organization with its person lock (a reopen, a CSV chunk) needs before `place_many`."""
    row = conn.execute(
        select(organizations.c.timezone, has_rules(organizations.c.id)).where(organizations.c.id == organization_id)
    ).first()
    return (row[0], bool(row[1])) if row is not None else (None, False)


def assign_new_leads(
    conn: Connection, organization_id: uuid.UUID, locales: dict[uuid.UUID, str | None], source: str
) -> dict[uuid.UUID, Placed]:
    """Owners from the rules for leads just inserted unowned on the default pipeline's New stage (a CSV chunk
    with the option on): one pass over the chunk, one UPDATE of their owners, one write of their timeline
    entries. Nothing but one statement when the organization has no rules."""
    timezone, any_rules = organization_rules(conn, organization_id)
    if not any_rules or not locales:
        return {}
    pipeline_id = default_new_stage(conn, organization_id).pipeline_id
    lead_ids = list(locales)
    traits = [
        lead_traits(
            source=source,
            campaign_id=None,
            pipeline_id=pipeline_id,
            form_ref=None,
            locale=locales[lead_id],
            timezone=timezone,
        )
        for lead_id in lead_ids
    ]
    chosen = {
        lead_id: placed
        for lead_id, placed in zip(lead_ids, place_many(conn, organization_id, traits, timezone), strict=True)
        if placed is not None
    }
    if chosen:
        owners = recordset(
            "rule_owners",
            "rule_owners",
            [{"id": lead_id, "user_id": placed.user_id} for lead_id, placed in chosen.items()],
            {"id": Uuid, "user_id": Uuid},
        )
        conn.execute(
            update(leads)
            .where(
                leads.c.organization_id == organization_id,
                leads.c.id == owners.c.id,
                leads.c.assigned_to_user_id.is_(None),
            )
            .values(assigned_to_user_id=owners.c.user_id, updated_at=sql_now())
        )
        record_activities(
            conn, [rule_activity_row(organization_id, lead_id, placed) for lead_id, placed in chosen.items()]
        )
    return chosen
