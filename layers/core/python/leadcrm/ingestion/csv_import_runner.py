"""Running a CSV import job (the ingestion queue's `lead_import` message): claim the job's lease, stream the file
from S3, and commit it in chunks, each with its checkpoint, so a run cut short by the Lambda's time (or a crash)
is picked up where it stopped. Each chunk dedups its people in bulk and writes leads, receipts, first touches and
the row report set-based."""

from __future__ import annotations

import csv
import json
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from itertools import islice
from typing import Any

from sqlalchemy import Connection, DateTime, Integer, Text, Uuid, func, insert, literal, select, text, update
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.dialects.postgresql import insert as pg_insert

from leadcrm.directory.queries import organization_phone_region
from leadcrm.ingestion.csv_import import (
    CHUNK_ROWS,
    COMPLETED,
    FAILED,
    IMPORT_CHANNEL,
    IMPORT_KIND,
    IMPORT_SOURCE,
    LEASE_SECONDS,
    QUEUED,
    RUNNING,
    STOP_WHEN_REMAINING_MS,
    ChunkSource,
    logger,
)
from leadcrm.ingestion.rules.csv_import import (
    IMPORT_COMPLETED,
    ImportFileError,
    ImportRow,
    PeopleIndex,
    decoded_lines,
    parse_row,
    phone_lookup_key,
    resolve_columns,
)
from leadcrm.ingestion.tables import lead_import_jobs, lead_import_rows
from leadcrm.leads.dedup import CANDIDATE_LIMIT
from leadcrm.leads.rules.intake import dedup_lock_keys, normalized_email
from leadcrm.leads.tables import lead_receipts, lead_status_events, leads
from leadcrm.leads.touches import imported_first_touches
from leadcrm.pipelines.stages import default_new_stage
from leadcrm.platform import clock
from leadcrm.platform.adapters import ingestion_queue, lead_import_files
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.recordsets import recordset
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.events import DomainEvent
from leadcrm.platform.ids import uuid7


class RunResult(StrEnum):
    COMPLETED = "completed"
    FAILED = "failed"  # the file as a whole cannot be imported (reported on the job)
    PAUSED = "paused"  # out of time: a continuation was queued
    SKIPPED = "skipped"  # another run holds the job, or it is not runnable (finished, not started)

@dataclass(frozen=True)
class _Claim:
    organization_id: uuid.UUID
    actor_user_id: uuid.UUID | None
    object_key: str
    mapping: dict[str, str]
    rows_processed: int

def run_import(
    job_id: uuid.UUID,
    *,
    worker: str,
    remaining_ms: Callable[[], int],
    read_file: ChunkSource = lead_import_files.iter_chunks,
    chunk_rows: int = CHUNK_ROWS,
) -> RunResult:
    """Work through the job from its checkpoint until the file ends or time runs short (then a continuation
    is queued). `worker` names this run (the Lambda request id): the job's lease is held in its name."""
    claim = _claim(job_id, worker)
    if claim is None:
        return RunResult.SKIPPED
    position = claim.rows_processed
    try:
        rows = csv.reader(decoded_lines(read_file(claim.object_key)))
        header = next(rows, None)
        if header is None:
            raise ImportFileError("EMPTY_FILE", "The file is empty.")
        columns = resolve_columns(header, claim.mapping)
        _skip(rows, position)  # committed by an earlier run
        while batch := list(islice(rows, chunk_rows)):
            parsed = [parse_row(position + offset + 1, cells, columns) for offset, cells in enumerate(batch)]
            received = [dict(zip(header, cells, strict=False)) for cells in batch]
            if not _commit_chunk(job_id, worker, claim, position, parsed, received):
                return RunResult.SKIPPED  # the lease passed to another run, which carries on
            position += len(batch)
            if remaining_ms() < STOP_WHEN_REMAINING_MS:
                _release(job_id, worker)
                ingestion_queue.enqueue(IMPORT_KIND, {"jobId": str(job_id)})
                return RunResult.PAUSED
    except ImportFileError as error:
        _fail(job_id, worker, error.code, error.message)
        return RunResult.FAILED
    except csv.Error:
        _fail(job_id, worker, "INVALID_CSV", f"The file is not valid CSV after row {position}.")
        return RunResult.FAILED
    except FileNotFoundError:
        _fail(job_id, worker, "FILE_MISSING", "The uploaded file is gone (files are kept for 7 days).")
        return RunResult.FAILED
    except BaseException:
        # The retry of this message may take the job at once (a run killed outright keeps the lease until it
        # lapses, which is shorter than the queue's visibility timeout). Committed chunks stay committed.
        _release(job_id, worker)
        raise
    _complete(job_id, worker, claim)
    return RunResult.COMPLETED

def _skip(rows: Iterable[list[str]], count: int) -> None:
    for _ in islice(rows, count):
        pass

def _claim(job_id: uuid.UUID, worker: str) -> _Claim | None:
    """Take the job's lease: a queued job, or a running one whose lease lapsed (its run died) or is ours."""
    with UnitOfWork() as uow:
        row = uow.connection.execute(
            update(lead_import_jobs)
            .where(
                lead_import_jobs.c.id == job_id,
                lead_import_jobs.c.status.in_((QUEUED, RUNNING)),
                (lead_import_jobs.c.lease_until.is_(None))
                | (lead_import_jobs.c.lease_until < sql_now())
                | (lead_import_jobs.c.lease_owner == worker),
            )
            .values(
                status=RUNNING,
                lease_owner=worker,
                lease_until=sql_now() + text(f"interval '{LEASE_SECONDS} seconds'"),
                started_at=func.coalesce(lead_import_jobs.c.started_at, sql_now()),
                updated_at=sql_now(),
            )
            .returning(
                lead_import_jobs.c.organization_id,
                lead_import_jobs.c.created_by_user_id,
                lead_import_jobs.c.object_key,
                lead_import_jobs.c.column_mapping,
                lead_import_jobs.c.rows_processed,
            )
        ).first()
        uow.commit()
    if row is None:
        return None
    return _Claim(
        row.organization_id, row.created_by_user_id, row.object_key, dict(row.column_mapping or {}), row.rows_processed
    )

def _holds_lease(conn: Connection, job_id: uuid.UUID, worker: str, position: int) -> bool:
    """Under the job's row lock: still ours, and nobody moved the checkpoint since we read it."""
    row = conn.execute(
        select(lead_import_jobs.c.lease_owner, lead_import_jobs.c.rows_processed, lead_import_jobs.c.status)
        .where(lead_import_jobs.c.id == job_id)
        .with_for_update()
    ).one()
    return row.lease_owner == worker and row.rows_processed == position and row.status == RUNNING

def _commit_chunk(
    job_id: uuid.UUID,
    worker: str,
    claim: _Claim,
    position: int,
    parsed: list[ImportRow],
    received: list[dict[str, str]],
) -> bool:
    """One chunk in one transaction: its new leads, its report rows and the checkpoint after it."""
    org = claim.organization_id
    with UnitOfWork() as uow:
        conn = uow.connection
        if not _holds_lease(conn, job_id, worker, position):
            return False
        valid = [row for row in parsed if row.valid]
        _lock_people(conn, org, valid)
        people = _existing_people(conn, org, valid)
        report: list[dict[str, Any]] = []
        new_leads: list[dict[str, Any]] = []
        for row, cells in zip(parsed, received, strict=True):
            if not row.valid:
                report.append({"row_number": row.row_number, "outcome": "invalid", "errors": row.errors})
                continue
            existing = people.match(row.email, row.phone)
            if existing is not None:
                report.append({"row_number": row.row_number, "outcome": "duplicate", "existing_lead_id": existing})
                continue
            lead_id = uuid7()
            people.add(lead_id, row.email, row.phone)
            new_leads.append(_lead_values(lead_id, row, cells, job_id))
            report.append({"row_number": row.row_number, "outcome": "created", "lead_id": lead_id})
        if new_leads:
            _insert_leads(conn, org, claim.actor_user_id, new_leads)
        _insert_report(conn, org, job_id, report)
        counts = {o: sum(1 for r in report if r["outcome"] == o) for o in ("created", "duplicate", "invalid")}
        conn.execute(
            update(lead_import_jobs)
            .where(lead_import_jobs.c.id == job_id)
            .values(
                rows_processed=position + len(parsed),
                created_count=lead_import_jobs.c.created_count + counts["created"],
                duplicate_count=lead_import_jobs.c.duplicate_count + counts["duplicate"],
                invalid_count=lead_import_jobs.c.invalid_count + counts["invalid"],
                lease_until=sql_now() + text(f"interval '{LEASE_SECONDS} seconds'"),
                updated_at=sql_now(),
            )
        )
        uow.commit()
    return True

def _lock_people(conn: Connection, organization_id: uuid.UUID, rows: list[ImportRow]) -> None:
    """Dedup's person locks for every row of the chunk, in one statement and in the global key order, so a
    capture or staff create of the same person waits for the chunk (and the chunk for it), never both."""
    keys = sorted({key for row in rows for key in dedup_lock_keys(organization_id, row.email, row.phone)})
    if keys:
        conn.execute(
            text(
                "SELECT count(pg_advisory_xact_lock(k)) FROM (SELECT value::bigint AS k "
                "FROM jsonb_array_elements_text(CAST(:keys AS jsonb)) ORDER BY 1) AS ordered"
            ),
            {"keys": json.dumps(keys)},
        )

def _existing_people(conn: Connection, organization_id: uuid.UUID, rows: list[ImportRow]) -> PeopleIndex:
    """The organization's leads any row may be, in one query on the dedup indexes (lower(email), the phone's
    last seven digits), oldest first, with the organization's region for comparing phones."""
    people = PeopleIndex(organization_phone_region(conn, organization_id))
    emails = sorted({key for row in rows if (key := normalized_email(row.email)) is not None})
    phone_keys = sorted({key for row in rows if (key := phone_lookup_key(row.phone)) is not None})
    if not emails and not phone_keys:
        return people
    # One index probe per key, whatever the statistics say: for an organization they do not know yet (its
    # first import), the planner would rather walk all its leads and test each against both arrays (180 ms
    # per chunk instead of a few, measured). LATERAL with a LIMIT (dedup's candidate bound) cannot be
    # flattened into such a join. Sorted oldest first here: dedup resolves to the oldest lead.
    found = conn.execute(
        text(
            "SELECT m.* FROM jsonb_array_elements_text(CAST(:emails AS jsonb)) AS k(v) CROSS JOIN LATERAL ("
            "SELECT id, email, phone, created_at FROM leads WHERE organization_id = :org AND lower(email) = k.v "
            "LIMIT :bound) AS m UNION "
            "SELECT m.* FROM jsonb_array_elements_text(CAST(:phones AS jsonb)) AS k(v) CROSS JOIN LATERAL ("
            "SELECT id, email, phone, created_at FROM leads WHERE organization_id = :org "
            "AND right(phone_digits, 7) = k.v LIMIT :bound) AS m"
        ),
        {
            "org": organization_id,
            "emails": json.dumps(emails),
            "phones": json.dumps(phone_keys),
            "bound": CANDIDATE_LIMIT,
        },
    )
    for lead in sorted(found, key=lambda row: (row.created_at, row.id)):
        people.add(lead.id, lead.email, lead.phone)
    return people

def _lead_values(lead_id: uuid.UUID, row: ImportRow, cells: dict[str, str], job_id: uuid.UUID) -> dict[str, Any]:
    return {
        "id": str(lead_id),
        "name": row.name,
        "email": row.email,
        "phone": row.phone,
        "note": row.note,
        "locale": row.locale,
        "status_event_id": str(uuid7()),
        "receipt_id": str(uuid7()),
        "touch_id": str(uuid7()),
        "payload": {"jobId": str(job_id), "rowNumber": row.row_number, "row": cells},
    }

_LEAD_ROW_COLUMNS = {
    "id": Uuid,
    "name": Text,
    "email": Text,
    "phone": Text,
    "note": Text,
    "locale": Text,
    "status_event_id": Uuid,
    "receipt_id": Uuid,
    "touch_id": Uuid,
    "payload": JSONB,
}

def _insert_leads(
    conn: Connection, organization_id: uuid.UUID, actor_user_id: uuid.UUID | None, rows: list[dict[str, Any]]
) -> None:
    """The chunk's leads, their first status events, their receipts and their first touches (attribution):
    four statements whatever the size, all at one instant of the clock (a lead's creation, its first status,
    receipt and touch are one moment)."""
    placement = default_new_stage(conn, organization_id)
    src = recordset("import_leads", "src", rows, _LEAD_ROW_COLUMNS)
    org, actor = literal(organization_id, Uuid), literal(actor_user_id, Uuid)
    at = literal(clock.now(), DateTime(timezone=True))
    conn.execute(
        insert(leads).from_select(
            [
                "id", "organization_id", "name", "email", "phone", "locale", "note", "source", "status",
                "pipeline_id", "stage_id", "created_by_user_id", "created_at", "updated_at", "status_changed_at",
            ],
            select(
                src.c.id, org, src.c.name, src.c.email, src.c.phone, src.c.locale, src.c.note,
                literal(IMPORT_SOURCE), literal(placement.category.value), literal(placement.pipeline_id, Uuid),
                literal(placement.stage_id, Uuid), actor, at, at, at,
            ),
        )
    )  # fmt: skip
    src = recordset("import_events", "src", rows, _LEAD_ROW_COLUMNS)
    conn.execute(
        insert(lead_status_events).from_select(
            ["id", "organization_id", "lead_id", "to_status", "to_stage_id", "actor_user_id", "changed_at"],
            select(
                src.c.status_event_id, org, src.c.id, literal(placement.category.value),
                literal(placement.stage_id, Uuid), actor, at,
            ),
        )
    )  # fmt: skip
    src = recordset("import_receipts", "src", rows, _LEAD_ROW_COLUMNS)
    conn.execute(
        insert(lead_receipts).from_select(
            ["id", "organization_id", "lead_id", "channel", "duplicate", "payload", "received_at"],
            select(src.c.receipt_id, org, src.c.id, literal(IMPORT_CHANNEL), literal(False), src.c.payload, at),
        )
    )
    src = recordset("import_touches", "src", rows, _LEAD_ROW_COLUMNS)
    conn.execute(imported_first_touches(organization_id, src, at))

_REPORT_COLUMNS = {"row_number": Integer, "outcome": Text, "lead_id": Uuid, "existing_lead_id": Uuid, "errors": JSONB}

def _insert_report(
    conn: Connection, organization_id: uuid.UUID, job_id: uuid.UUID, report: list[dict[str, Any]]
) -> None:
    rows = [{name: row.get(name) for name in _REPORT_COLUMNS} for row in report]
    src = recordset("import_report", "src", rows, _REPORT_COLUMNS)
    conn.execute(
        pg_insert(lead_import_rows)
        .from_select(
            ["job_id", "row_number", "organization_id", "outcome", "lead_id", "existing_lead_id", "errors"],
            select(
                literal(job_id, Uuid),
                src.c.row_number,
                literal(organization_id, Uuid),
                src.c.outcome,
                src.c.lead_id,
                src.c.existing_lead_id,
                src.c.errors,
            ),
        )
        .on_conflict_do_nothing(index_elements=["job_id", "row_number"])
    )

def _release(job_id: uuid.UUID, worker: str) -> None:
    """Hand the job back (still running) so the continuation can take it at once."""
    with UnitOfWork() as uow:
        uow.connection.execute(
            update(lead_import_jobs)
            .where(lead_import_jobs.c.id == job_id, lead_import_jobs.c.lease_owner == worker)
            .values(lease_owner=None, lease_until=None, updated_at=sql_now())
        )
        uow.commit()

def _fail(job_id: uuid.UUID, worker: str, code: str, message: str) -> None:
    with UnitOfWork() as uow:
        uow.connection.execute(
            update(lead_import_jobs)
            .where(lead_import_jobs.c.id == job_id, lead_import_jobs.c.lease_owner == worker)
            .values(
                status=FAILED,
                error_code=code,
                error_message=message,
                lease_owner=None,
                lease_until=None,
                finished_at=sql_now(),
                updated_at=sql_now(),
            )
        )
        uow.commit()
    logger.info("lead import failed", extra={"jobId": str(job_id), "code": code})

def _complete(job_id: uuid.UUID, worker: str, claim: _Claim) -> None:
    with UnitOfWork() as uow:
        row = uow.connection.execute(
            update(lead_import_jobs)
            .where(lead_import_jobs.c.id == job_id, lead_import_jobs.c.lease_owner == worker)
            .values(status=COMPLETED, lease_owner=None, lease_until=None, finished_at=sql_now(), updated_at=sql_now())
            .returning(
                lead_import_jobs.c.rows_processed,
                lead_import_jobs.c.created_count,
                lead_import_jobs.c.duplicate_count,
                lead_import_jobs.c.invalid_count,
            )
        ).first()
        if row is None:
            return
        uow.add_event(
            DomainEvent(
                type=IMPORT_COMPLETED,
                organization_id=claim.organization_id,
                aggregate_id=job_id,
                payload={
                    "jobId": str(job_id),
                    "rows": row.rows_processed,
                    "created": row.created_count,
                    "duplicates": row.duplicate_count,
                    "invalid": row.invalid_count,
                    "actorUserId": str(claim.actor_user_id) if claim.actor_user_id else None,
                },
            )
        )
        uow.commit()
