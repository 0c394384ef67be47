"""CSV lead import (spec "Not an entry point, on purpose"): an asynchronous job run by the ingestion function.

The dashboard creates a job (and gets a presigned PUT for the file), uploads the CSV to S3, then starts the
job. The ingestion function streams the file from S3 and works through it in chunks: each chunk's leads,
per-row report and checkpoint (`rows_processed`) commit together, with set-based statements, so a retried
or continued run resumes after the last committed row and never imports a row twice. Duplicates (of a lead,
or of an earlier row of the file) are skipped and reported, never reopened; bad rows are reported.

Imported leads land in the default pipeline's New stage with a status event and a receipt of their row.
They get no auto-task and no `lead.created` each (an import of an old export would flood the owner with
"contact new lead" tasks and the bus with events): the job emits one `lead_import.completed`.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, insert, select, update

from leadcrm.directory.rules import Actor
from leadcrm.ingestion.tables import lead_import_jobs
from leadcrm.platform.adapters import ingestion_queue, lead_import_files
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import Conflict, NotFound, Unprocessable
from leadcrm.platform.ids import uuid7

logger = logging.getLogger(__name__)

IMPORT_KIND = "lead_import"  # the ingestion queue message that runs (or continues) a job
IMPORT_CHANNEL = IMPORT_SOURCE = "import"
# Each chunk takes up to two advisory locks per row (dedup's person keys) and PostgreSQL's shared lock table
# holds max_locks_per_transaction × max_connections entries (6,400 by default; Aurora's max_connections is far
# higher): 1,000 rows (2,000 locks) leave room for two more imports at once. A chunk has a fixed cost (~25 ms:
# its lease check, staging table, commit), which 500-row chunks paid twice as often for ~25 % of the import.
CHUNK_ROWS = 1_000
MAX_FILE_BYTES = 50 * 1024 * 1024
LEASE_SECONDS = 120
# Stop and hand the rest to a new invocation when less than this is left of the function's time.
STOP_WHEN_REMAINING_MS = 8_000

AWAITING_UPLOAD, QUEUED, RUNNING, COMPLETED, FAILED = "awaiting_upload", "queued", "running", "completed", "failed"

JOB_COLUMNS = (
    lead_import_jobs.c.id,
    lead_import_jobs.c.organization_id,
    lead_import_jobs.c.created_by_user_id,
    lead_import_jobs.c.status,
    lead_import_jobs.c.file_name,
    lead_import_jobs.c.column_mapping,
    lead_import_jobs.c.apply_assignment_rules,
    lead_import_jobs.c.rows_processed,
    lead_import_jobs.c.created_count,
    lead_import_jobs.c.duplicate_count,
    lead_import_jobs.c.invalid_count,
    lead_import_jobs.c.error_code,
    lead_import_jobs.c.error_message,
    lead_import_jobs.c.started_at,
    lead_import_jobs.c.finished_at,
    lead_import_jobs.c.created_at,
    lead_import_jobs.c.updated_at,
)


# --- the API side ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NewImport:
    job: dict[str, Any]
    upload_url: str
    upload_expires_at: Any


def create_import(
    uow: UnitOfWork,
    actor: Actor,
    *,
    file_name: str | None,
    column_mapping: dict[str, str] | None,
    apply_assignment_rules: bool = False,
) -> NewImport:
    """A job waiting for its file, and where to PUT the file. Commits. `apply_assignment_rules`: the leads it
    creates get owners from the organization's assignment rules (off by default: an old export is history,
    and spreading it over the team's round-robin would bury their new leads)."""
    job_id = uuid7()
    key = f"imports/{actor.organization_id}/{job_id}.csv"
    row = (
        uow.connection.execute(
            insert(lead_import_jobs)
            .values(
                id=job_id,
                organization_id=actor.organization_id,
                created_by_user_id=actor.user_id,
                status=AWAITING_UPLOAD,
                file_name=file_name,
                object_key=key,
                column_mapping=column_mapping or {},
                apply_assignment_rules=apply_assignment_rules,
            )
            .returning(*JOB_COLUMNS)
        )
        .mappings()
        .one()
    )
    uow.commit()
    url, expires_at = lead_import_files.presigned_upload(key)
    return NewImport(dict(row), url, expires_at)


def start_import(uow: UnitOfWork, actor: Actor, job_id: uuid.UUID) -> dict[str, Any]:
    """Queue the job once its file is uploaded. Starting a queued job again queues it again (harmless: one
    run holds the job at a time); a running or finished job is returned as it is. Commits."""
    conn = uow.connection
    job = _job_for_update(conn, actor.organization_id, job_id)
    if job["status"] not in (AWAITING_UPLOAD, QUEUED):
        return job
    key = conn.execute(select(lead_import_jobs.c.object_key).where(lead_import_jobs.c.id == job_id)).scalar_one()
    if job["status"] == AWAITING_UPLOAD:
        size = lead_import_files.uploaded_size(key)
        if size is None:
            raise Conflict("Upload the file to the job's upload URL first.", code="UPLOAD_MISSING")
        if size > MAX_FILE_BYTES:
            raise Unprocessable(f"The file is larger than {MAX_FILE_BYTES // (1024 * 1024)} MB.", code="FILE_TOO_LARGE")
        job = _set(conn, job_id, status=QUEUED)
    uow.commit()
    ingestion_queue.enqueue(IMPORT_KIND, {"jobId": str(job_id)})
    return job


def _job_for_update(conn: Connection, organization_id: uuid.UUID, job_id: uuid.UUID) -> dict[str, Any]:
    row = (
        conn.execute(
            select(*JOB_COLUMNS)
            .where(lead_import_jobs.c.organization_id == organization_id, lead_import_jobs.c.id == job_id)
            .with_for_update()
        )
        .mappings()
        .first()
    )
    if row is None:
        raise NotFound("No such import.", code="IMPORT_NOT_FOUND")
    return dict(row)


def _set(conn: Connection, job_id: uuid.UUID, **values: Any) -> dict[str, Any]:
    row = (
        conn.execute(
            update(lead_import_jobs)
            .where(lead_import_jobs.c.id == job_id)
            .values(**values, updated_at=sql_now())
            .returning(*JOB_COLUMNS)
        )
        .mappings()
        .one()
    )
    return dict(row)


# --- the run (ingestion function) ------------------------------------------------------------------------


ChunkSource = Callable[[str], Iterable[bytes]]
