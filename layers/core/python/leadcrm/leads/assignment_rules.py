"""The organization's assignment rules (owner/admin write, staff read): ordered, first match wins.

A rule names its staff when it is saved (each must be active staff then: 400 ASSIGNEE_NOT_STAFF) and its
campaign hooks and pipelines must be the organization's (400 ASSIGNMENT_RULE_UNKNOWN_REFERENCE). Someone who
leaves later stays named: the intake skips them (leads.assignment) and every read of the rule reports them in
`problems` ({"code": "ASSIGNEE_LEFT", "userId": …}), computed when read, so the report is never stale.

Position changes (create at a position, delete, reorder) take the organization's rule rows `FOR UPDATE`
first, the same locks an intake takes, so an order change and a placement do not interleave.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import Connection, Integer, Uuid, delete, func, insert, select, update

from leadcrm.directory.rules import STAFF_ROLES, MembershipStatus
from leadcrm.directory.staff import require_assignable_staff
from leadcrm.directory.tables import memberships
from leadcrm.leads.rules.assignment import Strategy
from leadcrm.leads.tables import lead_assignment_rules as rules_table
from leadcrm.leads.tables import lead_campaigns
from leadcrm.pipelines.tables import pipelines
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.recordsets import recordset
from leadcrm.platform.errors import BadRequest, NotFound
from leadcrm.platform.ids import uuid7

ASSIGNEE_LEFT = "ASSIGNEE_LEFT"
# The columns a caller may set (besides position); arrays are stored sorted and without repeats except
# user_ids, whose order is the round-robin's.
RULE_FIELDS = (
    "name",
    "active",
    "sources",
    "campaign_ids",
    "pipeline_ids",
    "form_refs",
    "languages",
    "window_from",
    "window_to",
    "strategy",
    "user_ids",
    "capacity",
)


def rule_not_found() -> NotFound:
    return NotFound("Assignment rule not found.", code="ASSIGNMENT_RULE_NOT_FOUND")


def list_rules(conn: Connection, organization_id: uuid.UUID) -> list[dict[str, Any]]:
    """Every rule in order, each with its `problems` (named staff who left), in one statement."""
    rows = conn.execute(
        select(rules_table, _departed(organization_id).label("departed"))
        .where(rules_table.c.organization_id == organization_id)
        .order_by(rules_table.c.position, rules_table.c.id)
    ).mappings()
    return [_with_problems(row) for row in rows]


def read_rule(conn: Connection, organization_id: uuid.UUID, rule_id: uuid.UUID) -> dict[str, Any]:
    row = (
        conn.execute(
            select(rules_table, _departed(organization_id).label("departed")).where(
                rules_table.c.organization_id == organization_id, rules_table.c.id == rule_id
            )
        )
        .mappings()
        .first()
    )
    if row is None:
        raise rule_not_found()
    return _with_problems(row)


def _departed(organization_id: uuid.UUID) -> Any:
    """The rule's named people who are not active staff of the organization any more (an array)."""
    person = func.unnest(rules_table.c.user_ids).table_valued("user_id").render_derived(name="person")
    still_staff = (
        select(memberships.c.id)
        .where(
            memberships.c.organization_id == organization_id,
            memberships.c.user_id == person.c.user_id,
            memberships.c.deleted_at.is_(None),
            memberships.c.status == MembershipStatus.ACTIVE.value,
            memberships.c.role.in_([r.value for r in STAFF_ROLES]),
        )
        .exists()
    )
    return select(func.array_agg(person.c.user_id)).select_from(person).where(~still_staff).scalar_subquery()


def _with_problems(row: Any) -> dict[str, Any]:
    rule = dict(row)
    departed = rule.pop("departed") or []
    rule["problems"] = [{"code": ASSIGNEE_LEFT, "user_id": user_id} for user_id in departed]
    return rule


def _lock_rules(conn: Connection, organization_id: uuid.UUID) -> list[uuid.UUID]:
    """The organization's rule ids in order, their rows locked (one order change at a time)."""
    return list(
        conn.execute(
            select(rules_table.c.id)
            .where(rules_table.c.organization_id == organization_id)
            .order_by(rules_table.c.position, rules_table.c.id)
            .with_for_update()
        ).scalars()
    )


def _check(conn: Connection, organization_id: uuid.UUID, rule: dict[str, Any], changed: dict[str, Any]) -> None:
    """The rule as it will be stored must make sense, and what the change names must be the organization's."""
    strategy = Strategy(rule["strategy"])
    people = rule["user_ids"]
    if strategy is Strategy.FIXED and len(people) != 1:
        raise BadRequest("A fixed rule names exactly one person.", code="ASSIGNMENT_RULE_INVALID")
    if not people:
        raise BadRequest("A rule names the staff it assigns to.", code="ASSIGNMENT_RULE_INVALID")
    if (rule["window_from"] is None) != (rule["window_to"] is None):
        raise BadRequest("A time window has both ends or none.", code="ASSIGNMENT_RULE_INVALID")
    for user_id in changed.get("user_ids") or []:
        require_assignable_staff(conn, organization_id, user_id)
    _require_own(conn, organization_id, lead_campaigns, changed.get("campaign_ids"))
    _require_own(conn, organization_id, pipelines, changed.get("pipeline_ids"))


def _require_own(conn: Connection, organization_id: uuid.UUID, table: Any, ids: list[uuid.UUID] | None) -> None:
    if not ids:
        return
    found = conn.execute(
        select(func.count()).where(table.c.organization_id == organization_id, table.c.id.in_(ids))
    ).scalar_one()
    if found != len(set(ids)):
        raise BadRequest(
            "A campaign or pipeline the rule names is not this organization's.",
            code="ASSIGNMENT_RULE_UNKNOWN_REFERENCE",
        )


def _clean(values: dict[str, Any]) -> dict[str, Any]:
    cleaned = {name: values[name] for name in RULE_FIELDS if name in values}
    for name in ("sources", "campaign_ids", "pipeline_ids", "form_refs", "languages"):
        if name in cleaned:
            cleaned[name] = sorted(set(cleaned[name] or []), key=str)
    if "languages" in cleaned:
        cleaned["languages"] = sorted({language.lower() for language in cleaned["languages"]})
    if "user_ids" in cleaned:
        cleaned["user_ids"] = list(dict.fromkeys(cleaned["user_ids"] or []))  # order kept, repeats dropped
    if "strategy" in cleaned:
        cleaned["strategy"] = Strategy(cleaned["strategy"]).value
    return cleaned


_DEFAULTS: dict[str, Any] = {
    "active": True,
    "sources": [],
    "campaign_ids": [],
    "pipeline_ids": [],
    "form_refs": [],
    "languages": [],
    "window_from": None,
    "window_to": None,
    "user_ids": [],
    "capacity": None,
}


def create_rule(
    conn: Connection, organization_id: uuid.UUID, values: dict[str, Any], position: int | None = None
) -> dict[str, Any]:
    """A rule at `position` (default: last); the rules at and after it move down one."""
    changed = _clean(values)
    _check(conn, organization_id, {**_DEFAULTS, **changed}, changed)
    count = len(_lock_rules(conn, organization_id))
    at = count if position is None else min(position, count)
    conn.execute(
        update(rules_table)
        .where(rules_table.c.organization_id == organization_id, rules_table.c.position >= at)
        .values(position=rules_table.c.position + 1)
    )
    rule_id = uuid7()
    conn.execute(insert(rules_table).values(id=rule_id, organization_id=organization_id, position=at, **changed))
    return read_rule(conn, organization_id, rule_id)


def update_rule(
    conn: Connection, organization_id: uuid.UUID, rule_id: uuid.UUID, values: dict[str, Any]
) -> dict[str, Any]:
    """Changes what the rule matches or whom it assigns to. A changed list of people restarts the round."""
    current = read_rule(conn, organization_id, rule_id)
    changed = _clean(values)
    _check(conn, organization_id, {**current, **changed}, changed)
    if "user_ids" in changed:
        changed["cursor"] = 0
    if changed:
        conn.execute(
            update(rules_table)
            .where(rules_table.c.organization_id == organization_id, rules_table.c.id == rule_id)
            .values(**changed, updated_at=sql_now())
        )
    return read_rule(conn, organization_id, rule_id)


def delete_rule(conn: Connection, organization_id: uuid.UUID, rule_id: uuid.UUID) -> None:
    if rule_id not in _lock_rules(conn, organization_id):
        raise rule_not_found()
    position = conn.execute(
        delete(rules_table).where(rules_table.c.id == rule_id).returning(rules_table.c.position)
    ).scalar_one()
    conn.execute(
        update(rules_table)
        .where(rules_table.c.organization_id == organization_id, rules_table.c.position > position)
        .values(position=rules_table.c.position - 1)
    )


def reorder_rules(conn: Connection, organization_id: uuid.UUID, rule_ids: list[uuid.UUID]) -> list[dict[str, Any]]:
    """The rules in the order given; the list must name every rule of the organization exactly once."""
    current = set(_lock_rules(conn, organization_id))
    if len(rule_ids) != len(set(rule_ids)) or set(rule_ids) != current:
        raise BadRequest(
            "Send every assignment rule of the organization exactly once.", code="ASSIGNMENT_RULE_ORDER_MISMATCH"
        )
    if rule_ids:
        order = recordset(
            "rule_order",
            "rule_order",
            [{"id": i, "position": n} for n, i in enumerate(rule_ids)],
            {"id": Uuid, "position": Integer},
        )
        conn.execute(
            update(rules_table)
            .where(rules_table.c.id == order.c.id)
            .values(position=order.c.position, updated_at=sql_now())
        )
    return list_rules(conn, organization_id)
