"""Helpers for the conversations, inbound email, consent and bulk email tests."""

from __future__ import annotations

import email
import json
import re
import uuid
from email import policy
from pathlib import Path
from typing import Any

from sqlalchemy import insert, select, update

from leadcrm.conversations.tables import conversation_messages, conversations, lead_consent_events, lead_consents
from leadcrm.directory.tables import memberships
from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.tables import outbox
from tests.support.api import ApiResponse, call_api, leads_path
from tests.support.aws import aws_client
from tests.support.events import lambda_context, sqs_event, sqs_record
from tests.support.factories import StaffCaller

REGION = "eu-west-1"
ACCOUNT = "123456789012"
MAIL_DOMAIN = "mail.leadcrm.local"
INBOUND_BUCKET = "leadcrm-inbound-mail"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "email"


def conversations_path(org_id: Any, conversation_id: Any | None = None, action: str | None = None) -> str:
    path = f"/organizations/{org_id}/conversations"
    if conversation_id is not None:
        path += f"/{conversation_id}"
    return path + (f"/{action}" if action else "")


def open_conversation(caller: StaffCaller, body: dict[str, Any], *, org_id: Any = None) -> ApiResponse:
    return call_api("POST", conversations_path(org_id or caller.org_id), sub=caller.sub, body=body)


def send(caller: StaffCaller, conversation_id: Any, body: str, subject: str | None = None) -> ApiResponse:
    payload: dict[str, Any] = {"body": body}
    if subject is not None:
        payload["subject"] = subject
    return call_api(
        "POST", conversations_path(caller.org_id, conversation_id, "messages"), sub=caller.sub, body=payload
    )


def email_lead(caller: StaffCaller, lead_id: Any, body: str = "Hello!", subject: str | None = None) -> ApiResponse:
    payload: dict[str, Any] = {"leadId": str(lead_id), "channel": "email", "body": body}
    if subject is not None:
        payload["subject"] = subject
    return open_conversation(caller, payload)


def inbox(caller: StaffCaller, **query: str) -> ApiResponse:
    return call_api("GET", conversations_path(caller.org_id), sub=caller.sub, query=query or None)


def verify_sender() -> None:
    """SES (moto) sends only from a verified identity: the local mail domain, as infra verifies it."""
    aws_client("sesv2").create_email_identity(EmailIdentity=MAIL_DOMAIN)


def sent_mails() -> list[email.message.EmailMessage]:
    """Every raw mail moto's SES sent, parsed, oldest first."""
    from moto.ses.models import RawMessage, ses_backends

    return [
        email.message_from_string(m.raw_data, policy=policy.default)  # type: ignore[misc]
        for m in ses_backends[ACCOUNT][REGION].sent_messages
        if isinstance(m, RawMessage)
    ]


def mail_text(message: email.message.EmailMessage) -> str:
    body = message.get_body(preferencelist=("plain",))
    assert body is not None
    return body.get_content()


def fixture_mail(name: str, reply_to: str, *, message_id: str | None = None) -> bytes:
    """A real client's mail from tests/fixtures/email with our address where {{REPLY_TO}} stands, and a
    Message-ID of its own (`message_id`, else a fresh one): the test database is shared by every test, and
    recordInbound deduplicates on the Message-ID as the mail systems make it, unique per message."""
    raw = (FIXTURES / name).read_bytes().replace(b"{{REPLY_TO}}", reply_to.encode())
    new_id = (message_id or f"<{uuid.uuid4().hex}@test.example>").encode()
    return re.sub(rb"(?im)^(message-id:)[^\r\n]*", lambda m: m.group(1) + b" " + new_id, raw, count=1)


def make_inbound_bucket() -> None:
    aws_client("s3").create_bucket(Bucket=INBOUND_BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})


def deliver_inbound(raw: bytes, key: str | None = None) -> dict[str, Any]:
    """What SES does (the raw message under inbound/) and the S3 event the queue hands the ingestion
    function, in AWS's shapes; the function's batch answer."""
    from ingestion.handler import lambda_handler

    key = key or f"inbound/{uuid.uuid4().hex}"
    aws_client("s3").put_object(Bucket=INBOUND_BUCKET, Key=key, Body=raw)
    return lambda_handler(sqs_event(sqs_record(s3_notification(key))), lambda_context("leadcrm-ingestion"))


def s3_notification(key: str) -> dict[str, Any]:
    return {
        "Records": [
            {
                "eventVersion": "2.1",
                "eventSource": "aws:s3",
                "awsRegion": REGION,
                "eventTime": "2026-11-29T10:15:08.000Z",
                "eventName": "ObjectCreated:Put",
                "s3": {
                    "s3SchemaVersion": "1.0",
                    "bucket": {"name": INBOUND_BUCKET, "arn": f"arn:aws:s3:::{INBOUND_BUCKET}"},
                    "object": {"key": key, "size": 1024},
                },
            }
        ]
    }


def thread_row(conversation_id: Any) -> dict[str, Any]:
    with get_engine().connect() as conn:
        return dict(
            conn.execute(select(conversations).where(conversations.c.id == uuid.UUID(str(conversation_id))))
            .mappings()
            .one()
        )


def set_thread_columns(conversation_id: Any, **values: Any) -> None:
    with get_engine().begin() as conn:
        conn.execute(
            update(conversations).where(conversations.c.id == uuid.UUID(str(conversation_id))).values(**values)
        )


def set_inbound(conversation_id: Any, external_message_id: str, body: str = "A reply") -> None:
    """An inbound message as recordInbound leaves it (for tests about what comes after one)."""
    from leadcrm.platform.ids import uuid7

    thread = thread_row(conversation_id)
    with get_engine().begin() as conn:
        conn.execute(
            insert(conversation_messages).values(
                id=uuid7(),
                organization_id=thread["organization_id"],
                conversation_id=thread["id"],
                direction="inbound",
                channel="email",
                status="received",
                body=body,
                external_message_id=external_message_id,
            )
        )


def threads_of_org(org_id: Any) -> list[dict[str, Any]]:
    with get_engine().connect() as conn:
        rows = conn.execute(select(conversations).where(conversations.c.organization_id == uuid.UUID(str(org_id))))
        return [dict(r) for r in rows.mappings()]


def messages_of(conversation_id: Any) -> list[dict[str, Any]]:
    with get_engine().connect() as conn:
        rows = conn.execute(
            select(conversation_messages)
            .where(conversation_messages.c.conversation_id == uuid.UUID(str(conversation_id)))
            .order_by(conversation_messages.c.created_at, conversation_messages.c.id)
        )
        return [dict(r) for r in rows.mappings()]


def all_messages_count() -> int:
    with get_engine().connect() as conn:
        return len(conn.execute(select(conversation_messages.c.id)).all())


def outbox_of(aggregate_id: Any, event_type: str) -> list[dict[str, Any]]:
    with get_engine().connect() as conn:
        rows = conn.execute(
            select(outbox).where(outbox.c.aggregate_id == uuid.UUID(str(aggregate_id)), outbox.c.type == event_type)
        )
        return [dict(r) for r in rows.mappings()]


def set_prefs(membership_id: Any, prefs: Any) -> None:
    with get_engine().begin() as conn:
        conn.execute(
            update(memberships)
            .where(memberships.c.id == uuid.UUID(str(membership_id)))
            .values(notification_prefs=prefs)
        )


def revoke_email(caller: StaffCaller, lead_id: Any) -> None:
    response = put_consent(caller, lead_id, "email", {"status": "revoked"})
    assert response.status == 200, response.body


def put_consent(caller: StaffCaller, lead_id: Any, channel: str, body: Any) -> ApiResponse:
    return call_api("PUT", leads_path(caller.org_id, lead_id) + f"/consent/{channel}", sub=caller.sub, body=body)


def consent_ledger(lead_id: Any) -> list[dict[str, Any]]:
    with get_engine().connect() as conn:
        rows = conn.execute(
            select(lead_consent_events)
            .where(lead_consent_events.c.lead_id == uuid.UUID(str(lead_id)))
            .order_by(lead_consent_events.c.occurred_at, lead_consent_events.c.id)
        )
        return [dict(r) for r in rows.mappings()]


def consent_state(lead_id: Any) -> dict[str, str]:
    with get_engine().connect() as conn:
        rows = conn.execute(
            select(lead_consents.c.channel, lead_consents.c.status).where(
                lead_consents.c.lead_id == uuid.UUID(str(lead_id))
            )
        )
        return {r.channel: r.status for r in rows}


def reply_to_of(message: email.message.EmailMessage) -> str:
    return str(message["Reply-To"])


def as_json(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))
