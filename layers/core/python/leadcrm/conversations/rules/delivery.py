"""SES's email sending events, without I/O: reading them, what each does to a mail, and the bounce-rate rule.

SES publishes an event per mail of a configuration set (leadcrm.platform.adapters.ses names one on every
send) to the default EventBridge bus; `detail` is the SES event record itself, in AWS's field names:
`eventType` (Send, Delivery, Bounce, Complaint, Reject, DeliveryDelay, …), `mail` (`messageId`, `timestamp`,
`destination`, `tags`, …) and one object named after the type (`bounce.bounceType`, `complaint.timestamp`,
`deliveryDelay.delayType`, `reject.reason`, …).

- Which mail: every mail we send carries the tag `leadcrm-mail` (a `MailRef`: the conversation message, or
  the bulk job and lead), which SES echoes in `mail.tags`; SES's `mail.messageId` is the fallback.
- Identity of an event, for deduplication: SES's message id, the event type and the event's own timestamp
  (`bounce.timestamp`, `delivery.timestamp`, …; `mail.timestamp` for Send and Reject, which have none).
- Status: the worst news wins and nothing undoes it (`DELIVERY_RANK`): complained > bounced > rejected >
  delivered > delayed. Taking the maximum makes the result independent of the order events arrive in
  (EventBridge delivers best-effort, in any order) and of repeats.
- Suppression: a Permanent bounce or a complaint (other than a `not-spam` correction) revokes email for the
  address; a Transient or Undetermined bounce and a delay only record status.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from email.utils import parseaddr
from enum import StrEnum
from typing import Any

MAIL_TAG = "leadcrm-mail"
CONFIGURATION_SET_TAG = "ses:configuration-set"


class MailKind(StrEnum):
    CONVERSATION = "m"
    BULK = "b"


@dataclass(frozen=True)
class MailRef:
    """The mail a tag names: a conversation message, or a bulk job's recipient (job, lead)."""

    kind: MailKind
    message_id: uuid.UUID | None = None
    job_id: uuid.UUID | None = None
    lead_id: uuid.UUID | None = None

    @classmethod
    def conversation(cls, message_id: uuid.UUID) -> MailRef:
        return cls(MailKind.CONVERSATION, message_id=message_id)

    @classmethod
    def bulk(cls, job_id: uuid.UUID, lead_id: uuid.UUID) -> MailRef:
        return cls(MailKind.BULK, job_id=job_id, lead_id=lead_id)

    def tag_value(self) -> str:
        """SES tag values allow letters, digits, `_` and `-` only (at most 256): hex ids joined by `_`."""
        if self.kind is MailKind.CONVERSATION:
            assert self.message_id is not None
            return f"{self.kind.value}_{self.message_id.hex}"
        assert self.job_id is not None and self.lead_id is not None
        return f"{self.kind.value}_{self.job_id.hex}_{self.lead_id.hex}"


_REF = re.compile(r"^(?:m_(?P<message>[0-9a-f]{32})|b_(?P<job>[0-9a-f]{32})_(?P<lead>[0-9a-f]{32}))$")


def parse_mail_ref(value: Any) -> MailRef | None:
    """The ref of a tag value this service wrote, else None (anything else is not ours to act on)."""
    found = _REF.match(value) if isinstance(value, str) else None
    if found is None:
        return None
    if found["message"]:
        return MailRef.conversation(uuid.UUID(found["message"]))
    return MailRef.bulk(uuid.UUID(found["job"]), uuid.UUID(found["lead"]))


class SesEventType(StrEnum):
    SEND = "Send"
    DELIVERY = "Delivery"
    BOUNCE = "Bounce"
    COMPLAINT = "Complaint"
    REJECT = "Reject"
    DELIVERY_DELAY = "DeliveryDelay"


# EventBridge's detail-type for each event type SES publishes there (the bus rule routes these).
DETAIL_TYPES: dict[str, SesEventType] = {
    "Email Sent": SesEventType.SEND,
    "Email Delivered": SesEventType.DELIVERY,
    "Email Bounced": SesEventType.BOUNCE,
    "Email Complaint Received": SesEventType.COMPLAINT,
    "Email Rejected": SesEventType.REJECT,
    "Email Delivery Delayed": SesEventType.DELIVERY_DELAY,
}

# The object that carries each type's own fields, named as SES names it.
_BODY = {
    SesEventType.SEND: "send",
    SesEventType.DELIVERY: "delivery",
    SesEventType.BOUNCE: "bounce",
    SesEventType.COMPLAINT: "complaint",
    SesEventType.REJECT: "reject",
    SesEventType.DELIVERY_DELAY: "deliveryDelay",
}


class DeliveryStatus(StrEnum):
    DELAYED = "delayed"
    DELIVERED = "delivered"
    REJECTED = "rejected"
    BOUNCED = "bounced"
    COMPLAINED = "complained"


DELIVERY_RANK = {
    DeliveryStatus.DELAYED: 1,
    DeliveryStatus.DELIVERED: 2,
    DeliveryStatus.REJECTED: 3,
    DeliveryStatus.BOUNCED: 4,
    DeliveryStatus.COMPLAINED: 5,
}

_STATUS_OF = {
    SesEventType.DELIVERY: DeliveryStatus.DELIVERED,
    SesEventType.BOUNCE: DeliveryStatus.BOUNCED,
    SesEventType.COMPLAINT: DeliveryStatus.COMPLAINED,
    SesEventType.REJECT: DeliveryStatus.REJECTED,
    SesEventType.DELIVERY_DELAY: DeliveryStatus.DELAYED,
}

PERMANENT = "Permanent"
NOT_SPAM = "not-spam"  # an ISP's correction of an earlier report, not a complaint


class MalformedSesEvent(ValueError):
    """Not an SES event record we can read; the reason names the field, never its value."""


@dataclass(frozen=True)
class SesEvent:
    event_type: SesEventType
    ses_message_id: str
    occurred_at: datetime  # the event's own time: its deduplication key with the id and type
    sent_at: datetime  # mail.timestamp: when SES accepted the mail
    ref: MailRef | None
    # mail.destination: who the mail went to (one address: we send one recipient per mail). Read to find
    # the address a suppression is for, never stored.
    recipients: tuple[str, ...] = ()
    configuration_set: str | None = None
    bounce_type: str | None = None
    bounce_sub_type: str | None = None
    complaint_feedback_type: str | None = None
    complaint_sub_type: str | None = None
    delay_type: str | None = None
    reject_reason: str | None = None

    @property
    def status(self) -> DeliveryStatus | None:
        """What the mail's delivery status becomes at most (None for Send: it only proves SES took it)."""
        return _STATUS_OF.get(self.event_type)

    @property
    def suppresses(self) -> bool:
        """A Permanent bounce or a complaint: the address must not be mailed again."""
        if self.event_type is SesEventType.BOUNCE:
            return self.bounce_type == PERMANENT
        if self.event_type is SesEventType.COMPLAINT:
            return self.complaint_feedback_type != NOT_SPAM
        return False

    @property
    def is_permanent_bounce(self) -> bool:
        return self.event_type is SesEventType.BOUNCE and self.bounce_type == PERMANENT

    def detail(self) -> dict[str, Any]:
        """What is kept on the mail: the event's types, never an address, diagnostic code or user agent."""
        fields = {
            "eventType": self.event_type.value,
            "bounceType": self.bounce_type,
            "bounceSubType": self.bounce_sub_type,
            "complaintFeedbackType": self.complaint_feedback_type,
            "complaintSubType": self.complaint_sub_type,
            "delayType": self.delay_type,
            "rejectReason": self.reject_reason,
        }
        return {name: value for name, value in fields.items() if value is not None}


def next_delivery_status(current: str | None, incoming: DeliveryStatus | None) -> DeliveryStatus | None:
    """The status after `incoming`, or None when it changes nothing (no news, or news no worse than now)."""
    if incoming is None:
        return None
    now = DeliveryStatus(current) if current else None
    if now is not None and DELIVERY_RANK[now] >= DELIVERY_RANK[incoming]:
        return None
    return incoming


def bounce_rate_exceeded(sent: int, bounced: int, *, threshold: float, min_sent: int) -> bool:
    """A bulk email's Permanent bounces per mail SES took pass `threshold` (a fraction), once at least
    `min_sent` mails went out: a handful of mails says nothing about a list."""
    return sent >= max(min_sent, 1) and bounced / sent > threshold


# -- reading an event ---------------------------------------------------------------------------------------

_MAX_ID = 256
_MAX_TEXT = 200


def parse_ses_event(detail: Any) -> SesEvent:
    """An SES event record (EventBridge `detail`); MalformedSesEvent when it is not one we can read."""
    if not isinstance(detail, Mapping):
        raise MalformedSesEvent("detail is not an object")
    try:
        event_type = SesEventType(detail.get("eventType"))
    except ValueError:
        raise MalformedSesEvent("eventType is not one this service consumes") from None
    mail = detail.get("mail")
    if not isinstance(mail, Mapping):
        raise MalformedSesEvent("mail is missing")
    message_id = mail.get("messageId")
    if not isinstance(message_id, str) or not message_id or len(message_id) > _MAX_ID:
        raise MalformedSesEvent("mail.messageId is missing")
    sent_at = _instant(mail.get("timestamp"), "mail.timestamp")
    body = detail.get(_BODY[event_type])
    if not isinstance(body, Mapping):
        raise MalformedSesEvent(f"{_BODY[event_type]} is missing")
    occurred_at = sent_at if event_type in (SesEventType.SEND, SesEventType.REJECT) else _instant(
        body.get("timestamp"), f"{_BODY[event_type]}.timestamp"
    )
    tags = mail.get("tags") if isinstance(mail.get("tags"), Mapping) else {}
    return SesEvent(
        event_type=event_type,
        ses_message_id=message_id,
        occurred_at=occurred_at,
        sent_at=sent_at,
        ref=parse_mail_ref(_first(tags.get(MAIL_TAG))),
        recipients=_addresses(mail.get("destination")),
        configuration_set=_text(_first(tags.get(CONFIGURATION_SET_TAG))),
        bounce_type=_text(body.get("bounceType")) if event_type is SesEventType.BOUNCE else None,
        bounce_sub_type=_text(body.get("bounceSubType")) if event_type is SesEventType.BOUNCE else None,
        complaint_feedback_type=_text(body.get("complaintFeedbackType"))
        if event_type is SesEventType.COMPLAINT
        else None,
        complaint_sub_type=_text(body.get("complaintSubType")) if event_type is SesEventType.COMPLAINT else None,
        delay_type=_text(body.get("delayType")) if event_type is SesEventType.DELIVERY_DELAY else None,
        reject_reason=_text(body.get("reason")) if event_type is SesEventType.REJECT else None,
    )


def _addresses(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    found = (parseaddr(a)[1] for a in value[:50] if isinstance(a, str) and len(a) <= 320)
    return tuple(address for address in found if address)


def _first(value: Any) -> Any:
    """SES gives every tag as a list of values."""
    if isinstance(value, list):
        return value[0] if value else None
    return value


def _text(value: Any) -> str | None:
    return value[:_MAX_TEXT] if isinstance(value, str) and value else None


def _instant(value: Any, name: str) -> datetime:
    """ISO 8601 with a zone, as SES writes it (`2017-08-05T00:41:02.669Z`)."""
    if not isinstance(value, str) or len(value) > 40:
        raise MalformedSesEvent(f"{name} is missing")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise MalformedSesEvent(f"{name} is not an ISO 8601 instant") from None
    if parsed.tzinfo is None or not 1900 <= parsed.year <= 2999:
        raise MalformedSesEvent(f"{name} is not an instant with a zone")
    return parsed
