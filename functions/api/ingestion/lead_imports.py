"""CSV lead import jobs (staff): `/organizations/{orgId}/leads/import` (issue 6).

1. `POST …/leads/import` {fileName?, columnMapping?} → 201 {job, upload: {url, method: PUT, headers}}
2. PUT the CSV (UTF-8, header row first) to `upload.url` with the given headers (up to 50 MB, 15 minutes)
3. `POST …/leads/import/{jobId}/start` → 202 {job} (queued); the ingestion function runs it
4. `GET …/leads/import/{jobId}` for progress, `GET …/leads/import/{jobId}/rows` for the per-row report
"""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from api.http import caller, entity_id, json_response
from api.ingestion.schemas_ingestion import (
    LEAD_FIELD_NAMES,
    CreateImportBody,
    ImportJob,
    ImportRowOutcome,
    ImportRowReport,
    NewImportOut,
    Upload,
)
from api.operations import Operations
from api.params import DEFAULT_PAGE_SIZE, CursorParam, PageSize
from api.schemas import Envelope, ListEnvelope
from leadcrm.directory.access import require_staff
from leadcrm.ingestion.csv_import import create_import, start_import
from leadcrm.ingestion.queries import get_import, list_import_rows, list_imports
from leadcrm.platform.adapters.lead_import_files import CSV_CONTENT_TYPE
from leadcrm.platform.db.uow import UnitOfWork

router = APIGatewayHttpRouter()
ops = Operations(router, "Ingestion")

_CAMEL = {domain: str(api) for api, domain in LEAD_FIELD_NAMES.items()}


def _job(row: dict[str, Any]) -> ImportJob:
    mapping = {_CAMEL.get(name, name): header for name, header in (row.get("column_mapping") or {}).items()}
    return ImportJob.model_validate({**row, "column_mapping": mapping})


@ops.post(
    "/organizations/<orgId>/leads/import",
    "createLeadImport",
    "Create a CSV import job and get the URL to upload its file to",
    (
        "Creates an import job and answers a presigned URL to PUT the CSV file to; nothing is read until the import is "
        "started. With `applyAssignmentRules` the leads it creates get owners from the organization's assignment "
        "rules (off by default)."
    ),
    ok={201: {"description": "The job (awaiting_upload) and its upload URL"}},
)
def create(orgId: str, body: Annotated[CreateImportBody, Body()]) -> Response[Envelope[NewImportOut]]:
    mapping = (
        {LEAD_FIELD_NAMES[f]: header for f, header in body.column_mapping.items()} if body.column_mapping else None
    )
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        created = create_import(
            uow,
            actor,
            file_name=body.file_name,
            column_mapping=mapping,
            apply_assignment_rules=body.apply_assignment_rules,
        )
    upload = Upload(
        url=created.upload_url, headers={"content-type": CSV_CONTENT_TYPE}, expires_at=created.upload_expires_at
    )
    return json_response(201, Envelope[NewImportOut](data=NewImportOut(job=_job(created.job), upload=upload)))


@ops.get(
    "/organizations/<orgId>/leads/import",
    "listLeadImports",
    "Import jobs, newest first",
    "The organization's CSV import jobs, newest first, in keyset pages.",
)
def index(
    orgId: str,
    limit: PageSize = DEFAULT_PAGE_SIZE,
    cursor: CursorParam = None,
) -> ListEnvelope[ImportJob]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        page = list_imports(uow.connection, actor.organization_id, limit=limit, cursor=cursor)
    return ListEnvelope[ImportJob](data=[_job(r) for r in page.items], next_cursor=page.next_cursor)


@ops.post(
    "/organizations/<orgId>/leads/import/<jobId>/start",
    "startLeadImport",
    "Start the import once the file is uploaded",
    (
        "Queues the uploaded file for import. Without the upload it is 409 UPLOAD_MISSING; a file over the limit is "
        "422 FILE_TOO_LARGE."
    ),
    errors={404: ["IMPORT_NOT_FOUND"], 409: ["UPLOAD_MISSING"], 422: ["FILE_TOO_LARGE"]},
    ok={202: {"description": "The job, queued (or as it is, when it already started)"}},
)
def start(orgId: str, jobId: str) -> Response[Envelope[ImportJob]]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        job = start_import(uow, actor, entity_id(jobId, "IMPORT_NOT_FOUND"))
    return json_response(202, Envelope[ImportJob](data=_job(job)))


@ops.get(
    "/organizations/<orgId>/leads/import/<jobId>",
    "getLeadImport",
    "An import job and its progress",
    "The job's status and counts: created, merged, skipped, failed rows.",
    errors={404: ["IMPORT_NOT_FOUND"]},
)
def show(orgId: str, jobId: str) -> Envelope[ImportJob]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        job = get_import(uow.connection, actor.organization_id, entity_id(jobId, "IMPORT_NOT_FOUND"))
    return Envelope[ImportJob](data=_job(job))


@ops.get(
    "/organizations/<orgId>/leads/import/<jobId>/rows",
    "listLeadImportRows",
    "The per-row report, in file order",
    "What happened to each row, in file order, filtered by outcome, in keyset pages.",
    errors={404: ["IMPORT_NOT_FOUND"]},
)
def rows(
    orgId: str,
    jobId: str,
    outcome: Annotated[ImportRowOutcome | None, Query()] = None,
    limit: PageSize = DEFAULT_PAGE_SIZE,
    cursor: CursorParam = None,
) -> ListEnvelope[ImportRowReport]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        page = list_import_rows(
            uow.connection,
            actor.organization_id,
            entity_id(jobId, "IMPORT_NOT_FOUND"),
            outcome=outcome.value if outcome else None,
            limit=limit,
            cursor=cursor,
        )
    return ListEnvelope[ImportRowReport](
        data=[ImportRowReport.model_validate(r) for r in page.items], next_cursor=page.next_cursor
    )
