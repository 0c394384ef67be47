"""Running a CSV import job (the ingestion queue's `lead_import` message): claim the job's lease, stream the file
from S3, and commit it in chunks, each with its checkpoint, so a run cut short by the Lambda's time (or a crash)
is picked up where it stopped. Each chunk dedups its people in bulk and writes leads, receipts, first touches and
the row report set-based, from a staging table the chunk's rows are COPYed into (csv_import_staging)."""

from __future__ import annotations

import csv
import json
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from itertools import islice

from sqlalchemy import Connection, func, select, text, update

from leadcrm.directory.rules import phone_region
from leadcrm.directory.tables import organizations
from leadcrm.ingestion.csv_import import (
    CHUNK_ROWS,
    COMPLETED,
    FAILED,
    IMPORT_KIND,
    IMPORT_SOURCE,
    LEASE_SECONDS,
    QUEUED,
    RUNNING,
    STOP_WHEN_REMAINING_MS,
    ChunkSource,
    logger,
)
from leadcrm.ingestion.csv_import_staging import merge_leads, merge_report, stage_chunk
from leadcrm.ingestion.rules.csv_import import (
    IMPORT_COMPLETED,
    Columns,
    ImportFileError,
    ImportRow,
    PeopleIndex,
    PersonKeys,
    decoded_lines,
    parse_row,
    person_keys,
    resolve_columns,
)
from leadcrm.ingestion.tables import lead_import_jobs
from leadcrm.leads.assignment import assign_new_leads
from leadcrm.leads.dedup import leads_with_keys
from leadcrm.leads.rules.intake import dedup_lock_keys
from leadcrm.leads.tables import leads
from leadcrm.platform.adapters import ingestion_queue, lead_import_files
from leadcrm.platform.db.copy import NULL, copy_fields, copy_value
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.events import DomainEvent
from leadcrm.platform.ids import uuid7_texts
from leadcrm.platform.prefetch import Prefetched


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
    apply_assignment_rules: bool = False
    phone_region: str | None = None  # the organization's, read once a run (directory.rules.phone_region)


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
        # The next chunk is read and checked while PostgreSQL writes this one.
        chunks_read = _prepared_chunks(claim.organization_id, rows, header, columns, position, chunk_rows)
        with Prefetched(chunks_read) as chunks:
            for chunk in chunks:
                if not _commit_chunk(job_id, worker, claim, position, chunk):
                    return RunResult.SKIPPED  # the lease passed to another run, which carries on
                position += len(chunk)
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


@dataclass(frozen=True)
class _Staged:
    """A data row, checked, and what the chunk's transaction needs of it if it makes a lead: its new ids, its
    values from `name` to `cells` in COPY text (each serialized once), its dedup keys and person locks (the
    transaction only adds the outcome, which dedup decides under the chunk's locks)."""

    row: ImportRow
    lead_id: str | None = None
    lead_fields: str | None = None
    person: PersonKeys | None = None
    lock_keys: tuple[int, ...] = ()


def _prepared_chunks(
    organization_id: uuid.UUID,
    rows: Iterator[list[str]],
    header: list[str],
    columns: Columns,
    position: int,
    chunk_rows: int,
) -> Iterator[list[_Staged]]:
    while batch := list(islice(rows, chunk_rows)):
        chunk = []
        # Four ids a row that makes a lead (its status event, receipt, touch, then the lead), made in bulk and
        # in row order; a rejected row's go unused. Ids are text already: nothing to escape in them.
        ids = uuid7_texts(4 * len(batch))
        for index, cells in enumerate(batch):
            position += 1
            row = parse_row(position, cells, columns)
            if not row.valid:
                chunk.append(_Staged(row))
                continue
            event_id, receipt_id, touch_id, lead_id = ids[4 * index : 4 * index + 4]
            given = copy_fields((row.name, row.email, row.phone, row.note, row.locale))
            receipt = copy_value(json.dumps(dict(zip(header, cells, strict=False))))
            chunk.append(
                _Staged(
                    row,
                    lead_id,
                    f"{given}\t{event_id}\t{receipt_id}\t{touch_id}\t{receipt}",
                    person_keys(row.email, row.phone),
                    tuple(dedup_lock_keys(organization_id, row.email, row.phone)),
                )
            )
        yield chunk


def _claim(job_id: uuid.UUID, worker: str) -> _Claim | None:
    """Take the job's lease: a queued job, or a running one whose lease lapsed (its run died) or is ours."""
    with UnitOfWork() as uow:
        row = uow.connection.execute(
            update(lead_import_jobs)
            .where(
                organizations.c.id == lead_import_jobs.c.organization_id,
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
                lead_import_jobs.c.apply_assignment_rules,
                organizations.c.country_code,
                organizations.c.timezone,
            )
        ).first()
        uow.commit()
    if row is None:
        return None
    return _Claim(
        row.organization_id,
        row.created_by_user_id,
        row.object_key,
        dict(row.column_mapping or {}),
        row.rows_processed,
        row.apply_assignment_rules,
        phone_region(row.country_code, row.timezone),
    )


def _holds_lease(conn: Connection, job_id: uuid.UUID, worker: str, position: int) -> bool:
    """Under the job's row lock: still ours, and nobody moved the checkpoint since we read it."""
    row = conn.execute(
        select(lead_import_jobs.c.lease_owner, lead_import_jobs.c.rows_processed, lead_import_jobs.c.status)
        .where(lead_import_jobs.c.id == job_id)
        .with_for_update()
    ).one()
    return row.lease_owner == worker and row.rows_processed == position and row.status == RUNNING


def _commit_chunk(job_id: uuid.UUID, worker: str, claim: _Claim, position: int, chunk: list[_Staged]) -> bool:
    """One chunk in one transaction: its new leads, its report rows and the checkpoint after it.

    Each row's outcome (dedup needs the phone rules, in Python) goes into a staging table in one COPY, and
    set-based statements merge it into leads, their side tables and the report."""
    org = claim.organization_id
    with UnitOfWork() as uow:
        conn = uow.connection
        if not _holds_lease(conn, job_id, worker, position):
            return False
        valid = [staged for staged in chunk if staged.person is not None]
        _lock_people(conn, valid)
        people = _existing_people(conn, org, claim.phone_region, valid)
        lines: list[str] = []
        counts = {"created": 0, "duplicate": 0, "invalid": 0}
        created: dict[uuid.UUID, str | None] = {}  # the chunk's new leads and their locales, for assignment
        for staged in chunk:
            row, number = staged.row, str(staged.row.row_number)
            if staged.lead_id is None:
                counts["invalid"] += 1
                lines.append(copy_fields((number, "invalid", None, None, json.dumps(row.errors))) + _NO_LEAD)
                continue
            assert staged.person is not None  # a row that makes a lead has its keys
            existing = people.match(staged.person)
            if existing is not None:
                counts["duplicate"] += 1
                lines.append(copy_fields((number, "duplicate", None, str(existing), None)) + _NO_LEAD)
                continue
            people.add(staged.lead_id, staged.person)
            counts["created"] += 1
            if claim.apply_assignment_rules:  # what the rules need (UUIDs made only for them)
                created[uuid.UUID(staged.lead_id)] = row.locale
            lines.append(f"{number}\tcreated\t{staged.lead_id}\t{NULL}\t{NULL}\t{staged.lead_fields}\n")
        stage_chunk(conn, lines)
        if counts["created"]:
            merge_leads(conn, org, claim.actor_user_id, job_id)
            if claim.apply_assignment_rules:  # the import option: owners from the rules, in the chunk's transaction
                assign_new_leads(conn, org, created, IMPORT_SOURCE)
        merge_report(conn, org, job_id)
        conn.execute(
            update(lead_import_jobs)
            .where(lead_import_jobs.c.id == job_id)
            .values(
                rows_processed=position + len(chunk),
                created_count=lead_import_jobs.c.created_count + counts["created"],
                duplicate_count=lead_import_jobs.c.duplicate_count + counts["duplicate"],
                invalid_count=lead_import_jobs.c.invalid_count + counts["invalid"],
                lease_until=sql_now() + text(f"interval '{LEASE_SECONDS} seconds'"),
                updated_at=sql_now(),
            )
        )
        uow.commit()
    return True


_NO_LEAD = f"\t{NULL}" * 9 + "\n"  # name … cells of a row that makes no lead


def _lock_people(conn: Connection, rows: list[_Staged]) -> None:
    """Dedup's person locks for every row of the chunk, in one statement and in the global key order, so a
    capture or staff create of the same person waits for the chunk (and the chunk for it), never both."""
    keys = sorted({key for staged in rows for key in staged.lock_keys})
    if keys:
        conn.execute(
            text(
                "SELECT count(pg_advisory_xact_lock(k)) FROM (SELECT value::bigint AS k "
                "FROM jsonb_array_elements_text(CAST(:keys AS jsonb)) ORDER BY 1) AS ordered"
            ),
            {"keys": json.dumps(keys)},
        )


def _existing_people(
    conn: Connection, organization_id: uuid.UUID, region: str | None, rows: list[_Staged]
) -> PeopleIndex:
    """The organization's leads any row may be, in one query on the dedup indexes (lower(email), the phone's
    last seven digits), oldest first, with the organization's region for comparing phones."""
    people = PeopleIndex(region)
    persons = [staged.person for staged in rows if staged.person is not None]
    emails = sorted({person.email_key for person in persons if person.email_key is not None})
    phone_keys = sorted({person.phone_key for person in persons if person.phone_key is not None})
    if not emails and not phone_keys:
        return people
    # One index probe per key, whatever the statistics say (dedup.leads_with_keys); sorted oldest first here:
    # dedup resolves to the oldest lead.
    matching = leads_with_keys(organization_id, emails, phone_keys, (leads.c.id, leads.c.email, leads.c.phone))
    found = conn.execute(select(matching)).all()
    for lead in sorted(found, key=lambda row: (row.created_at, row.id)):
        people.add(lead.id, person_keys(lead.email, lead.phone))
    return people


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
