"""What SES says after it took a mail: delivery status, suppression of dead or complaining addresses, and the
bulk email that pauses itself when too many of its mails bounce.

SES publishes the events of its configuration set (every send names it) to the default EventBridge bus; a
rule routes them to the task_lifecycle queue, whose function hands each to `apply_ses_event` (wiring's
EVENT_REACTIONS, by detail-type) in one transaction:

1. Read the record (conversations.rules.delivery): a malformed one is logged and acknowledged.
2. Find the mail: the `leadcrm-mail` tag names a conversation message or a bulk recipient (found even when
   the function that sent it died before recording SES's id), else SES's message id. The row is locked, so
   two events of one mail apply one after the other. Mail of ours without a row (the digest, ticket mail)
   is acknowledged and ignored.
3. Claim the event in `ses_delivery_events` (SES message id, type, the event's own timestamp): a replayed or
   redelivered event stops here and changes nothing.
4. The mail: any event proves SES took it, so a message still `queued`, `unknown` or `failed` (the call
   timed out after SES accepted it) becomes `sent` with SES's id; the delivery status moves to the worst
   news so far (complained > bounced > rejected > delivered > delayed), whatever the order of arrival.
5. A Permanent bounce or a complaint revokes email for every lead of the organization with that address:
   a ledger entry with the legal basis `bounce` / `complaint` (source `ses_bounce` / `ses_complaint`) and a
   `consent_changed` timeline entry, so the consent gate blocks later 1:1 and bulk sends (403
   LEAD_CHANNEL_BLOCKED; skipped `no_consent`) and staff see why in the ledger. Transient bounces and delays
   record status only. A member's thread has no ledger: its status is recorded, nothing more.
6. A bulk recipient's Permanent bounce re-checks its job: once `BULK_EMAIL_BOUNCE_RATE_MIN_SENT` mails were
   sent and more than `BULK_EMAIL_MAX_BOUNCE_RATE` of them bounced permanently, the job is `paused`
   (`pause_reason: bounce_rate`, the figures in `pause_detail`) and sends nothing more.
"""

from __future__ import annotations

import logging
import os
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, and_, func, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert

from leadcrm.conversations import consent
from leadcrm.conversations.rules.delivery import (
    MailKind,
    MalformedSesEvent,
    SesEvent,
    SesEventType,
    bounce_rate_exceeded,
    next_delivery_status,
    parse_ses_event,
)
from leadcrm.conversations.rules.messages import Direction, MessageStatus
from leadcrm.conversations.tables import (
    bulk_email_jobs,
    bulk_email_recipients,
    conversation_messages,
    conversations,
    lead_consents,
    ses_delivery_events,
)
from leadcrm.leads.activity import record_activities
from leadcrm.leads.dedup import email_key_in
from leadcrm.leads.tables import leads
from leadcrm.platform.db.now import sql_now

logger = logging.getLogger(__name__)

DEFAULT_MAX_BOUNCE_RATE = 0.05
DEFAULT_BOUNCE_RATE_MIN_SENT = 20
BOUNCE_RATE = "bounce_rate"
BOUNCE_SOURCE = "ses_bounce"
COMPLAINT_SOURCE = "ses_complaint"
MAX_SUPPRESSED_LEADS = 50  # leads of one organization sharing one address; more is not a real case
PAUSABLE = ("queued", "sending")

# Send statuses an SES event corrects to `sent`: the mail reached SES whatever we recorded.
_CONVERSATION_UNCONFIRMED = (MessageStatus.QUEUED.value, MessageStatus.UNKNOWN.value, MessageStatus.FAILED.value)
_BULK_UNCONFIRMED = ("sending", "unknown", "failed")


def max_bounce_rate() -> float:
    """`BULK_EMAIL_MAX_BOUNCE_RATE`: the fraction (0–1) of a bulk email's sent mails that may bounce."""
    try:
        rate = float(os.environ.get("BULK_EMAIL_MAX_BOUNCE_RATE") or DEFAULT_MAX_BOUNCE_RATE)
    except ValueError:
        return DEFAULT_MAX_BOUNCE_RATE
    return min(max(rate, 0.0), 1.0)


def bounce_rate_min_sent() -> int:
    """`BULK_EMAIL_BOUNCE_RATE_MIN_SENT`: how many mails must have gone out before the rate is judged."""
    try:
        return max(int(os.environ.get("BULK_EMAIL_BOUNCE_RATE_MIN_SENT") or DEFAULT_BOUNCE_RATE_MIN_SENT), 1)
    except ValueError:
        return DEFAULT_BOUNCE_RATE_MIN_SENT


@dataclass(frozen=True)
class Mail:
    """The row an SES event is about, locked: a conversation message or a bulk recipient."""

    kind: MailKind
    organization_id: uuid.UUID
    lead_id: uuid.UUID | None  # None for a member's thread
    status: str
    provider_message_id: str | None
    delivery_status: str | None
    message_id: uuid.UUID | None = None
    job_id: uuid.UUID | None = None


def apply_ses_event(conn: Connection, detail: dict[str, Any]) -> bool:
    """One SES event (EventBridge detail) in the caller's transaction; True when it changed something."""
    try:
        event = parse_ses_event(detail)
    except MalformedSesEvent as malformed:
        logger.warning("SES event dropped", extra={"reason": str(malformed)})
        return False
    mail = find_mail(conn, event)
    if mail is None:
        logger.info("SES event for no mail we track", extra=_ids(event))
        return False
    if not _claim(conn, event, mail.organization_id):
        logger.info("SES event already applied", extra=_ids(event))
        return False
    _record_on_mail(conn, mail, event)
    if event.suppresses and mail.lead_id is not None:
        suppress_address(conn, mail, event)
    if mail.kind is MailKind.BULK and event.is_permanent_bounce:
        assert mail.job_id is not None
        pause_if_bouncing(conn, mail.job_id)
    return True


def _ids(event: SesEvent) -> dict[str, str]:
    return {"sesMessageId": event.ses_message_id, "eventType": event.event_type.value}


# -- finding the mail -------------------------------------------------------------------------------------


def find_mail(conn: Connection, event: SesEvent) -> Mail | None:
    """The locked row the event's tag names, else the row with its SES message id; None when neither."""
    ref = event.ref
    mail: Mail | None = None
    if ref is not None and ref.kind is MailKind.CONVERSATION:
        mail = _conversation_mail(conn, conversation_messages.c.id == ref.message_id)
    elif ref is not None:
        mail = _bulk_mail(
            conn, and_(bulk_email_recipients.c.job_id == ref.job_id, bulk_email_recipients.c.lead_id == ref.lead_id)
        )
    if mail is None:
        mail = _conversation_mail(conn, conversation_messages.c.provider_message_id == event.ses_message_id) or (
            _bulk_mail(conn, bulk_email_recipients.c.provider_message_id == event.ses_message_id)
        )
    if mail is not None and mail.provider_message_id not in (None, event.ses_message_id):
        # A tag naming a mail SES knows by another id: not this mail's news (it is never sent twice).
        logger.warning("SES event names a mail recorded under another SES id", extra=_ids(event))
        return None
    return mail


def _conversation_mail(conn: Connection, condition: Any) -> Mail | None:
    row = conn.execute(
        select(
            conversation_messages.c.id,
            conversation_messages.c.organization_id,
            conversation_messages.c.status,
            conversation_messages.c.provider_message_id,
            conversation_messages.c.delivery_status,
            conversations.c.lead_id,
        )
        .select_from(
            conversation_messages.join(conversations, conversations.c.id == conversation_messages.c.conversation_id)
        )
        .where(condition, conversation_messages.c.direction == Direction.OUTBOUND.value)
        .limit(1)
        .with_for_update(of=conversation_messages)
    ).first()
    if row is None:
        return None
    return Mail(
        kind=MailKind.CONVERSATION,
        organization_id=row.organization_id,
        lead_id=row.lead_id,
        status=row.status,
        provider_message_id=row.provider_message_id,
        delivery_status=row.delivery_status,
        message_id=row.id,
    )


def _bulk_mail(conn: Connection, condition: Any) -> Mail | None:
    row = conn.execute(
        select(
            bulk_email_recipients.c.job_id,
            bulk_email_recipients.c.lead_id,
            bulk_email_recipients.c.organization_id,
            bulk_email_recipients.c.status,
            bulk_email_recipients.c.provider_message_id,
            bulk_email_recipients.c.delivery_status,
        )
        .where(condition)
        .limit(1)
        .with_for_update()
    ).first()
    if row is None:
        return None
    return Mail(
        kind=MailKind.BULK,
        organization_id=row.organization_id,
        lead_id=row.lead_id,
        status=row.status,
        provider_message_id=row.provider_message_id,
        delivery_status=row.delivery_status,
        job_id=row.job_id,
    )


def _claim(conn: Connection, event: SesEvent, organization_id: uuid.UUID) -> bool:
    """True the first time this event (SES message id, type, its own timestamp) is seen."""
    claimed = conn.execute(
        pg_insert(ses_delivery_events)
        .values(
            ses_message_id=event.ses_message_id,
            event_type=event.event_type.value,
            occurred_at=event.occurred_at,
            organization_id=organization_id,
        )
        .on_conflict_do_nothing(index_elements=["ses_message_id", "event_type", "occurred_at"])
        .returning(ses_delivery_events.c.ses_message_id)
    ).first()
    return claimed is not None


# -- the mail's own record --------------------------------------------------------------------------------


def _record_on_mail(conn: Connection, mail: Mail, event: SesEvent) -> None:
    values: dict[str, Any] = {}
    unconfirmed = _CONVERSATION_UNCONFIRMED if mail.kind is MailKind.CONVERSATION else _BULK_UNCONFIRMED
    if mail.status in unconfirmed:
        values.update(status="sent", provider_message_id=event.ses_message_id, sent_at=event.sent_at, error=None)
        logger.info("SES event confirms a mail we had not", extra={**_ids(event), "wasStatus": mail.status})
    elif mail.provider_message_id is None:
        values["provider_message_id"] = event.ses_message_id
    status = next_delivery_status(mail.delivery_status, event.status)
    if status is not None:
        values.update(
            delivery_status=status.value, delivery_status_at=event.occurred_at, delivery_detail=event.detail()
        )
    if not values:
        return
    if mail.kind is MailKind.CONVERSATION:
        conn.execute(
            update(conversation_messages).where(conversation_messages.c.id == mail.message_id).values(**values)
        )
    else:
        conn.execute(
            update(bulk_email_recipients)
            .where(bulk_email_recipients.c.job_id == mail.job_id, bulk_email_recipients.c.lead_id == mail.lead_id)
            .values(**values)
        )


# -- suppression ------------------------------------------------------------------------------------------


def suppress_address(conn: Connection, mail: Mail, event: SesEvent) -> int:
    """Revokes email, with the event's basis, for the organization's leads at the mailed address (the
    lead's own address may have changed since: only who has the address now is suppressed). A lead already
    suppressed on the same basis gets no second entry. How many leads it revoked."""
    basis, source = (
        (consent.SuppressionBasis.BOUNCE, BOUNCE_SOURCE)
        if event.event_type is SesEventType.BOUNCE
        else (consent.SuppressionBasis.COMPLAINT, COMPLAINT_SOURCE)
    )
    addresses = {address.lower() for address in event.recipients}
    if not addresses:
        return 0
    email_state = lead_consents.alias("email_state")
    found = conn.execute(
        select(leads.c.id)
        .select_from(
            leads.outerjoin(
                email_state,
                and_(
                    email_state.c.lead_id == leads.c.id,
                    email_state.c.channel == consent.ConsentChannel.EMAIL.value,
                ),
            )
        )
        .where(
            email_key_in(mail.organization_id, sorted(addresses)),
            # already revoked for this very reason: nothing new to say
            ~and_(email_state.c.status == consent.REVOKED, email_state.c.legal_basis == basis.value).is_(True),
        )
        .order_by(leads.c.id)
        .limit(MAX_SUPPRESSED_LEADS)
    ).scalars().all()
    note = "/".join(
        part
        for part in (event.bounce_type, event.bounce_sub_type, event.complaint_feedback_type)
        if part is not None
    ) or None
    change = consent.ConsentChange(
        channel=consent.ConsentChannel.EMAIL,
        status=consent.ConsentStatus.REVOKED,
        source=source,
        legal_basis=basis,
        note=note,
    )
    for lead_id in found:
        consent.record_changes(conn, mail.organization_id, lead_id, [change])
    record_activities(
        conn,
        [
            {
                "organization_id": mail.organization_id,
                "lead_id": lead_id,
                "type": consent.CONSENT_CHANGED,
                "payload": {"channel": "email", "status": consent.REVOKED, "legalBasis": basis.value, "source": source},
            }
            for lead_id in found
        ],
    )
    if found:
        logger.info("email suppressed", extra={**_ids(event), "basis": basis.value, "leads": len(found)})
    return len(found)


# -- the bulk email's bounce rate ----------------------------------------------------------------------------


def pause_if_bouncing(conn: Connection, job_id: uuid.UUID) -> bool:
    """Pauses a running job whose Permanent bounce rate passed the threshold; True when it did."""
    job = conn.execute(
        select(bulk_email_jobs.c.status).where(bulk_email_jobs.c.id == job_id).with_for_update()
    ).first()
    if job is None or job.status not in PAUSABLE:
        return False
    permanent = and_(
        bulk_email_recipients.c.delivery_status == "bounced",
        bulk_email_recipients.c.delivery_detail["bounceType"].astext == "Permanent",
    )
    sent, bounced = conn.execute(
        select(
            func.count().filter(bulk_email_recipients.c.status == "sent"),
            func.count().filter(permanent),
        ).where(bulk_email_recipients.c.job_id == job_id)
    ).one()
    threshold, min_sent = max_bounce_rate(), bounce_rate_min_sent()
    if not bounce_rate_exceeded(sent, bounced, threshold=threshold, min_sent=min_sent):
        return False
    detail = {"sent": sent, "bounced": bounced, "bounceRate": round(bounced / sent, 4), "threshold": threshold,
              "minSent": min_sent}  # fmt: skip
    conn.execute(
        update(bulk_email_jobs)
        .where(bulk_email_jobs.c.id == job_id)
        .values(status="paused", paused_at=sql_now(), pause_reason=BOUNCE_RATE, pause_detail=detail,
                updated_at=sql_now())  # fmt: skip
    )
    logger.warning("bulk email paused: bounce rate", extra={"jobId": str(job_id), **detail})
    return True
