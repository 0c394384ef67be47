"""SES as the local stack plays it: moto sends, plus what moto does not do.

- moto's SESv2 SendEmail ignores ConfigurationSetName and EmailTags. `remember_sending_options` wraps it (in
  this process, where the moto server runs) to keep both per message, with the time SES took it, and to
  refuse a configuration set that does not exist, as SES does (NotFoundException).
- moto publishes no sending events. `ses_event` builds one in AWS's shape (the EventBridge `detail` is the
  SES event record: `eventType`, `mail` with `messageId`, `timestamp`, `destination`, `headers`,
  `commonHeaders`, `tags` — `ses:configuration-set` and ours —, and the type's own object with AWS's field
  names), and `publish` puts it on the default bus as SES does (`source: aws.ses`, the detail-type, the
  configuration set as resource), where the same rule as in AWS routes it to the task_lifecycle queue.
"""

from __future__ import annotations

import json
import threading
import uuid
from datetime import UTC, datetime, timedelta
from email import message_from_string, policy
from email.utils import parseaddr
from typing import Any

REGION = "eu-west-1"
ACCOUNT = "123456789012"  # moto's default account
SES_SOURCE = "aws.ses"

# The local route's names for SES's event types, and their EventBridge detail-types.
EVENT_TYPES = {
    "send": ("Send", "Email Sent"),
    "delivery": ("Delivery", "Email Delivered"),
    "bounce": ("Bounce", "Email Bounced"),
    "complaint": ("Complaint", "Email Complaint Received"),
    "reject": ("Reject", "Email Rejected"),
    "deliveryDelay": ("DeliveryDelay", "Email Delivery Delayed"),
}
BOUNCE_TYPES = ("Permanent", "Transient", "Undetermined")
MTA = f"a8-12.smtp-out.{REGION}.amazonses.com"

_options: dict[str, dict[str, Any]] = {}  # SES message id -> configurationSet, tags, timestamp
_lock = threading.Lock()
_installed = False


def remember_sending_options() -> None:
    """Wraps moto's SESv2 SendEmail once per process (see the module docstring)."""
    global _installed
    from moto.core.exceptions import JsonRESTError
    from moto.sesv2.responses import SESV2Response

    if _installed:
        return
    original = SESV2Response.send_email

    def send_email(self: Any) -> str:
        params = json.loads(self.body)
        name = params.get("ConfigurationSetName")
        if name and name not in self.sesv2_backend.core_backend.config_sets:
            raise JsonRESTError("NotFoundException", f"Configuration set <{name}> does not exist.")
        answer = original(self)
        with _lock:
            _options[json.loads(answer)["MessageId"]] = {
                "configurationSet": name,
                "tags": {tag["Name"]: tag["Value"] for tag in params.get("EmailTags") or []},
                "timestamp": _iso(datetime.now(UTC)),
            }
        return answer

    SESV2Response.send_email = send_email  # type: ignore[method-assign]
    _installed = True


def sent_emails() -> list[dict[str, Any]]:
    """What SES has sent, oldest first, read from moto's in-process backend with what it did not keep."""
    from moto.ses.models import RawMessage, ses_backends

    sent = []
    for message in ses_backends[ACCOUNT][REGION].sent_messages:
        with _lock:
            options = _options.get(message.id, {})
        common = {
            "messageId": message.id,
            "configurationSet": options.get("configurationSet"),
            "tags": options.get("tags", {}),
            "timestamp": options.get("timestamp"),
        }
        if isinstance(message, RawMessage):
            parsed = message_from_string(message.raw_data, policy=policy.default)
            body = parsed.get_body(preferencelist=("plain",))
            sent.append(
                {
                    **common,
                    "from": parsed["From"],
                    "to": parsed.get_all("To", []),
                    "replyTo": parsed["Reply-To"],
                    "subject": parsed["Subject"],
                    "headers": {k: str(v) for k, v in parsed.items()},
                    "text": body.get_content() if body is not None else None,
                }
            )
        else:
            destinations = getattr(message, "destinations", {}) or {}
            sent.append(
                {
                    **common,
                    "from": message.source,
                    "to": destinations.get("ToAddresses", []),
                    "replyTo": None,
                    "subject": getattr(message, "subject", None),
                    "headers": {},
                    "text": getattr(message, "body", None),
                }
            )
    return sent


class EventRefused(ValueError):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code = status, code


def ses_event(
    mail: dict[str, Any], kind: str, *, bounce_type: str | None = None, timestamp: datetime | None = None
) -> tuple[str, dict[str, Any]]:
    """(detail-type, detail) of the SES event `kind` about a mail of `sent_emails()`. `timestamp` is the
    event's own time (now when omitted): the same mail, kind and timestamp make the same event, a replay."""
    if kind not in EVENT_TYPES:
        raise EventRefused(400, "VALIDATION_FAILED", f"type must be one of {', '.join(EVENT_TYPES)}.")
    if bounce_type is not None and (kind != "bounce" or bounce_type not in BOUNCE_TYPES):
        choices = ", ".join(BOUNCE_TYPES)
        raise EventRefused(400, "VALIDATION_FAILED", f"bounceType is for a bounce: one of {choices}.")
    if not mail.get("configurationSet"):
        message = "SES publishes events only for mail sent with a configuration set."
        raise EventRefused(409, "NO_CONFIGURATION_SET", message)
    event_type, detail_type = EVENT_TYPES[kind]
    at = _iso(timestamp or datetime.now(UTC))
    recipients = [parseaddr(str(to))[1] for to in mail["to"]]
    mail_object = _mail_object(mail, recipients)
    if kind not in ("send", "reject"):  # SES names the address it sent from once the mail left it
        mail_object["tags"]["ses:outgoing-ip"] = ["127.0.0.1"]
    return detail_type, {"eventType": event_type, "mail": mail_object, **_body(kind, at, recipients, bounce_type)}


def publish(detail_type: str, detail: dict[str, Any]) -> str:
    """Puts an SES event on the default bus as SES does; its EventBridge id."""
    from leadcrm.platform.adapters.aws import client

    configuration_set = detail["mail"]["tags"]["ses:configuration-set"][0]
    response = client("events").put_events(
        Entries=[
            {
                "Source": SES_SOURCE,
                "DetailType": detail_type,
                "Detail": json.dumps(detail),
                "Resources": [f"arn:aws:ses:{REGION}:{ACCOUNT}:configuration-set/{configuration_set}"],
            }
        ]
    )
    return str(response["Entries"][0].get("EventId"))


def _mail_object(mail: dict[str, Any], recipients: list[str]) -> dict[str, Any]:
    source = parseaddr(str(mail["from"]))[1]
    domain = source.rpartition("@")[2]
    tags = {
        "ses:configuration-set": [mail["configurationSet"]],
        "ses:source-ip": ["127.0.0.1"],
        "ses:from-domain": [domain],
        "ses:caller-identity": ["local"],
        **{name: [value] for name, value in mail["tags"].items()},
    }
    headers = mail["headers"] or {"From": mail["from"], "To": ", ".join(recipients), "Subject": mail["subject"]}
    return {
        "timestamp": mail["timestamp"],
        "source": source,
        "sourceArn": f"arn:aws:ses:{REGION}:{ACCOUNT}:identity/{domain}",
        "sendingAccountId": ACCOUNT,
        "messageId": mail["messageId"],
        "destination": recipients,
        "headersTruncated": False,
        "headers": [{"name": name, "value": value} for name, value in headers.items()],
        "commonHeaders": {
            "from": [str(mail["from"])],
            "to": recipients,
            "messageId": mail["messageId"],
            "subject": mail["subject"],
        },
        "tags": tags,
    }


def _body(kind: str, at: str, recipients: list[str], bounce_type: str | None) -> dict[str, Any]:
    feedback_id = f"{uuid.uuid4().hex[:16]}-{uuid.uuid4()}-000000"
    if kind == "send":
        return {"send": {}}
    if kind == "delivery":
        return {
            "delivery": {
                "timestamp": at,
                "processingTimeMillis": 546,
                "recipients": recipients,
                "smtpResponse": "250 2.6.0 Message received",
                "remoteMtaIp": "127.0.0.1",
                "reportingMTA": MTA,
            }
        }
    if kind == "bounce":
        bounce_type = bounce_type or "Permanent"
        permanent = bounce_type == "Permanent"
        return {
            "bounce": {
                "bounceType": bounce_type,
                "bounceSubType": "Undetermined" if bounce_type == "Undetermined" else "General",
                "bouncedRecipients": [
                    {
                        "emailAddress": address,
                        "action": "failed",
                        "status": "5.1.1" if permanent else "4.4.7",
                        "diagnosticCode": "smtp; 550 5.1.1 user unknown" if permanent else "smtp; 421 4.4.7 timeout",
                    }
                    for address in recipients
                ],
                "timestamp": at,
                "feedbackId": feedback_id,
                "reportingMTA": f"dsn; {MTA}",
            }
        }
    if kind == "complaint":
        return {
            "complaint": {
                "complainedRecipients": [{"emailAddress": address} for address in recipients],
                "timestamp": at,
                "feedbackId": feedback_id,
                "userAgent": "LocalMail/1.0",
                "complaintFeedbackType": "abuse",
                "arrivalDate": at,
            }
        }
    if kind == "reject":
        return {"reject": {"reason": "Bad content"}}
    expires = _iso(datetime.fromisoformat(at) + timedelta(hours=12))
    return {
        "deliveryDelay": {
            "timestamp": at,
            "delayType": "TransientCommunicationFailure",
            "expirationTime": expires,
            "delayedRecipients": [
                {"emailAddress": address, "status": "4.4.1", "diagnosticCode": "smtp; 421 4.4.1 Unable to connect"}
                for address in recipients
            ],
            "reportingMTA": MTA,
        }
    }


def _iso(moment: datetime) -> str:
    """ISO 8601 as SES writes it: UTC, milliseconds, `Z`."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
