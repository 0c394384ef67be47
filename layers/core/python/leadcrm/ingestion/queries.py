"""Ingestion's reads: CSV import jobs and their row reports."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Uuid, literal, select, tuple_

from leadcrm.ingestion.csv_import import JOB_COLUMNS
from leadcrm.ingestion.tables import lead_import_jobs, lead_import_rows
from leadcrm.platform.errors import BadRequest, NotFound
from leadcrm.platform.keyset import decode_keyset, encode_keyset, keyset_instant


def get_import(conn: Connection, organization_id: uuid.UUID, job_id: uuid.UUID) -> dict[str, Any]:
    row = (
        conn.execute(
            select(*JOB_COLUMNS).where(
                lead_import_jobs.c.organization_id == organization_id, lead_import_jobs.c.id == job_id
            )
        )
        .mappings()
        .first()
    )
    if row is None:
        raise NotFound("No such import.", code="IMPORT_NOT_FOUND")
    return dict(row)

@dataclass(frozen=True)
class Page:
    items: list[dict[str, Any]]
    next_cursor: str | None

def list_imports(conn: Connection, organization_id: uuid.UUID, *, limit: int, cursor: str | None) -> Page:
    """The organization's jobs, newest first (keyset on created_at, id)."""
    query = select(*JOB_COLUMNS).where(lead_import_jobs.c.organization_id == organization_id)
    if cursor:
        raw_created_at, raw_id = decode_keyset(cursor, 2)
        try:
            after = tuple_(literal(keyset_instant(raw_created_at)), literal(uuid.UUID(raw_id), Uuid))
        except ValueError as error:
            raise BadRequest("The cursor is not one this API returned.", code="INVALID_CURSOR") from error
        query = query.where(tuple_(lead_import_jobs.c.created_at, lead_import_jobs.c.id) < after)
    rows = conn.execute(
        query.order_by(lead_import_jobs.c.created_at.desc(), lead_import_jobs.c.id.desc()).limit(limit + 1)
    ).mappings()
    items = [dict(r) for r in rows]
    more = len(items) > limit
    items = items[:limit]
    next_cursor = encode_keyset([items[-1]["created_at"].isoformat(), str(items[-1]["id"])]) if more else None
    return Page(items, next_cursor)

def list_import_rows(
    conn: Connection,
    organization_id: uuid.UUID,
    job_id: uuid.UUID,
    *,
    outcome: str | None,
    limit: int,
    cursor: str | None,
) -> Page:
    """The job's per-row report in file order (keyset on the row number), optionally one outcome only."""
    get_import(conn, organization_id, job_id)  # 404 for another organization's job
    query = select(
        lead_import_rows.c.row_number,
        lead_import_rows.c.outcome,
        lead_import_rows.c.lead_id,
        lead_import_rows.c.existing_lead_id,
        lead_import_rows.c.errors,
    ).where(lead_import_rows.c.job_id == job_id)
    if outcome is not None:
        query = query.where(lead_import_rows.c.outcome == outcome)
    if cursor:
        (after,) = decode_keyset(cursor, 1)
        if not after.isdigit() or len(after) > 9:
            raise BadRequest("The cursor is not one this API returned.", code="INVALID_CURSOR")
        query = query.where(lead_import_rows.c.row_number > int(after))
    rows = [dict(r) for r in conn.execute(query.order_by(lead_import_rows.c.row_number).limit(limit + 1)).mappings()]
    more = len(rows) > limit
    rows = rows[:limit]
    return Page(rows, encode_keyset([str(rows[-1]["row_number"])]) if more else None)
