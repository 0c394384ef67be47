"""A CSV import chunk's staging table and the set-based statements that merge it (csv_import_runner).

The runner decides each row's outcome in Python (what must be Python: email validation, phone parsing for
dedup) and COPYs one line per row into a TEMP table of the chunk's transaction (dropped at its commit).
Five INSERT … SELECT then write, from that one table, the leads, their first status events, their receipts,
their first touches and the row report, all at one instant of the clock (a lead's creation, its first
status, receipt and touch are one moment). Nothing is serialized twice: a receipt's payload is built in SQL
from the row's cells, which the runner serialized once.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import Connection, DateTime, Integer, Text, Uuid, column, func, insert, literal, select, table, text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.dialects.postgresql import insert as pg_insert

from leadcrm.ingestion.csv_import import IMPORT_CHANNEL, IMPORT_SOURCE
from leadcrm.ingestion.tables import lead_import_rows
from leadcrm.leads.tables import lead_receipts, lead_status_events, leads
from leadcrm.leads.touches import imported_first_touches
from leadcrm.pipelines.stages import default_new_stage
from leadcrm.platform import clock
from leadcrm.platform.db.copy import copy_lines

STAGE = "lead_import_stage"
# In the order of each staged row (see `stage_chunk`).
STAGE_COLUMNS = {
    "row_number": Integer,
    "outcome": Text,  # created | duplicate | invalid
    "lead_id": Uuid,  # created
    "existing_lead_id": Uuid,  # duplicate
    "errors": JSONB,  # invalid
    "name": Text,
    "email": Text,
    "phone": Text,
    "note": Text,
    "locale": Text,
    "status_event_id": Uuid,
    "receipt_id": Uuid,
    "touch_id": Uuid,
    "cells": JSONB,  # the row as the file gave it (header -> cell), a created lead's receipt
}
_SQL_TYPES = {Integer: "integer", Text: "text", Uuid: "uuid", JSONB: "jsonb"}
_stage = table(STAGE, *(column(name, kind) for name, kind in STAGE_COLUMNS.items()))


def stage_chunk(conn: Connection, lines: Sequence[str]) -> None:
    """The chunk's rows (COPY text lines, values in STAGE_COLUMNS order) in the staging table, in one COPY."""
    definition = ", ".join(f"{name} {_SQL_TYPES[kind]}" for name, kind in STAGE_COLUMNS.items())
    conn.execute(text(f"CREATE TEMP TABLE {STAGE} ({definition}) ON COMMIT DROP"))
    copy_lines(conn, STAGE, list(STAGE_COLUMNS), lines)


def merge_leads(
    conn: Connection, organization_id: uuid.UUID, actor_user_id: uuid.UUID | None, job_id: uuid.UUID
) -> None:
    """The staged created rows' leads, first status events, receipts and first touches."""
    placement = default_new_stage(conn, organization_id)
    created = select(_stage).where(_stage.c.outcome == "created").subquery("created")
    org, actor = literal(organization_id, Uuid), literal(actor_user_id, Uuid)
    at = literal(clock.now(), DateTime(timezone=True))
    conn.execute(
        insert(leads).from_select(
            [
                "id", "organization_id", "name", "email", "phone", "locale", "note", "source", "status",
                "pipeline_id", "stage_id", "created_by_user_id", "created_at", "updated_at", "status_changed_at",
            ],
            select(
                created.c.lead_id, org, created.c.name, created.c.email, created.c.phone, created.c.locale,
                created.c.note, literal(IMPORT_SOURCE), literal(placement.category.value),
                literal(placement.pipeline_id, Uuid), literal(placement.stage_id, Uuid), actor, at, at, at,
            ),
        )
    )  # fmt: skip
    conn.execute(
        insert(lead_status_events).from_select(
            ["id", "organization_id", "lead_id", "to_status", "to_stage_id", "actor_user_id", "changed_at"],
            select(
                created.c.status_event_id, org, created.c.lead_id, literal(placement.category.value),
                literal(placement.stage_id, Uuid), actor, at,
            ),
        )
    )  # fmt: skip
    payload = func.jsonb_build_object(
        "jobId", literal(str(job_id), Text), "rowNumber", created.c.row_number, "row", created.c.cells
    )
    conn.execute(
        insert(lead_receipts).from_select(
            ["id", "organization_id", "lead_id", "channel", "duplicate", "payload", "received_at"],
            select(created.c.receipt_id, org, created.c.lead_id, literal(IMPORT_CHANNEL), literal(False), payload, at),
        )
    )
    touches = select(created.c.lead_id.label("id"), created.c.touch_id, created.c.receipt_id).subquery("touched")
    conn.execute(imported_first_touches(organization_id, touches, at))


def merge_report(conn: Connection, organization_id: uuid.UUID, job_id: uuid.UUID) -> None:
    """Every staged row's line of the report."""
    conn.execute(
        pg_insert(lead_import_rows)
        .from_select(
            ["job_id", "row_number", "organization_id", "outcome", "lead_id", "existing_lead_id", "errors"],
            select(
                literal(job_id, Uuid),
                _stage.c.row_number,
                literal(organization_id, Uuid),
                _stage.c.outcome,
                _stage.c.lead_id,
                _stage.c.existing_lead_id,
                _stage.c.errors,
            ),
        )
        .on_conflict_do_nothing(index_elements=["job_id", "row_number"])
    )
