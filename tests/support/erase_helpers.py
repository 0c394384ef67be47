"""Helpers for the task lifecycle, erase and digest tests: tasks, outbox deliveries, a whole-schema PII scan."""

from __future__ import annotations

import uuid
from datetime import date
from typing import Any

from sqlalchemy import bindparam, insert, select, text, update

from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.ids import uuid7
from leadcrm.platform.tables import outbox
from leadcrm.work.tables import tasks
from tests.support.events import eventbridge_envelope, sqs_event, sqs_record

LIFECYCLE_QUEUE = "leadcrm-task-lifecycle"


def make_task(
    org_id: uuid.UUID,
    *,
    lead_id: Any = None,
    task_type: str = "contact_lead",
    status: str = "pending",
    title: str = "Call the lead",
    assignee: uuid.UUID | None = None,
    due_date: date | None = None,
    deleted: bool = False,
    created_at: Any = None,
) -> uuid.UUID:
    task_id = uuid7()
    values: dict[str, Any] = {
        "id": task_id,
        "organization_id": org_id,
        "type": task_type,
        "title": title,
        "status": status,
        "assignee_user_id": assignee,
        "linked_lead_id": uuid.UUID(str(lead_id)) if lead_id is not None else None,
        "due_date": due_date,
    }
    if deleted:
        values["deleted_at"] = text("now()")
    if created_at is not None:
        values["created_at"] = created_at
    with get_engine().begin() as conn:
        conn.execute(insert(tasks).values(**values))
    return task_id


def task_rows(*, lead_id: Any = None, org_id: uuid.UUID | None = None) -> list[dict[str, Any]]:
    query = select(tasks).order_by(tasks.c.id)
    if lead_id is not None:
        query = query.where(tasks.c.linked_lead_id == uuid.UUID(str(lead_id)))
    if org_id is not None:
        query = query.where(tasks.c.organization_id == org_id)
    with get_engine().connect() as conn:
        return [dict(r) for r in conn.execute(query).mappings()]


def task_status(task_id: uuid.UUID) -> str | None:
    with get_engine().connect() as conn:
        return conn.execute(select(tasks.c.status).where(tasks.c.id == task_id)).scalar_one_or_none()


def set_task_status(task_id: uuid.UUID, status: str) -> None:
    with get_engine().begin() as conn:
        conn.execute(update(tasks).where(tasks.c.id == task_id).values(status=status))


def outbox_detail(row: dict[str, Any]) -> dict[str, Any]:
    """An outbox row as the `detail` task_lifecycle receives (the shape DomainEvent.detail() publishes)."""
    return {
        "eventId": str(row["id"]),
        "type": row["type"],
        "organizationId": str(row["organization_id"]),
        "aggregateId": str(row["aggregate_id"]),
        "occurredAt": row["occurred_at"].isoformat(),
        "payload": row["payload"],
    }


def lifecycle_record(detail: dict[str, Any], *, message_id: str | None = None) -> dict[str, Any]:
    envelope = eventbridge_envelope(detail["type"], detail)
    return sqs_record(envelope, queue_name=LIFECYCLE_QUEUE, message_id=message_id)


def deliver(task_lifecycle: Any, *details: dict[str, Any]) -> dict[str, Any]:
    return task_lifecycle(sqs_event(*(lifecycle_record(d) for d in details)))


def outbox_rows(aggregate_id: Any, event_type: str) -> list[dict[str, Any]]:
    with get_engine().connect() as conn:
        rows = conn.execute(
            select(outbox)
            .where(outbox.c.aggregate_id == uuid.UUID(str(aggregate_id)), outbox.c.type == event_type)
            .order_by(outbox.c.occurred_at)
        ).mappings()
        return [dict(r) for r in rows]


_SEARCHABLE_TYPES = ("text", "character varying", "character", "jsonb", "json")


def tables_containing(*needles: str) -> dict[str, list[str]]:
    """Every (table.column) of the public schema whose text or JSON holds one of `needles` (any case):
    driven by information_schema, so tables added later are searched too."""
    with get_engine().connect() as conn:
        columns = conn.execute(
            text(
                "SELECT table_name, column_name FROM information_schema.columns "
                "JOIN information_schema.tables USING (table_schema, table_name) "
                "WHERE table_schema = 'public' AND table_type = 'BASE TABLE' AND data_type IN :types "
                "AND table_name <> 'alembic_version'"
            ).bindparams(bindparam("types", expanding=True)),
            {"types": list(_SEARCHABLE_TYPES)},
        ).all()
        found: dict[str, list[str]] = {}
        for table, column in columns:
            for needle in needles:
                hit = conn.execute(
                    text(f'SELECT 1 FROM "{table}" WHERE strpos(lower("{column}"::text), lower(:needle)) > 0 LIMIT 1'),
                    {"needle": needle},
                ).first()
                if hit:
                    found.setdefault(needle, []).append(f"{table}.{column}")
    return found


def foreign_keys_to_leads() -> dict[str, str]:
    """`table.column` → delete rule of every foreign key column that references leads.id (a key over
    (organization_id, lead_id) names its lead column only)."""
    with get_engine().connect() as conn:
        rows = conn.execute(
            text(
                "SELECT c.conrelid::regclass::text AS table_name, a.attname AS column_name, "
                "  CASE c.confdeltype WHEN 'c' THEN 'CASCADE' WHEN 'n' THEN 'SET NULL' WHEN 'r' THEN 'RESTRICT' "
                "    WHEN 'd' THEN 'SET DEFAULT' ELSE 'NO ACTION' END AS delete_rule "
                "FROM pg_constraint c CROSS JOIN LATERAL unnest(c.conkey, c.confkey) AS k(col, referenced) "
                "JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.col "
                "JOIN pg_attribute r ON r.attrelid = c.confrelid AND r.attnum = k.referenced "
                "WHERE c.contype = 'f' AND c.confrelid = 'leads'::regclass AND r.attname = 'id' "
                "  AND c.connamespace = 'public'::regnamespace"
            )
        ).all()
    return {f"{r.table_name}.{r.column_name}": r.delete_rule for r in rows}
