"""Helpdesk configuration per organization: settings (business hours, auto-close window, escalation share,
whether Resolved pauses the clock), holidays, SLA targets per priority, queues and ordered routing rules.

Writes are for owners and admins (the route applies `require_manager`); reads for staff. The settings row is
made on first use (INSERT … ON CONFLICT DO NOTHING), with the defaults below and a fresh support token.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from sqlalchemy import Connection, Integer, Uuid, delete, func, insert, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert

from leadcrm.directory.staff import require_assignable_staff
from leadcrm.directory.tables import organizations
from leadcrm.platform import mail_keys
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.recordsets import recordset
from leadcrm.platform.errors import BadRequest, NotFound
from leadcrm.platform.ids import uuid7
from leadcrm.tickets.rules.mail import new_support_token, support_address
from leadcrm.tickets.rules.routing import Priority, RoutingRule, normalize_keywords
from leadcrm.tickets.rules.sla import (
    SEARCHED_WHOLE_DAYS,
    BusinessCalendar,
    CalendarError,
    calendar_from_settings,
    scarcest_business_time,
)
from leadcrm.tickets.tables import (
    ticket_holidays,
    ticket_queues,
    ticket_routing_rules,
    ticket_settings,
    ticket_sla_policies,
)

DEFAULT_BUSINESS_HOURS = {day: [["09:00", "17:00"]] for day in ("mon", "tue", "wed", "thu", "fri")}
# Business minutes (first response, resolution) for a priority the organization has not set.
DEFAULT_TARGETS: dict[Priority, tuple[int, int]] = {
    Priority.URGENT: (30, 4 * 60),
    Priority.HIGH: (60, 8 * 60),
    Priority.NORMAL: (4 * 60, 3 * 8 * 60),
    Priority.LOW: (8 * 60, 5 * 8 * 60),
}


def inbound_domain() -> str:
    """The domain SES receives mail for: support addresses share it with signed reply addresses."""
    return mail_keys.inbound_domain()


# -- settings and the SLA context ------------------------------------------------------------------------------


def ensure_settings(conn: Connection, organization_id: uuid.UUID, *, lock: bool = False) -> dict[str, Any]:
    conn.execute(
        pg_insert(ticket_settings)
        .values(
            organization_id=organization_id,
            support_token=new_support_token(),
            business_hours=DEFAULT_BUSINESS_HOURS,
        )
        .on_conflict_do_nothing(index_elements=["organization_id"])
    )
    query = select(ticket_settings).where(ticket_settings.c.organization_id == organization_id)
    if lock:
        query = query.with_for_update()
    return dict(conn.execute(query).mappings().one())


@dataclass(frozen=True)
class SlaContext:
    """What SLA arithmetic needs for one organization: its calendar, the escalation share, whether Resolved
    pauses the clock, and the targets per priority."""

    calendar: BusinessCalendar
    escalation_percent: int
    resolved_pauses_timer: bool
    auto_close_hours: int
    targets: dict[Priority, tuple[int, int]]

    def target(self, priority: Priority) -> tuple[timedelta, timedelta]:
        first, resolution = self.targets[priority]
        return timedelta(minutes=first), timedelta(minutes=resolution)

    def warn_share(self, target: timedelta) -> timedelta:
        return target * self.escalation_percent / 100


def _timezone(conn: Connection, organization_id: uuid.UUID) -> str:
    return conn.execute(select(organizations.c.timezone).where(organizations.c.id == organization_id)).scalar_one()


def holidays_of(conn: Connection, organization_id: uuid.UUID) -> list[dict[str, Any]]:
    return [
        dict(r)
        for r in conn.execute(
            select(ticket_holidays.c.holiday_date, ticket_holidays.c.name)
            .where(ticket_holidays.c.organization_id == organization_id)
            .order_by(ticket_holidays.c.holiday_date)
        ).mappings()
    ]


def targets_of(conn: Connection, organization_id: uuid.UUID) -> dict[Priority, tuple[int, int]]:
    targets = dict(DEFAULT_TARGETS)
    for row in conn.execute(
        select(ticket_sla_policies).where(ticket_sla_policies.c.organization_id == organization_id)
    ).mappings():
        targets[Priority(row["priority"])] = (row["first_response_minutes"], row["resolution_minutes"])
    return targets


def sla_context(conn: Connection, organization_id: uuid.UUID, settings: dict[str, Any] | None = None) -> SlaContext:
    settings = settings or ensure_settings(conn, organization_id)
    calendar = calendar_from_settings(
        _timezone(conn, organization_id),
        settings["business_hours"],
        [h["holiday_date"] for h in holidays_of(conn, organization_id)],
    )
    return SlaContext(
        calendar=calendar,
        escalation_percent=settings["escalation_percent"],
        resolved_pauses_timer=settings["resolved_pauses_timer"],
        auto_close_hours=settings["auto_close_hours"],
        targets=targets_of(conn, organization_id),
    )


def settings_view(conn: Connection, organization_id: uuid.UUID) -> dict[str, Any]:
    settings = ensure_settings(conn, organization_id)
    return {
        "support_address": support_address(settings["support_token"], inbound_domain()),
        "timezone": _timezone(conn, organization_id),
        "business_hours": settings["business_hours"],
        "holidays": holidays_of(conn, organization_id),
        "auto_close_hours": settings["auto_close_hours"],
        "escalation_percent": settings["escalation_percent"],
        "resolved_pauses_timer": settings["resolved_pauses_timer"],
        "sla_policies": [
            {"priority": p.value, "first_response_minutes": fr, "resolution_minutes": res}
            for p, (fr, res) in targets_of(conn, organization_id).items()
        ],
    }


def update_settings(conn: Connection, organization_id: uuid.UUID, changes: dict[str, Any]) -> dict[str, Any]:
    """Changes the fields given; `holidays` replaces the list, `sla_policies` upserts the priorities named,
    `rotate_support_address` gives the organization a new support token (the old address stops working).
    400 INVALID_CALENDAR / INVALID_SLA_POLICY with the reason."""
    ensure_settings(conn, organization_id, lock=True)
    values: dict[str, Any] = {}
    if "business_hours" in changes:
        try:
            calendar_from_settings(_timezone(conn, organization_id), changes["business_hours"])
        except CalendarError as error:
            raise BadRequest(str(error), code="INVALID_CALENDAR") from error
        values["business_hours"] = changes["business_hours"]
    for name in ("auto_close_hours", "escalation_percent", "resolved_pauses_timer"):
        if name in changes:
            values[name] = changes[name]
    if changes.get("rotate_support_address"):
        values["support_token"] = new_support_token()
    if values:
        conn.execute(
            update(ticket_settings)
            .where(ticket_settings.c.organization_id == organization_id)
            .values(**values, updated_at=sql_now())
        )
    if "holidays" in changes:
        _replace_holidays(conn, organization_id, changes["holidays"])
    if "sla_policies" in changes:
        _upsert_policies(conn, organization_id, changes["sla_policies"])
    if {"business_hours", "holidays", "sla_policies"} & set(changes):
        _require_reachable_targets(conn, organization_id)
    return settings_view(conn, organization_id)


def _require_reachable_targets(conn: Connection, organization_id: uuid.UUID) -> None:
    """Settings we accept can always be used: business hours and holidays that leave less business time
    within the SLA search than the longest target would make every later ticket's due time uncomputable.
    400 INVALID_CALENDAR, in the caller's transaction (nothing of the change is kept)."""
    context = sla_context(conn, organization_id)
    priority = max(context.targets, key=lambda p: max(context.targets[p]))
    longest = max(context.targets[priority])
    available, start_day = scarcest_business_time(context.calendar)
    if available < timedelta(minutes=longest):
        raise BadRequest(
            f"With these business hours and holidays a ticket opened on {start_day.isoformat()} has only "
            f"{available // timedelta(minutes=1)} business minutes in the {SEARCHED_WHOLE_DAYS} days that follow: "
            f"the {priority.value} target of {longest} business minutes could never fall due.",
            code="INVALID_CALENDAR",
            priority=priority.value,
            targetMinutes=longest,
            businessMinutes=available // timedelta(minutes=1),
            openedOn=start_day.isoformat(),
        )


def _replace_holidays(conn: Connection, organization_id: uuid.UUID, holidays: list[tuple[date, str]]) -> None:
    conn.execute(delete(ticket_holidays).where(ticket_holidays.c.organization_id == organization_id))
    if holidays:
        conn.execute(
            insert(ticket_holidays),
            [
                {"organization_id": organization_id, "holiday_date": d, "name": name}
                for d, name in dict(holidays).items()
            ],
        )


def _upsert_policies(conn: Connection, organization_id: uuid.UUID, policies: list[tuple[str, int, int]]) -> None:
    # One row per priority (the last one sent wins): one INSERT … ON CONFLICT cannot touch a row twice.
    policies = list({priority: (priority, first, resolution) for priority, first, resolution in policies}.values())
    for priority, first, resolution in policies:
        if first > resolution:
            raise BadRequest(
                f"{priority}: the first response target cannot be longer than the resolution target.",
                code="INVALID_SLA_POLICY",
            )
    if not policies:
        return
    statement = pg_insert(ticket_sla_policies).values(
        [
            {"organization_id": organization_id, "priority": p, "first_response_minutes": f, "resolution_minutes": r}
            for p, f, r in policies
        ]
    )
    conn.execute(
        statement.on_conflict_do_update(
            index_elements=["organization_id", "priority"],
            set_={
                "first_response_minutes": statement.excluded.first_response_minutes,
                "resolution_minutes": statement.excluded.resolution_minutes,
                "updated_at": sql_now(),
            },
        )
    )


# -- queues ----------------------------------------------------------------------------------------------------


def queue_not_found() -> NotFound:
    return NotFound("Queue not found.", code="TICKET_QUEUE_NOT_FOUND")


def list_queues(conn: Connection, organization_id: uuid.UUID) -> list[dict[str, Any]]:
    return [
        dict(r)
        for r in conn.execute(
            select(ticket_queues)
            .where(ticket_queues.c.organization_id == organization_id)
            .order_by(func.lower(ticket_queues.c.name), ticket_queues.c.id)
        ).mappings()
    ]


def _name_taken(conn: Connection, organization_id: uuid.UUID, name: str, except_id: uuid.UUID | None) -> bool:
    query = select(ticket_queues.c.id).where(
        # lower() on both sides in SQL, as the unique index does: Python's lower() folds letters the database's
        # collation may not (a name taken that way passed the check and broke the index: a 500)
        ticket_queues.c.organization_id == organization_id,
        func.lower(ticket_queues.c.name) == func.lower(name),
    )
    if except_id is not None:
        query = query.where(ticket_queues.c.id != except_id)
    return conn.execute(query).first() is not None


def _queue_name_conflict() -> BadRequest:
    return BadRequest("Another queue has this name.", code="TICKET_QUEUE_NAME_TAKEN")


def create_queue(
    conn: Connection, organization_id: uuid.UUID, name: str, escalation_user_id: uuid.UUID | None
) -> dict[str, Any]:
    if escalation_user_id is not None:
        require_assignable_staff(conn, organization_id, escalation_user_id)
    # Serialises queue creation per organization so the name check and the insert agree.
    ensure_settings(conn, organization_id, lock=True)
    if _name_taken(conn, organization_id, name, None):
        raise _queue_name_conflict()
    queue_id = uuid7()
    conn.execute(
        insert(ticket_queues).values(
            id=queue_id, organization_id=organization_id, name=name, escalation_user_id=escalation_user_id
        )
    )
    return read_queue(conn, organization_id, queue_id)


def read_queue(conn: Connection, organization_id: uuid.UUID, queue_id: uuid.UUID) -> dict[str, Any]:
    row = (
        conn.execute(
            select(ticket_queues).where(
                ticket_queues.c.organization_id == organization_id, ticket_queues.c.id == queue_id
            )
        )
        .mappings()
        .first()
    )
    if row is None:
        raise queue_not_found()
    return dict(row)


def update_queue(
    conn: Connection, organization_id: uuid.UUID, queue_id: uuid.UUID, changes: dict[str, Any]
) -> dict[str, Any]:
    ensure_settings(conn, organization_id, lock=True)
    read_queue(conn, organization_id, queue_id)
    values = dict(changes)
    if values.get("escalation_user_id") is not None:
        require_assignable_staff(conn, organization_id, values["escalation_user_id"])
    if "name" in values and _name_taken(conn, organization_id, values["name"], queue_id):
        raise _queue_name_conflict()
    if "archived" in values:
        values["archived_at"] = sql_now() if values.pop("archived") else None
    if values:
        conn.execute(
            update(ticket_queues).where(ticket_queues.c.id == queue_id).values(**values, updated_at=sql_now())
        )
    return read_queue(conn, organization_id, queue_id)


def require_live_queue(conn: Connection, organization_id: uuid.UUID, queue_id: uuid.UUID) -> None:
    if read_queue(conn, organization_id, queue_id)["archived_at"] is not None:
        raise BadRequest("The queue is archived.", code="TICKET_QUEUE_ARCHIVED")


# -- routing rules -----------------------------------------------------------------------------------------------


def rule_not_found() -> NotFound:
    return NotFound("Routing rule not found.", code="TICKET_ROUTING_RULE_NOT_FOUND")


def list_rules(conn: Connection, organization_id: uuid.UUID) -> list[dict[str, Any]]:
    return [
        dict(r)
        for r in conn.execute(
            select(ticket_routing_rules)
            .where(ticket_routing_rules.c.organization_id == organization_id)
            .order_by(ticket_routing_rules.c.position, ticket_routing_rules.c.id)
        ).mappings()
    ]


def routing_rules(conn: Connection, organization_id: uuid.UUID) -> list[RoutingRule]:
    """The organization's rules as the domain matches them; a rule whose queue is archived or whose queue and
    agent are both gone routes nowhere, so it is left out."""
    live_queues = {q["id"] for q in list_queues(conn, organization_id) if q["archived_at"] is None}
    rules = []
    for row in list_rules(conn, organization_id):
        queue_id = row["queue_id"] if row["queue_id"] in live_queues else None
        if queue_id is None and row["assignee_user_id"] is None:
            continue
        rules.append(
            RoutingRule(
                id=row["id"],
                position=row["position"],
                channels=frozenset(row["channels"]),
                priorities=frozenset(row["priorities"]),
                requester_types=frozenset(row["requester_types"]),
                keywords=tuple(row["keywords"]),
                queue_id=queue_id,
                assignee_user_id=row["assignee_user_id"],
                active=row["active"],
            )
        )
    return rules


def _check_rule_targets(conn: Connection, organization_id: uuid.UUID, values: dict[str, Any]) -> None:
    if values.get("queue_id") is not None:
        require_live_queue(conn, organization_id, values["queue_id"])
    if values.get("assignee_user_id") is not None:
        require_assignable_staff(conn, organization_id, values["assignee_user_id"])


def _clean_rule_values(values: dict[str, Any]) -> dict[str, Any]:
    cleaned = dict(values)
    for name in ("channels", "priorities", "requester_types"):
        if name in cleaned:
            cleaned[name] = sorted({str(v) for v in cleaned[name]})
    if "keywords" in cleaned:
        cleaned["keywords"] = list(normalize_keywords(cleaned["keywords"]))
    return cleaned


def create_rule(conn: Connection, organization_id: uuid.UUID, values: dict[str, Any]) -> dict[str, Any]:
    """A rule at `position` (default: last); the rules at and after it move down one."""
    values = _clean_rule_values(values)
    if values.get("queue_id") is None and values.get("assignee_user_id") is None:
        raise BadRequest("A rule routes to a queue, an agent or both.", code="TICKET_RULE_NEEDS_TARGET")
    _check_rule_targets(conn, organization_id, values)
    ensure_settings(conn, organization_id, lock=True)  # one rule order change at a time per organization
    count = conn.execute(
        select(func.count()).where(ticket_routing_rules.c.organization_id == organization_id)
    ).scalar_one()
    asked = values.pop("position", None)
    position = count if asked is None else min(asked, count)
    conn.execute(
        update(ticket_routing_rules)
        .where(ticket_routing_rules.c.organization_id == organization_id, ticket_routing_rules.c.position >= position)
        .values(position=ticket_routing_rules.c.position + 1)
    )
    rule_id = uuid7()
    conn.execute(
        insert(ticket_routing_rules).values(id=rule_id, organization_id=organization_id, position=position, **values)
    )
    return read_rule(conn, organization_id, rule_id)


def read_rule(conn: Connection, organization_id: uuid.UUID, rule_id: uuid.UUID) -> dict[str, Any]:
    row = (
        conn.execute(
            select(ticket_routing_rules).where(
                ticket_routing_rules.c.organization_id == organization_id, ticket_routing_rules.c.id == rule_id
            )
        )
        .mappings()
        .first()
    )
    if row is None:
        raise rule_not_found()
    return dict(row)


def update_rule(
    conn: Connection, organization_id: uuid.UUID, rule_id: uuid.UUID, changes: dict[str, Any]
) -> dict[str, Any]:
    current = read_rule(conn, organization_id, rule_id)
    values = _clean_rule_values(changes)
    merged = {**current, **values}
    if merged["queue_id"] is None and merged["assignee_user_id"] is None:
        raise BadRequest("A rule routes to a queue, an agent or both.", code="TICKET_RULE_NEEDS_TARGET")
    _check_rule_targets(conn, organization_id, values)
    if values:
        conn.execute(
            update(ticket_routing_rules)
            .where(ticket_routing_rules.c.id == rule_id)
            .values(**values, updated_at=sql_now())
        )
    return read_rule(conn, organization_id, rule_id)


def delete_rule(conn: Connection, organization_id: uuid.UUID, rule_id: uuid.UUID) -> None:
    ensure_settings(conn, organization_id, lock=True)
    position = read_rule(conn, organization_id, rule_id)["position"]
    conn.execute(delete(ticket_routing_rules).where(ticket_routing_rules.c.id == rule_id))
    conn.execute(
        update(ticket_routing_rules)
        .where(ticket_routing_rules.c.organization_id == organization_id, ticket_routing_rules.c.position > position)
        .values(position=ticket_routing_rules.c.position - 1)
    )


def reorder_rules(conn: Connection, organization_id: uuid.UUID, rule_ids: list[uuid.UUID]) -> list[dict[str, Any]]:
    """The rules in the order given; the list must name every rule of the organization exactly once."""
    ensure_settings(conn, organization_id, lock=True)
    current = {r["id"] for r in list_rules(conn, organization_id)}
    if len(rule_ids) != len(set(rule_ids)) or set(rule_ids) != current:
        raise BadRequest("Send every routing rule of the organization exactly once.", code="TICKET_RULE_ORDER_MISMATCH")
    order = recordset(
        "rule_order",
        "rule_order",
        [{"id": i, "position": n} for n, i in enumerate(rule_ids)],
        {"id": Uuid, "position": Integer},
    )
    conn.execute(  # one statement for the whole order
        update(ticket_routing_rules)
        .where(ticket_routing_rules.c.id == order.c.id)
        .values(position=order.c.position, updated_at=sql_now())
    )
    return list_rules(conn, organization_id)
