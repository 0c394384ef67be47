"""Helpers for the ingestion tests: the Graph stand-in (served over real HTTP), connections, deliveries, reads."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import func, select

from infra.local.graph import LocalGraph, serve
from leadcrm.ingestion.tables import ingested_events, integration_connections, lead_attributions
from leadcrm.leads.tables import lead_receipts, leads
from leadcrm.platform.db.engine import get_engine
from leadcrm.work.tables import tasks
from tests.support.api import call_api
from tests.support.events import lambda_context, sqs_event, sqs_record


@contextmanager
def graph_stand_in(monkeypatch: Any) -> Iterator[LocalGraph]:
    """Meta Graph's lead endpoint over real HTTP, where META_GRAPH_BASE_URL points, with connection tokens
    read afresh from Secrets Manager (the moto of this test)."""
    from leadcrm.platform.adapters.integration_secrets import forget_cached_tokens

    stand_in = LocalGraph()
    forget_cached_tokens()
    with serve(stand_in) as url:
        monkeypatch.setenv("META_GRAPH_BASE_URL", url)
        yield stand_in
    forget_cached_tokens()


# --- connections ---------------------------------------------------------------------------------------


def connect_page(owner: Any, page_id: str, token: str = "page-token-1234") -> dict[str, Any]:
    response = call_api(
        "POST",
        f"/organizations/{owner.org_id}/integrations/meta",
        sub=owner.sub,
        body={"pageId": page_id, "accessToken": token, "pageName": "Studio page"},
    )
    assert response.status in (200, 201), response.body
    return response.data


def connect_number(owner: Any, phone_number_id: str, token: str = "waba-token-1234") -> dict[str, Any]:
    response = call_api(
        "POST",
        f"/organizations/{owner.org_id}/integrations/whatsapp",
        sub=owner.sub,
        body={"phoneNumberId": phone_number_id, "accessToken": token},
    )
    assert response.status in (200, 201), response.body
    return response.data


def fresh_id() -> str:
    """A numeric id of its own (Meta ids are digit strings), so tests never share pages, leads or clicks."""
    return str(uuid.uuid4().int)[:16]


# --- Meta Lead Ads -------------------------------------------------------------------------------------


def leadgen_payload(page_id: str, leadgen_id: str, *, form_id: str = "870000000000001", ad_id: str = "1202") -> dict:
    """A page webhook with one leadgen change, as Meta sends it."""
    return {
        "object": "page",
        "entry": [
            {
                "id": page_id,
                "time": 1767225600,
                "changes": [
                    {
                        "field": "leadgen",
                        "value": {
                            "ad_id": ad_id,
                            "form_id": form_id,
                            "leadgen_id": leadgen_id,
                            "created_time": 1767225600,
                            "page_id": page_id,
                            "adgroup_id": ad_id,
                        },
                    }
                ],
            }
        ],
    }


def graph_lead(
    leadgen_id: str,
    *,
    email: str | None = "ada@example.com",
    phone: str | None = "+447700900123",
    full_name: str | None = "Ada Lovelace",
    platform: str = "fb",
    form_id: str = "870000000000001",
    extra: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A lead as Graph returns it for `GET /<leadgen id>?fields=...`."""
    field_data = []
    for name, value in (("full_name", full_name), ("email", email), ("phone_number", phone), *(extra or {}).items()):
        if value is not None:
            field_data.append({"name": name, "values": [value]})
    return {
        "id": leadgen_id,
        "created_time": "2026-01-01T10:00:00+0000",
        "field_data": field_data,
        "ad_id": "120200000000000001",
        "ad_name": "Spring offer video",
        "adset_id": "120200000000000002",
        "adset_name": "Tel Aviv 25-45",
        "campaign_id": "120200000000000003",
        "campaign_name": "Spring 2026",
        "form_id": form_id,
        "platform": platform,
        "is_organic": False,
    }


# --- WhatsApp ------------------------------------------------------------------------------------------


def whatsapp_payload(
    phone_number_id: str,
    *,
    wamid: str,
    wa_id: str = "447700900456",
    name: str = "Grace Hopper",
    text: str = "Hi, I saw your ad",
    referral: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A WhatsApp Cloud messages webhook with one inbound text message (with the referral, if given)."""
    message: dict[str, Any] = {
        "from": wa_id,
        "id": wamid,
        "timestamp": "1767225600",
        "type": "text",
        "text": {"body": text},
    }
    if referral is not None:
        message["referral"] = referral
    return {
        "object": "whatsapp_business_account",
        "entry": [
            {
                "id": "102290129340398",
                "changes": [
                    {
                        "field": "messages",
                        "value": {
                            "messaging_product": "whatsapp",
                            "metadata": {"display_phone_number": "15550783881", "phone_number_id": phone_number_id},
                            "contacts": [{"profile": {"name": name}, "wa_id": wa_id}],
                            "messages": [message],
                        },
                    }
                ],
            }
        ],
    }


def ctwa_referral(source_id: str = "120200000000000009", *, ctwa_clid: str | None, headline: str = "Free trial week"):
    referral = {
        "source_url": "https://fb.me/abc",
        "source_id": source_id,
        "source_type": "ad",
        "headline": headline,
        "body": "Book your first class",
        "media_type": "image",
    }
    if ctwa_clid is not None:
        referral["ctwa_clid"] = ctwa_clid
    return referral


# --- delivering and reading ----------------------------------------------------------------------------


def webhook_message(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    """The queue message the webhook receiver enqueues."""
    return {"kind": kind, "receivedAt": "2026-01-01T10:00:00+00:00", "payload": payload}


def leadgen_message(page_id: str, leadgen_id: str, **kwargs: Any) -> dict[str, Any]:
    """The graph-fetch queue message of a page webhook with one leadgen change."""
    return webhook_message("meta.leadgen", leadgen_payload(page_id, leadgen_id, **kwargs))


def deliver(*bodies: dict[str, Any]) -> dict[str, Any]:
    """One SQS batch of these messages to the ingestion function; its partial batch response."""
    from ingestion.handler import lambda_handler

    return lambda_handler(sqs_event(*(sqs_record(body) for body in bodies)), lambda_context("leadcrm-ingestion"))


def fetch(*bodies: dict[str, Any]) -> dict[str, Any]:
    """One SQS batch of leadgen webhook messages to the graph_fetch function; its partial batch response."""
    from graph_fetch.handler import lambda_handler

    return lambda_handler(sqs_event(*(sqs_record(body) for body in bodies)), lambda_context("leadcrm-graph-fetch"))


def queued_for_ingestion() -> list[dict[str, Any]]:
    """The message bodies on the ingestion queue (INGESTION_QUEUE_URL), taken off it."""
    import os

    from tests.support.aws import aws_client

    sqs, url, bodies = aws_client("sqs"), os.environ["INGESTION_QUEUE_URL"], []
    while messages := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
        bodies.extend(json.loads(m["Body"]) for m in messages)
        sqs.delete_message_batch(
            QueueUrl=url, Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)]
        )
    return bodies


def deliver_leadgen(*bodies: dict[str, Any]) -> dict[str, Any]:
    """Leadgen webhook messages through both stages, as in AWS: graph_fetch reads each lead from Graph and
    queues it; the ingestion function takes in what was queued. Ingestion's partial batch response."""
    assert fetch(*bodies) == {"batchItemFailures": []}
    fetched = queued_for_ingestion()
    return deliver(*fetched) if fetched else {"batchItemFailures": []}


def _count(table: Any, *where: Any) -> int:
    with get_engine().connect() as conn:
        return conn.execute(select(func.count()).select_from(table).where(*where)).scalar_one()


def counts(org_id: uuid.UUID) -> dict[str, int]:
    """Leads, attributions, auto-tasks and receipts of an organization."""
    return {
        "leads": _count(leads, leads.c.organization_id == org_id),
        "attributions": _count(lead_attributions, lead_attributions.c.organization_id == org_id),
        "tasks": _count(tasks, tasks.c.organization_id == org_id, tasks.c.type == "contact_lead"),
        "receipts": _count(lead_receipts, lead_receipts.c.organization_id == org_id),
    }


def attributions_of(org_id: uuid.UUID) -> list[dict[str, Any]]:
    with get_engine().connect() as conn:
        rows = conn.execute(select(lead_attributions).where(lead_attributions.c.organization_id == org_id))
        return [dict(r) for r in rows.mappings()]


def ingested(channel: str, external_ref: str) -> dict[str, Any] | None:
    with get_engine().connect() as conn:
        row = conn.execute(
            select(ingested_events).where(
                ingested_events.c.channel == channel, ingested_events.c.external_ref == external_ref
            )
        ).mappings()
        found = row.first()
        return dict(found) if found else None


def connection_row(connection_id: Any) -> dict[str, Any]:
    with get_engine().connect() as conn:
        row = conn.execute(
            select(integration_connections).where(integration_connections.c.id == uuid.UUID(str(connection_id)))
        )
        return dict(row.mappings().one())


def emitted_metrics(captured_stdout: str) -> list[str]:
    """The metric names of the EMF documents Powertools printed."""
    names = []
    for line in captured_stdout.splitlines():
        try:
            document = json.loads(line)
        except ValueError:
            continue
        if isinstance(document, dict) and "_aws" in document:
            for directive in document["_aws"]["CloudWatchMetrics"]:
                names.extend(m["Name"] for m in directive["Metrics"])
    return names


@contextmanager
def wide_pool(monkeypatch: Any, size: int = 12) -> Iterator[None]:
    """The product's engine with room for `size` connections (a Lambda has one): for race tests, whose
    threads each run a whole unit of work through the real services."""
    from leadcrm.platform.config import get_settings
    from leadcrm.platform.db.engine import dispose_engine

    monkeypatch.setenv("DB_POOL_SIZE", str(size))
    get_settings.cache_clear()
    dispose_engine()
    try:
        yield
    finally:
        dispose_engine()
        monkeypatch.delenv("DB_POOL_SIZE")
        get_settings.cache_clear()


# --- CSV import ----------------------------------------------------------------------------------------

IMPORTS_BUCKET = "leadcrm-lead-imports-test"


def make_imports_bucket(monkeypatch: Any) -> str:
    from tests.support.aws import REGION, aws_client

    aws_client("s3").create_bucket(Bucket=IMPORTS_BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
    monkeypatch.setenv("LEAD_IMPORTS_BUCKET", IMPORTS_BUCKET)
    return IMPORTS_BUCKET


def imports_path(caller: Any, suffix: str = "") -> str:
    return f"/organizations/{caller.org_id}/leads/import{suffix}"


def csv_text(header: list[str], *rows: list[str]) -> bytes:
    import csv
    import io

    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue().encode()


def upload(new_import: dict[str, Any], content: bytes) -> None:
    """PUT the file to the presigned URL the API gave, as the dashboard does (moto answers it)."""
    import requests

    upload_spec = new_import["upload"]
    response = requests.request(upload_spec["method"], upload_spec["url"], data=content, headers=upload_spec["headers"])
    assert response.status_code == 200, response.text


def run_queued_imports(queue: Any) -> dict[str, Any]:
    """Hand what the ingestion queue holds to the ingestion function, as its event source mapping would."""
    from ingestion.handler import lambda_handler
    from tests.support.events import sqs_record_from_message

    records = [sqs_record_from_message(m, queue_name=queue.name) for m in queue.receive_all()]
    assert records, "nothing was queued"
    return lambda_handler(sqs_event(*records), lambda_context("leadcrm-ingestion"))
