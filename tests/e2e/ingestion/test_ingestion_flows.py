"""Ingestion over HTTP, as a dashboard developer drives it through `make dev`: connect a page, Meta sends a
signed leadgen webhook, the lead (read from the local Graph stand-in) shows in the list with its campaign;
and a CSV file imported through the presigned upload."""

from __future__ import annotations

import csv
import hashlib
import hmac
import io
import json
import urllib.request
import uuid
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import LocalStackClient

pytestmark = pytest.mark.e2e

LOCAL_APP_SECRET = "local-app-secret"  # the local stack's default META_APP_SECRET


def _digits() -> str:
    return str(uuid.uuid4().int)[:15]


def _signed_post(stack: LocalStackClient, path: str, payload: dict, secret: str = LOCAL_APP_SECRET):
    raw = json.dumps(payload).encode()
    signature = "sha256=" + hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()
    return stack.request(
        "POST", path, raw=raw, headers={"content-type": "application/json", "x-hub-signature-256": signature}
    )


def test_a_signed_leadgen_webhook_produces_a_lead_visible_in_the_list_with_its_campaign(local_stack: LocalStackClient):
    demo = local_stack.new_organization()
    org, owner = demo["organizationId"], demo["users"]["owner"]["token"]
    page_id, leadgen_id = _digits(), _digits()
    connected = local_stack.request(
        "POST",
        f"/organizations/{org}/integrations/meta",
        token=owner,
        json_body={"pageId": page_id, "accessToken": "EAA-local-page-token", "pageName": "E2E page"},
    )
    assert connected.status == 201, connected.body
    registered = local_stack.request(
        "POST",
        "/_local/graph/leads",
        json_body={
            "id": leadgen_id,
            "field_data": [
                {"name": "full_name", "values": ["Dana Cohen"]},
                {"name": "email", "values": [f"dana-{leadgen_id}@example.com"]},
            ],
            "form_id": "870000000000001",
            "ad_id": "120200000000000001",
            "campaign_id": "120200000000000003",
            "campaign_name": "Spring 2026",
            "platform": "fb",
        },
    )
    assert registered.status == 201
    webhook = {
        "object": "page",
        "entry": [
            {
                "id": page_id,
                "time": 1767225600,
                "changes": [
                    {
                        "field": "leadgen",
                        "value": {"leadgen_id": leadgen_id, "page_id": page_id, "form_id": "870000000000001"},
                    }
                ],
            }
        ],
    }

    assert _signed_post(local_stack, "/webhooks/meta/leadgen", webhook, secret="not-the-secret").status == 401
    assert _signed_post(local_stack, "/webhooks/meta/leadgen", webhook).status == 200
    assert _signed_post(local_stack, "/webhooks/meta/leadgen", webhook).status == 200  # Meta retries
    local_stack.wait_until_idle()

    listed = local_stack.request("GET", f"/organizations/{org}/leads", token=owner).json()["data"]
    assert [(lead["name"], lead["source"]) for lead in listed] == [("Dana Cohen", "facebook")]
    campaigns = local_stack.request("GET", f"/organizations/{org}/leads/campaigns", token=owner).json()["data"]
    assert [(c["id"], c["name"]) for c in campaigns] == [(listed[0]["campaignId"], "Spring 2026")]
    by_campaign = local_stack.request(
        "GET", f"/organizations/{org}/leads?campaignId={listed[0]['campaignId']}", token=owner
    ).json()["data"]
    assert [lead["id"] for lead in by_campaign] == [listed[0]["id"]]


def test_a_signed_leadgen_webhook_too_large_for_a_queue_message_still_produces_its_lead(local_stack: LocalStackClient):
    """Over SQS's 256 KiB the body travels by claim check (the local webhook bodies bucket): never a 502."""
    demo = local_stack.new_organization()
    org, owner = demo["organizationId"], demo["users"]["owner"]["token"]
    page_id, leadgen_id = _digits(), _digits()
    body = {"pageId": page_id, "accessToken": "EAA-local-page-token"}
    connected = local_stack.request("POST", f"/organizations/{org}/integrations/meta", token=owner, json_body=body)
    assert connected.status == 201, connected.body
    lead = {"id": leadgen_id, "field_data": [{"name": "full_name", "values": ["Noa Levi"]}], "platform": "fb"}
    assert local_stack.request("POST", "/_local/graph/leads", json_body=lead).status == 201
    change = {"field": "leadgen", "value": {"leadgen_id": leadgen_id, "page_id": page_id}}
    webhook = {"object": "page", "entry": [{"id": page_id, "changes": [change]}], "padding": "x" * (300 * 1024)}

    assert _signed_post(local_stack, "/webhooks/meta/leadgen", webhook).status == 200
    local_stack.wait_until_idle()

    listed = local_stack.request("GET", f"/organizations/{org}/leads", token=owner).json()["data"]
    assert [lead["name"] for lead in listed] == ["Noa Levi"]


def test_a_csv_uploaded_to_the_presigned_url_is_imported_with_a_per_row_report(local_stack: LocalStackClient):
    demo = local_stack.new_organization()
    org, coach = demo["organizationId"], demo["users"]["coach"]["token"]
    created = local_stack.request(
        "POST", f"/organizations/{org}/leads/import", token=coach, json_body={"fileName": "leads.csv"}
    ).json()["data"]
    out = io.StringIO()
    csv.writer(out).writerows([["Name", "Email"], ["Noa Levi", "noa@example.com"], ["Bad", "nope"]])
    put = urllib.request.Request(
        created["upload"]["url"], data=out.getvalue().encode(), method="PUT", headers=created["upload"]["headers"]
    )
    with urllib.request.urlopen(put, timeout=10) as response:
        assert response.status == 200

    started = local_stack.request(
        "POST", f"/organizations/{org}/leads/import/{created['job']['id']}/start", token=coach
    )
    assert started.status == 202
    local_stack.wait_until_idle()

    job = local_stack.request("GET", f"/organizations/{org}/leads/import/{created['job']['id']}", token=coach).json()
    assert (job["data"]["status"], job["data"]["createdCount"], job["data"]["invalidCount"]) == ("completed", 1, 1)
    listed = local_stack.request("GET", f"/organizations/{org}/leads", token=coach).json()["data"]
    assert [(lead["name"], lead["source"]) for lead in listed] == [("Noa Levi", "import")]
