"""The walking skeleton over HTTP, as a dashboard developer drives it through `make dev`."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import uuid
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import LocalStackClient

pytestmark = pytest.mark.e2e


def _wait_for_activity(stack: LocalStackClient, org: str, lead: str, token: str, kind: str) -> list[dict]:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        timeline = stack.request("GET", f"/organizations/{org}/leads/{lead}", token=token).json()["data"]["timeline"]
        if any(entry["type"] == kind for entry in timeline):
            return timeline
        time.sleep(0.2)
    raise AssertionError(f"no {kind} on the timeline within 15 s")


def test_a_coach_creates_a_lead_and_task_lifecycle_records_lead_created(local_stack: LocalStackClient) -> None:
    demo = local_stack.new_organization()
    org, coach = demo["organizationId"], demo["users"]["coach"]["token"]

    created = local_stack.request(
        "POST",
        f"/organizations/{org}/leads",
        token=coach,
        json_body={"name": "Dana Cohen", "email": "dana@example.com"},
    )

    assert created.status == 201
    lead = created.json()["data"]
    assert lead["status"] == "new"
    timeline = _wait_for_activity(local_stack, org, lead["id"], coach, "lead_created")
    assert [e["type"] for e in timeline] == ["lead_created", "status_changed"]


def test_the_new_lead_is_listed_for_staff(local_stack: LocalStackClient) -> None:
    demo = local_stack.new_organization()
    org, admin = demo["organizationId"], demo["users"]["admin"]["token"]
    lead_id = local_stack.request(
        "POST", f"/organizations/{org}/leads", token=admin, json_body={"phone": "+972501112233"}
    ).json()["data"]["id"]

    listed = local_stack.request("GET", f"/organizations/{org}/leads", token=admin).json()

    assert [lead["id"] for lead in listed["data"]] == [lead_id]
    assert listed["nextCursor"] is None


def test_a_member_is_refused_with_403(local_stack: LocalStackClient) -> None:
    demo = local_stack.new_organization()
    org, member = demo["organizationId"], demo["users"]["member"]["token"]

    reply = local_stack.request("POST", f"/organizations/{org}/leads", token=member, json_body={"name": "X"})

    assert reply.status == 403
    assert reply.json()["error"]["code"] == "STAFF_ONLY"


def test_a_user_of_another_organization_is_refused_with_403(local_stack: LocalStackClient) -> None:
    org = local_stack.new_organization()["organizationId"]
    outsider = local_stack.new_organization()["users"]["owner"]["token"]

    reply = local_stack.request("GET", f"/organizations/{org}/leads", token=outsider)

    assert reply.status == 403
    assert reply.json()["error"]["code"] == "NOT_A_MEMBER"


def test_a_user_with_no_membership_is_refused_with_403(local_stack: LocalStackClient) -> None:
    org = local_stack.new_organization()["organizationId"]
    loner = local_stack.request("POST", "/_local/users", json_body={}).json()["data"]["token"]

    assert local_stack.request("GET", f"/organizations/{org}/leads", token=loner).status == 403


def test_another_organizations_lead_id_answers_404(local_stack: LocalStackClient) -> None:
    ours, theirs = local_stack.new_organization(), local_stack.new_organization()
    their_lead = local_stack.request(
        "POST",
        f"/organizations/{theirs['organizationId']}/leads",
        token=theirs["users"]["coach"]["token"],
        json_body={"name": "Not yours"},
    ).json()["data"]["id"]

    reply = local_stack.request(
        "GET", f"/organizations/{ours['organizationId']}/leads/{their_lead}", token=ours["users"]["coach"]["token"]
    )

    assert reply.status == 404
    assert (
        reply.json()
        == local_stack.request(
            "GET",
            f"/organizations/{ours['organizationId']}/leads/{uuid.uuid4()}",
            token=ours["users"]["coach"]["token"],
        ).json()
    )


@pytest.mark.parametrize("raw", [b"{not json", b'{"name": 7}', b'{"name": "A", "surprise": true}', b"[]", b"{}"])
def test_a_malformed_body_gets_a_4xx_json_error(local_stack: LocalStackClient, raw: bytes) -> None:
    demo = local_stack.new_organization()

    reply = local_stack.request(
        "POST",
        f"/organizations/{demo['organizationId']}/leads",
        raw=raw,
        token=demo["users"]["coach"]["token"],
        headers={"content-type": "application/json"},
    )

    assert reply.status == 400
    assert set(reply.json()["error"]) >= {"code", "message"}


def test_a_request_without_a_token_is_refused_by_the_authorizer(local_stack: LocalStackClient) -> None:
    org = local_stack.new_organization()["organizationId"]

    assert local_stack.request("GET", f"/organizations/{org}/leads").status == 401
    assert local_stack.request("GET", f"/organizations/{org}/leads", token="not-a-jwt").status == 401


def test_the_openapi_document_is_served(local_stack: LocalStackClient) -> None:
    document = local_stack.request("GET", "/openapi.json").json()

    assert "/organizations/{orgId}/leads" in document["paths"]


def test_a_signed_meta_webhook_is_accepted_and_drained_and_a_forged_one_refused(
    local_stack: LocalStackClient,
) -> None:
    # A page no organization connected: the session's stack is shared with the fuzz suites, which may connect
    # any page id they draw (then graph_fetch would retry this leadgen against a token Graph refuses).
    page_id = f"unconnected-{uuid.uuid4().hex}"
    body = json.dumps(
        {"object": "page", "entry": [{"id": page_id, "changes": [{"field": "leadgen", "value": {"leadgen_id": "9"}}]}]}
    )
    signature = "sha256=" + hmac.new(b"local-app-secret", body.encode(), hashlib.sha256).hexdigest()

    forged = local_stack.request(
        "POST", "/webhooks/meta/leadgen", raw=body.encode(), headers={"x-hub-signature-256": "sha256=" + "0" * 64}
    )
    accepted = local_stack.request(
        "POST",
        "/webhooks/meta/leadgen",
        raw=body.encode(),
        headers={"x-hub-signature-256": signature, "content-type": "application/json"},
    )

    assert forged.status == 401
    assert accepted.status == 200
    local_stack.wait_until_idle()


def test_the_meta_handshake_echoes_the_challenge(local_stack: LocalStackClient) -> None:
    reply = local_stack.request(
        "GET", "/webhooks/meta/leadgen?hub.mode=subscribe&hub.verify_token=local-verify-token&hub.challenge=31337"
    )

    assert (reply.status, reply.body) == (200, b"31337")


def test_a_second_local_user_with_an_email_in_use_is_a_409_not_a_500(local_stack: LocalStackClient) -> None:
    email = f"twice+{uuid.uuid4().hex[:8]}@example.com"
    first = local_stack.request("POST", "/_local/users", json_body={"email": email})
    again = local_stack.request("POST", "/_local/users", json_body={"email": email.upper()})
    assert first.status == 201
    assert (again.status, again.json()["error"]["code"]) == (409, "EMAIL_IN_USE")


def test_a_local_user_email_that_is_no_address_is_a_400(local_stack: LocalStackClient) -> None:
    reply = local_stack.request("POST", "/_local/users", json_body={"email": 42})
    assert (reply.status, reply.json()["error"]["code"]) == (400, "VALIDATION_FAILED")
