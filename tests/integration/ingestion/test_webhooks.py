"""The Meta webhook receiver behind a function URL: handshake, signature check, enqueue, nothing else."""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

import pytest

from tests.support.aws import aws_client
from tests.support.events import function_url_event, lambda_context

LEADGEN = {
    "object": "page",
    "entry": [
        {
            "id": "104857600000000",
            "time": 1767225600,
            "changes": [
                {
                    "field": "leadgen",
                    "value": {
                        "ad_id": "120200000000000001",
                        "form_id": "870000000000001",
                        "leadgen_id": "950000000000001",
                        "created_time": 1767225600,
                        "page_id": "104857600000000",
                        "adgroup_id": "120200000000000001",
                    },
                }
            ],
        }
    ],
}

WHATSAPP = {
    "object": "whatsapp_business_account",
    "entry": [
        {
            "id": "102290129340398",
            "changes": [
                {
                    "field": "messages",
                    "value": {
                        "messaging_product": "whatsapp",
                        "metadata": {"display_phone_number": "15550783881", "phone_number_id": "106540352242922"},
                        "contacts": [{"profile": {"name": "Ada"}, "wa_id": "447700900123"}],
                        "messages": [
                            {
                                "from": "447700900123",
                                "id": "wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQUFERjg0NDEzNDdFODU3MUMxMAA=",
                                "timestamp": "1767225600",
                                "type": "text",
                                "text": {"body": "Hi, I saw your ad"},
                                "referral": {
                                    "source_url": "https://fb.me/abc",
                                    "source_id": "120200000000000001",
                                    "source_type": "ad",
                                    "ctwa_clid": "ARAkLkA8rmlFeiCktEJQ-QTwRiyYHAFDLMNDBH0CD3qpjd0HR4irJ6LEkR7J",
                                },
                            }
                        ],
                    },
                }
            ],
        }
    ],
}


@pytest.fixture(autouse=True)
def _receiver_environment(ingestion_queue, graph_fetch_queue, meta_secrets):
    """The ingestion and graph-fetch queues exist and INGESTION_QUEUE_URL / GRAPH_FETCH_QUEUE_URL name them;
    the Meta secrets come from the env. Leadgen webhooks go to graph-fetch, WhatsApp ones to ingestion."""


@pytest.fixture
def receive():
    from webhooks.handler import lambda_handler

    def _receive(event: dict[str, Any]) -> dict[str, Any]:
        return lambda_handler(event, lambda_context("leadcrm-webhooks"))

    return _receive


def _signed(secret: str, raw: bytes) -> dict[str, str]:
    return {"x-hub-signature-256": "sha256=" + hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()}


def _post(path: str, payload: Any, *, secret: str, is_base64: bool = False, headers: dict | None = None) -> dict:
    raw = json.dumps(payload).encode()
    return function_url_event(
        "POST", path, body=raw, is_base64=is_base64, headers={**_signed(secret, raw), **(headers or {})}
    )


def _handshake(token: str, mode: str = "subscribe", challenge: str = "1158201444") -> dict:
    return function_url_event(
        "GET",
        "/webhooks/meta/leadgen",
        query={"hub.mode": mode, "hub.verify_token": token, "hub.challenge": challenge},
    )


def _json(response: dict) -> Any:
    return json.loads(response["body"])


# -- handshake -------------------------------------------------------------------------------------------


def test_the_handshake_with_the_right_token_answers_200_with_the_challenge_as_plain_text(receive, meta_secrets):
    _, verify_token = meta_secrets
    response = receive(_handshake(verify_token))
    assert response["statusCode"] == 200
    assert response["body"] == "1158201444"
    assert response["headers"]["content-type"] == "text/plain"


def test_the_handshake_with_a_wrong_token_is_refused_with_403(receive):
    response = receive(_handshake("guessed-token"))
    assert response["statusCode"] == 403
    assert _json(response)["error"]["code"] == "VERIFICATION_FAILED"


def test_the_handshake_for_a_mode_other_than_subscribe_is_refused_with_403(receive, meta_secrets):
    _, verify_token = meta_secrets
    assert receive(_handshake(verify_token, mode="unsubscribe"))["statusCode"] == 403


def test_the_handshake_without_any_query_is_refused_with_403(receive):
    assert receive(function_url_event("GET", "/webhooks/meta/leadgen"))["statusCode"] == 403


def test_the_whatsapp_endpoint_answers_the_handshake_too(receive, meta_secrets):
    _, verify_token = meta_secrets
    event = function_url_event(
        "GET",
        "/webhooks/whatsapp",
        query={"hub.mode": "subscribe", "hub.verify_token": verify_token, "hub.challenge": "42"},
    )
    assert receive(event)["body"] == "42"


# -- notifications ---------------------------------------------------------------------------------------


def test_a_correctly_signed_leadgen_notification_answers_200(receive, meta_secrets):
    secret, _ = meta_secrets
    response = receive(_post("/webhooks/meta/leadgen", LEADGEN, secret=secret))
    assert response["statusCode"] == 200
    assert _json(response) == {"received": True}


def test_a_correctly_signed_leadgen_notification_enqueues_exactly_one_message_for_graph_fetch(
    receive, meta_secrets, graph_fetch_queue, ingestion_queue
):
    secret, _ = meta_secrets
    receive(_post("/webhooks/meta/leadgen", LEADGEN, secret=secret))
    messages = graph_fetch_queue.receive_all()
    assert len(messages) == 1
    body = json.loads(messages[0]["Body"])
    assert body["kind"] == "meta.leadgen"
    assert body["payload"] == LEADGEN
    assert body["receivedAt"]
    assert ingestion_queue.receive_all() == []  # ingestion gets the lead once graph_fetch has read it


def test_the_enqueued_message_carries_its_kind_as_a_message_attribute(receive, meta_secrets, graph_fetch_queue):
    secret, _ = meta_secrets
    receive(_post("/webhooks/meta/leadgen", LEADGEN, secret=secret))
    (message,) = graph_fetch_queue.receive_all()
    assert message["MessageAttributes"]["kind"] == {"DataType": "String", "StringValue": "meta.leadgen"}


def test_a_base64_encoded_body_is_verified_on_its_decoded_bytes(receive, meta_secrets, graph_fetch_queue):
    secret, _ = meta_secrets
    response = receive(_post("/webhooks/meta/leadgen", LEADGEN, secret=secret, is_base64=True))
    assert response["statusCode"] == 200
    assert json.loads(graph_fetch_queue.receive_all()[0]["Body"])["payload"] == LEADGEN


def test_a_wrong_signature_is_refused_with_401_and_nothing_is_enqueued(receive, graph_fetch_queue):
    response = receive(_post("/webhooks/meta/leadgen", LEADGEN, secret="not-our-secret"))
    assert response["statusCode"] == 401
    assert _json(response)["error"]["code"] == "INVALID_SIGNATURE"
    assert graph_fetch_queue.receive_all() == []


def test_a_missing_signature_is_refused_with_401_and_nothing_is_enqueued(receive, graph_fetch_queue):
    event = function_url_event("POST", "/webhooks/meta/leadgen", body=json.dumps(LEADGEN))
    assert receive(event)["statusCode"] == 401
    assert graph_fetch_queue.receive_all() == []


def test_a_body_changed_after_signing_is_refused_with_401(receive, meta_secrets, graph_fetch_queue):
    secret, _ = meta_secrets
    event = _post("/webhooks/meta/leadgen", LEADGEN, secret=secret)
    event["body"] = event["body"].replace("950000000000001", "950000000000002")
    assert receive(event)["statusCode"] == 401
    assert graph_fetch_queue.receive_all() == []


def test_a_signed_body_that_is_not_json_is_a_400_and_nothing_is_enqueued(receive, meta_secrets, graph_fetch_queue):
    secret, _ = meta_secrets
    raw = b"<xml>not json</xml>"
    event = function_url_event("POST", "/webhooks/meta/leadgen", body=raw, headers=_signed(secret, raw))
    response = receive(event)
    assert response["statusCode"] == 400
    assert _json(response)["error"]["code"] == "MALFORMED_JSON"
    assert graph_fetch_queue.receive_all() == []


def test_with_no_app_secret_configured_every_notification_is_refused(receive, monkeypatch, graph_fetch_queue):
    from webhooks import secrets

    monkeypatch.setenv("META_APP_SECRET", "")
    secrets.forget()
    assert receive(_post("/webhooks/meta/leadgen", LEADGEN, secret=""))["statusCode"] == 401
    assert graph_fetch_queue.receive_all() == []


def test_a_whatsapp_notification_is_enqueued_as_kind_whatsapp(receive, meta_secrets, ingestion_queue):
    secret, _ = meta_secrets
    response = receive(_post("/webhooks/whatsapp", WHATSAPP, secret=secret))
    assert response["statusCode"] == 200
    (message,) = ingestion_queue.receive_all()
    body = json.loads(message["Body"])
    assert body["kind"] == "whatsapp"
    assert body["payload"] == WHATSAPP


def test_an_unknown_path_is_a_404_and_nothing_is_enqueued(receive, meta_secrets, graph_fetch_queue, ingestion_queue):
    secret, _ = meta_secrets
    response = receive(_post("/webhooks/tiktok", LEADGEN, secret=secret))
    assert response["statusCode"] == 404
    assert _json(response)["error"]["code"] == "ROUTE_NOT_FOUND"
    assert graph_fetch_queue.receive_all() == ingestion_queue.receive_all() == []


def test_a_method_other_than_get_or_post_is_a_405(receive):
    assert receive(function_url_event("PUT", "/webhooks/meta/leadgen", body="{}"))["statusCode"] == 405


def test_secrets_can_come_from_secrets_manager(receive, monkeypatch, graph_fetch_queue):
    from webhooks import secrets

    arn = aws_client("secretsmanager").create_secret(
        Name="leadcrm/meta",
        SecretString=json.dumps({"appSecret": "from-sm", "verifyToken": "sm-token"}),
    )["ARN"]
    monkeypatch.setenv("META_SECRET_ARN", arn)
    monkeypatch.setenv("META_APP_SECRET", "ignored-when-an-arn-is-set")
    secrets.forget()
    assert receive(_post("/webhooks/meta/leadgen", LEADGEN, secret="from-sm"))["statusCode"] == 200
    assert receive(_handshake("sm-token"))["statusCode"] == 200
    secrets.forget()
