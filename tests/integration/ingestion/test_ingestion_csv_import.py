"""CSV import (spec "Not an entry point, on purpose"): an asynchronous job. The dashboard creates it, PUTs
the file to the presigned URL, starts it; the ingestion function streams the file from S3 in chunks, saves
the good rows, skips and reports duplicates (never reopening a closed lead) and reports bad rows; each
chunk commits with its checkpoint, so a retried run resumes where the last one stopped."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import func, select, text, update

from leadcrm.ingestion.csv_import_runner import RunResult, run_import
from leadcrm.ingestion.tables import lead_import_jobs, lead_import_rows
from leadcrm.platform.db.engine import get_engine
from tests.support.api import call_api
from tests.support.capture_helpers import lead_rows, receipts_of, tasks_of
from tests.support.factories import make_caller
from tests.support.ingestion_helpers import (
    csv_text,
    imports_path,
    make_imports_bucket,
    run_queued_imports,
    upload,
)
from tests.support.lead_moves_helpers import default_pipeline
from tests.support.returning_helpers import insert_lead

HEADER = ["Name", "Email", "Phone", "Notes"]


@pytest.fixture(autouse=True)
def _aws(event_bus, ingestion_queue, monkeypatch):
    make_imports_bucket(monkeypatch)


@pytest.fixture
def staff():
    return make_caller(role="owner")


def _create(caller, body: dict | None = None):
    return call_api("POST", imports_path(caller), sub=caller.sub, body=body or {"fileName": "leads.csv"})


def _start(caller, job_id: str):
    return call_api("POST", imports_path(caller, f"/{job_id}/start"), sub=caller.sub)


def _job(caller, job_id: str) -> dict:
    return call_api("GET", imports_path(caller, f"/{job_id}"), sub=caller.sub).data


def _report(caller, job_id: str, **query) -> list[dict]:
    return call_api("GET", imports_path(caller, f"/{job_id}/rows"), sub=caller.sub, query=query or None).data


def _import(caller, content: bytes, body: dict | None = None, *, queue) -> dict:
    """Create, upload, start and run a job; the job as the API then shows it."""
    created = _create(caller, body).data
    upload(created, content)
    assert _start(caller, created["job"]["id"]).status == 202
    assert run_queued_imports(queue) == {"batchItemFailures": []}
    return _job(caller, created["job"]["id"])


def test_creating_an_import_answers_the_job_waiting_for_its_file_and_a_presigned_put(staff):
    response = _create(staff, {"fileName": "leads.csv", "columnMapping": {"email": "E-mail"}})

    assert response.status == 201
    job, upload_spec = response.data["job"], response.data["upload"]
    assert (job["status"], job["fileName"], job["columnMapping"]) == (
        "awaiting_upload",
        "leads.csv",
        {"email": "E-mail"},
    )
    assert upload_spec["method"] == "PUT"
    assert upload_spec["headers"] == {"content-type": "text/csv"}
    assert "X-Amz-Signature=" in upload_spec["url"]


def test_starting_before_the_file_is_uploaded_is_a_409(staff):
    job_id = _create(staff).data["job"]["id"]
    response = _start(staff, job_id)
    assert (response.status, response.error_code) == (409, "UPLOAD_MISSING")
    assert _job(staff, job_id)["status"] == "awaiting_upload"


def test_starting_queues_the_job_for_the_ingestion_function(staff, ingestion_queue):
    created = _create(staff).data
    upload(created, csv_text(HEADER, ["Ada", "ada@example.com", "", ""]))

    response = _start(staff, created["job"]["id"])

    assert (response.status, response.data["status"]) == (202, "queued")
    (message,) = ingestion_queue.receive_all()
    assert '"kind": "lead_import"' in message["Body"]


def test_good_rows_are_saved_as_new_leads_of_source_import_with_a_receipt_and_no_auto_task(staff, ingestion_queue):
    job = _import(
        staff,
        csv_text(
            HEADER,
            ["Ada Lovelace", "ada@example.com", "+44 7700 900123", "met at the expo"],
            ["Grace", "", "050-1234567", ""],
        ),
        queue=ingestion_queue,
    )

    assert (job["status"], job["rowsProcessed"], job["createdCount"]) == ("completed", 2, 2)
    leads = sorted(lead_rows(staff.org_id), key=lambda lead: lead["name"])
    assert [(lead["name"], lead["email"], lead["phone"], lead["source"], lead["status"]) for lead in leads] == [
        ("Ada Lovelace", "ada@example.com", "+44 7700 900123", "import", "new"),
        ("Grace", None, "050-1234567", "import", "new"),
    ]
    assert leads[0]["note"] == "met at the expo"
    assert {r["channel"] for r in receipts_of(staff.org_id)} == {"import"}
    assert tasks_of(staff.org_id) == []


def test_duplicates_of_leads_and_of_earlier_rows_are_skipped_and_reported_with_the_lead_they_repeat(
    staff, ingestion_queue
):
    existing = insert_lead(staff.org_id, default_pipeline(staff.org_id), "contacted", email="dana@example.com")
    job = _import(
        staff,
        csv_text(
            HEADER,
            ["Dana", "DANA@example.com", "", ""],  # the existing lead, by email in another case
            ["Noa", "", "050-111 2233", ""],
            ["Noa again", "", "0501112233", ""],  # row 2, by phone however typed
        ),
        queue=ingestion_queue,
    )

    assert (job["createdCount"], job["duplicateCount"]) == (1, 2)
    report = _report(staff, job["id"])
    assert [(r["rowNumber"], r["outcome"]) for r in report] == [(1, "duplicate"), (2, "created"), (3, "duplicate")]
    assert report[0]["existingLeadId"] == str(existing)
    assert report[2]["existingLeadId"] == report[1]["leadId"]
    assert len(lead_rows(staff.org_id)) == 2


def test_a_row_repeating_a_lost_lead_is_reported_and_the_lead_is_not_reopened(staff, ingestion_queue):
    lost = insert_lead(staff.org_id, default_pipeline(staff.org_id), "lost", email="old@example.com")
    job = _import(staff, csv_text(HEADER, ["Old", "old@example.com", "", ""]), queue=ingestion_queue)

    assert job["duplicateCount"] == 1
    (lead,) = lead_rows(staff.org_id)
    assert (lead["id"], lead["status"], lead["returned_at"]) == (lost, "lost", None)


def test_bad_rows_are_reported_field_by_field_and_the_good_ones_are_saved(staff, ingestion_queue):
    job = _import(
        staff,
        csv_text(
            HEADER,
            ["Ada", "not-an-email", "", ""],
            ["", "", "", "a note about nobody"],
            ["Bo", "bo@example.com", "call me", ""],
            ["Cy", "cy@example.com", "", ""],
        ),
        queue=ingestion_queue,
    )

    assert (job["createdCount"], job["invalidCount"]) == (1, 3)
    invalid = _report(staff, job["id"], outcome="invalid")
    assert [(r["rowNumber"], r["errors"]) for r in invalid] == [
        (1, [{"field": "email", "code": "invalid_email"}]),
        (2, [{"field": "row", "code": "missing_contact"}]),
        (3, [{"field": "phone", "code": "invalid_phone"}]),
    ]
    assert "not-an-email" not in str(invalid)  # the report never repeats the values


def test_a_column_mapping_names_the_headers_to_read(staff, ingestion_queue):
    job = _import(
        staff,
        csv_text(["Vorname", "Nachname", "Handy"], ["Ada", "Lovelace", "+447700900123"]),
        {"columnMapping": {"firstName": "vorname", "lastName": "NACHNAME", "phone": "Handy"}},
        queue=ingestion_queue,
    )
    assert job["createdCount"] == 1
    (lead,) = lead_rows(staff.org_id)
    assert (lead["name"], lead["phone"]) == ("Ada Lovelace", "+447700900123")


def test_a_mapped_column_the_file_lacks_fails_the_job_with_a_clear_error(staff, ingestion_queue):
    job = _import(staff, csv_text(["Name"], ["Ada"]), {"columnMapping": {"email": "E-mail"}}, queue=ingestion_queue)
    assert (job["status"], job["errorCode"]) == ("failed", "MAPPED_COLUMN_MISSING")
    assert lead_rows(staff.org_id) == []


def test_a_file_that_is_not_utf8_fails_the_job(staff, ingestion_queue):
    job = _import(staff, "Name,Email\nJosé,jose@example.com\n".encode("latin-1"), queue=ingestion_queue)
    assert (job["status"], job["errorCode"]) == ("failed", "INVALID_ENCODING")


def test_a_job_whose_file_is_gone_fails_with_a_clear_error(staff, ingestion_queue):
    from tests.support.aws import aws_client
    from tests.support.ingestion_helpers import IMPORTS_BUCKET

    job_id = _queued_job(staff, _people(3))
    aws_client("s3").delete_object(Bucket=IMPORTS_BUCKET, Key=f"imports/{staff.org_id}/{job_id}.csv")
    assert run_queued_imports(ingestion_queue) == {"batchItemFailures": []}
    assert (_job(staff, str(job_id))["status"], _job(staff, str(job_id))["errorCode"]) == ("failed", "FILE_MISSING")


def test_an_empty_file_fails_the_job(staff, ingestion_queue):
    job = _import(staff, b"", queue=ingestion_queue)
    assert (job["status"], job["errorCode"]) == ("failed", "EMPTY_FILE")


def _queued_job(staff, content: bytes) -> uuid.UUID:
    created = _create(staff).data
    upload(created, content)
    _start(staff, created["job"]["id"])
    return uuid.UUID(created["job"]["id"])


def _people(count: int) -> bytes:
    return csv_text(HEADER, *([f"Person {i}", f"person{i}@example.com", "", ""] for i in range(count)))


def test_a_run_that_fails_mid_file_is_resumed_by_its_retry_after_the_last_committed_chunk(staff):
    from leadcrm.platform.adapters.lead_import_files import iter_chunks

    job_id = _queued_job(staff, _people(25))

    def dies_after_two_chunks(key: str):
        for number, chunk in enumerate(iter_chunks_of(key, 40)):
            if number == 6:
                raise ConnectionResetError("S3 stream broke")
            yield chunk

    def iter_chunks_of(key: str, size: int):
        data = b"".join(iter_chunks(key))
        return (data[i : i + size] for i in range(0, len(data), size))

    with pytest.raises(ConnectionResetError):
        run_import(job_id, worker="first", remaining_ms=lambda: 30_000, read_file=dies_after_two_chunks, chunk_rows=5)
    assert 0 < _row(job_id)["rows_processed"] < 25

    assert run_import(job_id, worker="retry", remaining_ms=lambda: 30_000, chunk_rows=5) == RunResult.COMPLETED
    job = _row(job_id)
    assert (job["rows_processed"], job["created_count"], job["duplicate_count"]) == (25, 25, 0)
    assert len(lead_rows(staff.org_id)) == 25
    assert _report_count(job_id) == 25


def test_a_run_killed_outright_is_taken_over_once_its_lease_lapses(staff):
    job_id = _queued_job(staff, _people(12))
    assert run_import(job_id, worker="killed", remaining_ms=lambda: 0, chunk_rows=5) == RunResult.PAUSED
    # The killed run's lease is still live: a second run must not work on the job at the same time.
    _set_lease(job_id, "killed", "1 minute")
    assert run_import(job_id, worker="early", remaining_ms=lambda: 30_000, chunk_rows=5) == RunResult.SKIPPED

    _set_lease(job_id, "killed", "-1 second")
    assert run_import(job_id, worker="later", remaining_ms=lambda: 30_000, chunk_rows=5) == RunResult.COMPLETED
    assert _row(job_id)["created_count"] == 12
    assert len(lead_rows(staff.org_id)) == 12


def test_a_run_out_of_time_queues_its_continuation_which_finishes_the_job(staff, ingestion_queue):
    job_id = _queued_job(staff, _people(12))
    ingestion_queue.receive_all()  # the start's message, handled below by hand

    assert run_import(job_id, worker="a", remaining_ms=lambda: 1_000, chunk_rows=5) == RunResult.PAUSED
    assert _row(job_id)["rows_processed"] == 5

    assert run_queued_imports(ingestion_queue) == {"batchItemFailures": []}
    assert (_row(job_id)["status"], _row(job_id)["created_count"]) == ("completed", 12)


def test_the_file_is_read_as_a_stream_not_all_at_once(staff):
    job_id = _queued_job(staff, b"")
    total_chunks, pulled = 200, []

    def lazy_file(key: str):
        yield b"Name,Email\n"
        for i in range(total_chunks):
            pulled.append(i)
            yield "".join(f"P{i}-{j},p{i}-{j}@example.com\n" for j in range(10)).encode()

    seen_at_commits: list[int] = []

    def remaining() -> int:
        seen_at_commits.append(len(pulled))
        return 30_000

    assert run_import(job_id, worker="w", remaining_ms=remaining, read_file=lazy_file, chunk_rows=100) == (
        RunResult.COMPLETED
    )
    # The first 100 rows (~10 of the 200 pieces) committed while at most the next two chunks were read ahead.
    assert seen_at_commits[0] <= 31
    assert _row(job_id)["created_count"] == total_chunks * 10


def test_the_report_pages_in_file_order(staff, ingestion_queue):
    job = _import(staff, _people(5), queue=ingestion_queue)
    first = call_api("GET", imports_path(staff, f"/{job['id']}/rows"), sub=staff.sub, query={"limit": "2"})
    second = call_api(
        "GET",
        imports_path(staff, f"/{job['id']}/rows"),
        sub=staff.sub,
        query={"limit": "2", "cursor": first.body["nextCursor"]},
    )
    assert [r["rowNumber"] for r in first.data + second.data] == [1, 2, 3, 4]


@pytest.mark.parametrize("suffix", ["", "/rows"])
@pytest.mark.parametrize("cursor", ["not-a-cursor", "WyJ4Il0", "WyJ4IiwieSJd"])  # garbage, ["x"], ["x","y"]
def test_a_cursor_this_api_did_not_hand_out_is_a_400(staff, suffix, cursor):
    job_id = _create(staff).data["job"]["id"]
    path = imports_path(staff, f"/{job_id}/rows") if suffix else imports_path(staff)
    response = call_api("GET", path, sub=staff.sub, query={"cursor": cursor})
    assert (response.status, response.error_code) == (400, "INVALID_CURSOR")


def test_the_list_pages_newest_first(staff):
    ids = [_create(staff).data["job"]["id"] for _ in range(3)]
    first = call_api("GET", imports_path(staff), sub=staff.sub, query={"limit": "2"})
    second = call_api(
        "GET", imports_path(staff), sub=staff.sub, query={"limit": "2", "cursor": first.body["nextCursor"]}
    )
    assert [j["id"] for j in first.data + second.data] == ids[::-1]
    assert second.body["nextCursor"] is None


def test_the_list_shows_the_organizations_jobs_newest_first(staff):
    first, second = _create(staff).data["job"]["id"], _create(staff).data["job"]["id"]
    _create(make_caller(role="owner"))
    listed = call_api("GET", imports_path(staff), sub=staff.sub)
    assert [j["id"] for j in listed.data] == [second, first]


def test_a_coach_may_import_and_a_member_may_not(staff):
    coach = make_caller(role="coach", organization=staff.organization)
    member = make_caller(role="member", organization=staff.organization)
    assert _create(coach).status == 201
    assert (_create(member).status, _create(member).error_code) == (403, "STAFF_ONLY")


def test_another_organizations_job_answers_404(staff):
    job_id = _create(staff).data["job"]["id"]
    other = make_caller(role="owner")
    for response in (
        call_api("GET", imports_path(other, f"/{job_id}"), sub=other.sub),
        call_api("GET", imports_path(other, f"/{job_id}/rows"), sub=other.sub),
        _start(other, job_id),
        call_api("GET", imports_path(other, "/not-a-uuid"), sub=other.sub),
    ):
        assert (response.status, response.error_code) == (404, "IMPORT_NOT_FOUND")


def test_a_mapping_that_names_no_contact_field_is_a_400(staff):
    response = _create(staff, {"columnMapping": {"note": "Notes"}})
    assert (response.status, response.error_code) == (400, "VALIDATION_FAILED")


# --- reads -----------------------------------------------------------------------------------------------


def _row(job_id: uuid.UUID) -> dict:
    with get_engine().connect() as conn:
        return dict(conn.execute(select(lead_import_jobs).where(lead_import_jobs.c.id == job_id)).mappings().one())


def _report_count(job_id: uuid.UUID) -> int:
    with get_engine().connect() as conn:
        return conn.execute(
            select(func.count()).select_from(lead_import_rows).where(lead_import_rows.c.job_id == job_id)
        ).scalar_one()


def _set_lease(job_id: uuid.UUID, owner: str, from_now: str) -> None:
    """The job's lease as a run that died without handing it back leaves it."""
    with get_engine().begin() as conn:
        conn.execute(
            update(lead_import_jobs)
            .where(lead_import_jobs.c.id == job_id)
            .values(lease_owner=owner, lease_until=func.now() + text(f"interval '{from_now}'"))
        )
