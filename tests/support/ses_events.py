"""SES's sending events for the tests, in AWS's shapes: the documented example records of
tests/fixtures/ses/ with a test's own message id, recipient, tags and timestamps, wrapped as EventBridge
puts them on SQS (source aws.ses), and delivered to the task_lifecycle function as its queue hands them."""

from __future__ import annotations

import copy
import json
import uuid
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from tests.support.events import eventbridge_envelope, lambda_context, sqs_event, sqs_record

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ses"
CONFIGURATION_SET = "leadcrm-test"
REGION = "eu-west-1"
ACCOUNT = "123456789012"

# kind: (fixture, its object, EventBridge detail-type)
KINDS = {
    "send": ("send.json", "send", "Email Sent"),
    "delivery": ("delivery.json", "delivery", "Email Delivered"),
    "bounce": ("bounce.json", "bounce", "Email Bounced"),
    "complaint": ("complaint.json", "complaint", "Email Complaint Received"),
    "reject": ("reject.json", "reject", "Email Rejected"),
    "deliveryDelay": ("delivery_delay.json", "deliveryDelay", "Email Delivery Delayed"),
}
_RECIPIENT_LISTS = {
    "bounce": "bouncedRecipients",
    "complaint": "complainedRecipients",
    "deliveryDelay": "delayedRecipients",
}


@cache
def _fixture(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / name).read_text())


def iso(moment: datetime | None = None) -> str:
    moment = (moment or datetime.now(UTC)).astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def ses_detail(
    kind: str,
    *,
    message_id: str,
    to: str,
    tag: str | None = None,
    timestamp: str | None = None,
    sent_at: str | None = None,
    bounce_type: str | None = None,
    feedback_type: str | None = None,
    configuration_set: str = CONFIGURATION_SET,
) -> dict[str, Any]:
    """The SES event record `kind` (send, delivery, bounce, complaint, reject, deliveryDelay) about one mail:
    `message_id` SES's id, `to` its recipient, `tag` the value of our `leadcrm-mail` tag (None: a mail
    without it), `timestamp` the event's own time (now when omitted)."""
    fixture, body_name, _ = KINDS[kind]
    detail = copy.deepcopy(_fixture(fixture))
    mail = detail["mail"]
    mail["messageId"] = message_id
    mail["timestamp"] = sent_at or iso()
    mail["destination"] = [to]
    if "commonHeaders" in mail:
        mail["commonHeaders"].update(messageId=message_id, to=[to])
    mail["tags"]["ses:configuration-set"] = [configuration_set]
    if tag is not None:
        mail["tags"]["leadcrm-mail"] = [tag]
    body = detail[body_name]
    if "timestamp" in body:
        body["timestamp"] = timestamp or iso()
    if kind == "delivery":
        body["recipients"] = [to]
    if kind in _RECIPIENT_LISTS:
        for recipient in body[_RECIPIENT_LISTS[kind]]:
            recipient["emailAddress"] = to
    if bounce_type is not None:
        body["bounceType"] = bounce_type
        body["bounceSubType"] = "General"
    if feedback_type is not None:
        body["complaintFeedbackType"] = feedback_type
    if kind in ("bounce", "complaint"):
        body["feedbackId"] = f"{uuid.uuid4().hex}-000000"
    return detail


def ses_envelope(kind: str, detail: dict[str, Any]) -> dict[str, Any]:
    """As SES's event arrives from the default bus in the task_lifecycle queue's message body."""
    configuration_set = detail["mail"]["tags"]["ses:configuration-set"][0]
    return eventbridge_envelope(
        KINDS[kind][2],
        detail,
        source="aws.ses",
        resources=[f"arn:aws:ses:{REGION}:{ACCOUNT}:configuration-set/{configuration_set}"],
    )


def deliver_ses_events(*events: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """(kind, detail) pairs as one SQS batch to the task_lifecycle function; its batch answer."""
    from task_lifecycle.handler import lambda_handler

    records = [sqs_record(ses_envelope(kind, detail), queue_name="leadcrm-task-lifecycle") for kind, detail in events]
    return lambda_handler(sqs_event(*records), lambda_context("leadcrm-task-lifecycle"))


def redeliver(record_body: dict[str, Any], times: int = 1) -> list[dict[str, Any]]:
    """The same SQS body delivered again (a redrive, or SQS's at-least-once delivery)."""
    from task_lifecycle.handler import lambda_handler

    return [
        lambda_handler(
            sqs_event(sqs_record(record_body, queue_name="leadcrm-task-lifecycle")),
            lambda_context("leadcrm-task-lifecycle"),
        )
        for _ in range(times)
    ]
