"""Bulk email (spec "Bulk email is broadcast-on-send, thread-on-reply", "Bulk email stage scoping").

A bulk send writes no conversation and moves no lead: each recipient gets one mail whose Reply-To is the
lead-keyed signed address (`contact+ol-<lead id>.<sig>@…`), so a thread exists only once the lead
replies (`conversations.inbound_email`), and a `bulk_email_sent` entry on its timeline.

Creating a job (`create_job`, one transaction, set-based whatever the audience size):

- the audience is the leads matching the request — ids, a pipeline with stageIds on the effective stage
  (a secondary placement's stage, else the primary stage), tags to include (any) and exclude (any), and
  every other list filter — resolved by `leads.queries.matching_lead_ids`, the list's own conditions;
- each lead becomes a recipient row: `pending`, or `skipped` with the reason (`no_consent`: email
  revoked; `no_email`), reported back with the counts.

Sending (`run_bulk_email`, the `bulk_email` scheduled job, every minute): claims pending recipients in
chunks (FOR UPDATE SKIP LOCKED, status `sending`, committed), sends them paced to `BULK_EMAIL_SEND_RATE`
mails per second (keep it at or under the account's SES maximum send rate) for at most `RUN_SECONDS`, then
records each outcome and the timeline entries. Consent is checked again at claim time, so an unsubscribe
(or a bounce or complaint suppression) between creation and sending is honoured. Delivery is at most once:
a claim whose run died (older than `CLAIM_LEASE`) may have been mailed, so it becomes `unknown`
(`interrupted`), never re-sent; an SES event naming it later proves it was (conversations.delivery). A job
is `done` when nothing is pending or sending; a job `paused` by its bounce rate (conversations.delivery)
sends nothing more (what one run had already claimed, at most a chunk, still goes out).

Every mail carries an unsubscribe link and `List-Unsubscribe` / `List-Unsubscribe-Post: One-Click`
(RFC 8058) pointing at the public signed route `…/unsubscribe/<token>`, which revokes email consent.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import Connection, and_, case, func, insert, literal, select, update

from leadcrm.conversations import consent
from leadcrm.conversations.rules.delivery import MAIL_TAG, MailRef
from leadcrm.conversations.rules.messages import language_of
from leadcrm.conversations.rules.reply_addresses import AddressKind, AddressTarget, reply_address, unsubscribe_token
from leadcrm.conversations.tables import bulk_email_jobs, bulk_email_recipients, lead_consents
from leadcrm.directory.rules import Actor
from leadcrm.directory.tables import organizations
from leadcrm.leads.activity import record_activities
from leadcrm.leads.queries import matching_lead_ids
from leadcrm.leads.rules.listing import LeadListFilters
from leadcrm.leads.tables import leads
from leadcrm.platform import mail_keys
from leadcrm.platform.adapters import ses
from leadcrm.platform.adapters.aws import error_code
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import BadRequest, NotFound
from leadcrm.platform.failures import refused_for_now
from leadcrm.platform.ids import uuid7

logger = logging.getLogger(__name__)
DEFERRED = "deferred"  # an outcome only: SES refused the send for now, the recipient is pending again

JOB_NAME = "bulk_email"
MAX_AUDIENCE = 50_000
REPORTED_SKIPS = 100
CHUNK_SIZE = 50
RUN_SECONDS = 20.0  # inside task_lifecycle's 30 s timeout
DEFAULT_SEND_RATE = 10.0
CLAIM_LEASE = timedelta(minutes=15)
MAX_ERROR_LENGTH = 500
BULK_EMAIL_SENT = "bulk_email_sent"
UNSUBSCRIBE_SOURCE = "unsubscribe_link"
RUNNING = ("queued", "sending")  # job statuses the sender works on (not paused, not done)

UNSUBSCRIBE_FOOTERS = {
    "en": "To stop receiving these emails: {url}",
    "he": "להסרה מרשימת התפוצה: {url}",
}

Sender = Callable[[ses.OutboundMail], str]


def send_rate() -> float:
    """Mails per second (`BULK_EMAIL_SEND_RATE`), at most the account's SES maximum send rate."""
    try:
        rate = float(os.environ.get("BULK_EMAIL_SEND_RATE") or DEFAULT_SEND_RATE)
    except ValueError:
        rate = DEFAULT_SEND_RATE
    return max(rate, 0.1)


# -- creating a job -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Audience:
    filters: LeadListFilters
    lead_ids: tuple[uuid.UUID, ...] = ()
    exclude_tag_ids: tuple[uuid.UUID, ...] = ()
    described: dict[str, Any] | None = None  # the request, ids and filters only, kept on the job


def create_job(conn: Connection, actor: Actor, subject: str, body: str, audience: Audience) -> dict[str, Any]:
    """The job and its recipients (pending or skipped with a reason); the job's view with the skips."""
    job_id = uuid7()
    conn.execute(
        insert(bulk_email_jobs).values(
            id=job_id,
            organization_id=actor.organization_id,
            created_by_user_id=actor.user_id,
            subject=subject,
            body=body,
            audience=audience.described or {},
        )
    )
    audience_ids = matching_lead_ids(
        actor, audience.filters, lead_ids=audience.lead_ids, exclude_tag_ids=audience.exclude_tag_ids
    ).subquery("audience")
    email_consent = lead_consents.alias("email_consent")
    no_email = func.coalesce(func.btrim(leads.c.email), "") == ""
    revoked = email_consent.c.status == consent.REVOKED
    skip_reason = case((revoked, literal("no_consent")), (no_email, literal("no_email")), else_=None)
    rows = (
        select(
            literal(job_id).label("job_id"),
            leads.c.id.label("lead_id"),
            leads.c.organization_id,
            case((skip_reason.is_(None), literal("pending")), else_=literal("skipped")).label("status"),
            skip_reason.label("skip_reason"),
        )
        .select_from(
            audience_ids.join(leads, leads.c.id == audience_ids.c.id).outerjoin(
                email_consent,
                and_(
                    email_consent.c.lead_id == leads.c.id,
                    email_consent.c.channel == consent.ConsentChannel.EMAIL.value,
                ),
            )
        )
        .where(leads.c.organization_id == actor.organization_id)
    )
    inserted = conn.execute(
        insert(bulk_email_recipients).from_select(
            ["job_id", "lead_id", "organization_id", "status", "skip_reason"], rows
        )
    ).rowcount
    if inserted > MAX_AUDIENCE:  # the transaction rolls back: nothing of the job is kept
        raise BadRequest(f"An audience has at most {MAX_AUDIENCE} leads.", code="AUDIENCE_TOO_LARGE")
    if not inserted:
        raise BadRequest("No lead matches this audience.", code="AUDIENCE_EMPTY")
    return job_view(conn, actor.organization_id, job_id)


def job_view(conn: Connection, organization_id: uuid.UUID, job_id: uuid.UUID) -> dict[str, Any]:
    """The job with its progress: counts per status and skip reason, and the first skipped leads."""
    job = (
        conn.execute(
            select(
                bulk_email_jobs.c.id,
                bulk_email_jobs.c.organization_id,
                bulk_email_jobs.c.subject,
                bulk_email_jobs.c.status,
                bulk_email_jobs.c.audience,
                bulk_email_jobs.c.created_at,
                bulk_email_jobs.c.completed_at,
                bulk_email_jobs.c.paused_at,
                bulk_email_jobs.c.pause_reason,
                bulk_email_jobs.c.pause_detail,
            ).where(bulk_email_jobs.c.organization_id == organization_id, bulk_email_jobs.c.id == job_id)
        )
        .mappings()
        .first()
    )
    if job is None:
        raise NotFound("Bulk email not found.", code="BULK_EMAIL_NOT_FOUND")
    counts = {"pending": 0, "sending": 0, "sent": 0, "failed": 0, "unknown": 0, "skipped": 0}
    delivery = {"delayed": 0, "delivered": 0, "rejected": 0, "bounced": 0, "complained": 0}
    skipped_by_reason: dict[str, int] = {}
    for row in conn.execute(
        select(
            bulk_email_recipients.c.status,
            bulk_email_recipients.c.skip_reason,
            bulk_email_recipients.c.delivery_status,
            func.count(),
        )
        .where(bulk_email_recipients.c.job_id == job_id)
        .group_by(
            bulk_email_recipients.c.status, bulk_email_recipients.c.skip_reason, bulk_email_recipients.c.delivery_status
        )
    ):
        counts[row[0]] += row[3]
        if row[1]:
            skipped_by_reason[row[1]] = skipped_by_reason.get(row[1], 0) + row[3]
        if row[2]:
            delivery[row[2]] += row[3]
    skipped = [
        {"lead_id": r.lead_id, "reason": r.skip_reason}
        for r in conn.execute(
            select(bulk_email_recipients.c.lead_id, bulk_email_recipients.c.skip_reason)
            .where(bulk_email_recipients.c.job_id == job_id, bulk_email_recipients.c.status == "skipped")
            .order_by(bulk_email_recipients.c.lead_id)
            .limit(REPORTED_SKIPS)
        )
    ]
    return {
        **dict(job),
        "total": sum(counts.values()),
        **counts,
        "skipped_no_consent": skipped_by_reason.get("no_consent", 0),
        "skipped_no_email": skipped_by_reason.get("no_email", 0),
        "skipped_leads": skipped,
        "delivery": delivery,
    }


# -- sending ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Claimed:
    job_id: uuid.UUID
    organization_id: uuid.UUID
    lead_id: uuid.UUID
    email: str
    locale: str | None
    subject: str
    body: str
    organization_name: str
    organization_locale: str | None


def run_bulk_email(
    *,
    send: Sender | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    run_seconds: float = RUN_SECONDS,
) -> dict[str, int]:
    """The scheduled job (see the module docstring); counts only."""
    send = send or ses.send_mime
    rate = send_rate()
    interval = 1.0 / rate
    started = clock()
    stats = {"sent": 0, "failed": 0, "deferred": 0, "skipped": 0, "interrupted": _expire_stale_claims()}
    deadline = started + run_seconds
    next_send = started
    while True:
        start_at = max(next_send, clock())
        if start_at >= deadline:
            break
        # How many sends can still start before the deadline at this rate.
        room = int((deadline - start_at) * rate - 1e-9) + 1
        claimed, skipped = _claim(min(CHUNK_SIZE, room))
        stats["skipped"] += skipped
        if not claimed:
            if not skipped:
                break
            continue
        outcomes = []
        for claim in claimed:
            wait = next_send - clock()
            if wait > 0:
                sleep(wait)
            next_send = max(next_send + interval, clock())
            outcomes.append(_send_one(send, claim))
        _record(claimed, outcomes)
        stats["sent"] += sum(1 for o in outcomes if o["status"] == "sent")
        stats["failed"] += sum(1 for o in outcomes if o["status"] == "failed")
        stats["deferred"] += sum(1 for o in outcomes if o["status"] == DEFERRED)
        if any(o["status"] == DEFERRED for o in outcomes):
            break  # SES is refusing for now: the next run tries again
    _finish_jobs()
    return stats


def _expire_stale_claims() -> int:
    """Claims of a run that died mid-send: unknown, `interrupted` (at most once: the mail may have left)."""
    with UnitOfWork() as uow:
        expired = uow.connection.execute(
            update(bulk_email_recipients)
            .where(
                bulk_email_recipients.c.status == "sending",
                bulk_email_recipients.c.claimed_at < sql_now() - CLAIM_LEASE,
            )
            .values(status="unknown", error="interrupted")
            .returning(bulk_email_recipients.c.lead_id)
        ).all()
        uow.commit()
    return len(expired)


def _claim(limit: int) -> tuple[list[Claimed], int]:
    """Up to `limit` pending recipients of the oldest unfinished jobs, marked sending and committed; leads
    whose email was revoked (or removed) since the job was made are skipped here. (claimed, skipped)."""
    with UnitOfWork() as uow:
        conn = uow.connection
        picked = conn.execute(
            select(bulk_email_recipients.c.job_id, bulk_email_recipients.c.lead_id)
            .select_from(
                bulk_email_recipients.join(bulk_email_jobs, bulk_email_jobs.c.id == bulk_email_recipients.c.job_id)
            )
            .where(bulk_email_jobs.c.status.in_(RUNNING), bulk_email_recipients.c.status == "pending")
            .order_by(bulk_email_jobs.c.created_at, bulk_email_recipients.c.job_id, bulk_email_recipients.c.lead_id)
            .limit(limit)
            .with_for_update(of=bulk_email_recipients, skip_locked=True)
        ).all()
        if not picked:
            return [], 0
        keys = [(p.job_id, p.lead_id) for p in picked]
        email_consent = lead_consents.alias("email_consent")
        rows = conn.execute(
            select(
                bulk_email_recipients.c.job_id,
                bulk_email_recipients.c.lead_id,
                leads.c.email,
                leads.c.locale,
                email_consent.c.status.label("consent"),
                bulk_email_jobs.c.organization_id,
                bulk_email_jobs.c.subject,
                bulk_email_jobs.c.body,
                organizations.c.name.label("organization_name"),
                organizations.c.locale.label("organization_locale"),
            )
            .select_from(
                bulk_email_recipients.join(leads, leads.c.id == bulk_email_recipients.c.lead_id)
                .join(bulk_email_jobs, bulk_email_jobs.c.id == bulk_email_recipients.c.job_id)
                .join(organizations, organizations.c.id == bulk_email_jobs.c.organization_id)
                .outerjoin(
                    email_consent,
                    and_(email_consent.c.lead_id == leads.c.id, email_consent.c.channel == "email"),
                )
            )
            .where(func.row(bulk_email_recipients.c.job_id, bulk_email_recipients.c.lead_id).in_(keys))
        ).all()
        claimed: list[Claimed] = []
        skipped: list[tuple[uuid.UUID, uuid.UUID, str]] = []
        for row in rows:
            if row.consent == consent.REVOKED:
                skipped.append((row.job_id, row.lead_id, "no_consent"))
            elif not (row.email or "").strip():
                skipped.append((row.job_id, row.lead_id, "no_email"))
            else:
                claimed.append(
                    Claimed(
                        job_id=row.job_id,
                        organization_id=row.organization_id,
                        lead_id=row.lead_id,
                        email=row.email.strip(),
                        locale=row.locale,
                        subject=row.subject,
                        body=row.body,
                        organization_name=row.organization_name,
                        organization_locale=row.organization_locale,
                    )
                )
        for job_id, lead_id, reason in skipped:
            conn.execute(
                update(bulk_email_recipients)
                .where(bulk_email_recipients.c.job_id == job_id, bulk_email_recipients.c.lead_id == lead_id)
                .values(status="skipped", skip_reason=reason)
            )
        if claimed:
            conn.execute(
                update(bulk_email_recipients)
                .where(
                    func.row(bulk_email_recipients.c.job_id, bulk_email_recipients.c.lead_id).in_(
                        [(c.job_id, c.lead_id) for c in claimed]
                    )
                )  # fmt: skip
                .values(status="sending", claimed_at=sql_now())
            )
            conn.execute(
                update(bulk_email_jobs)
                .where(bulk_email_jobs.c.id.in_({c.job_id for c in claimed}), bulk_email_jobs.c.status == "queued")
                .values(status="sending", updated_at=sql_now())
            )
        uow.commit()
    return claimed, len(skipped)


def compose(claim: Claimed) -> ses.OutboundMail:
    key, domain = mail_keys.signing_key(), mail_keys.inbound_domain()
    url = f"{mail_keys.public_api_url()}/unsubscribe/{unsubscribe_token(key, claim.lead_id)}"
    footer = UNSUBSCRIBE_FOOTERS[language_of(claim.locale, claim.organization_locale)].format(url=url)
    return ses.OutboundMail(
        to_address=claim.email,
        subject=claim.subject,
        text=f"{claim.body}\n\n--\n{footer}\n",
        reply_to=reply_address(key, AddressTarget(AddressKind.LEAD, claim.lead_id), domain),
        sender_name=claim.organization_name,
        headers={"List-Unsubscribe": f"<{url}>", "List-Unsubscribe-Post": "List-Unsubscribe=One-Click"},
        tags={MAIL_TAG: MailRef.bulk(claim.job_id, claim.lead_id).tag_value()},
    )


def _send_one(send: Sender, claim: Claimed) -> dict[str, Any]:
    try:
        provider_id = send(compose(claim))
    except Exception as error:
        code = error_code(error)
        logger.warning("bulk email not sent", extra={"jobId": str(claim.job_id), "leadId": str(claim.lead_id),
                                                      "errorCode": code})  # fmt: skip
        # SES refused it for now (throttled, unavailable): it did not take the mail, so the recipient goes
        # back to pending for a later run rather than failing for good.
        status = DEFERRED if refused_for_now(error) else "failed"
        return {"status": status, "error": f"{code}: {error}"[:MAX_ERROR_LENGTH]}
    return {"status": "sent", "provider_message_id": provider_id}


def _record(claimed: list[Claimed], outcomes: list[dict[str, Any]]) -> None:
    with UnitOfWork() as uow:
        conn = uow.connection
        for claim, outcome in zip(claimed, outcomes, strict=True):
            where = [bulk_email_recipients.c.job_id == claim.job_id, bulk_email_recipients.c.lead_id == claim.lead_id]
            if outcome["status"] == DEFERRED:
                conn.execute(
                    update(bulk_email_recipients)
                    .where(*where, bulk_email_recipients.c.status == "sending")
                    .values(status="pending", claimed_at=None, error=outcome["error"])
                )
                continue
            if outcome["status"] == "failed":
                # An SES event may already have proven the mail was taken (the call timed out after SES
                # accepted it): its word stands over our failed call.
                where.append(bulk_email_recipients.c.provider_message_id.is_(None))
            conn.execute(
                update(bulk_email_recipients)
                .where(*where)
                .values(
                    status=outcome["status"],
                    provider_message_id=outcome.get("provider_message_id"),
                    error=outcome.get("error"),
                    sent_at=func.coalesce(bulk_email_recipients.c.sent_at, sql_now())
                    if outcome["status"] == "sent"
                    else None,
                )
            )
        record_activities(
            conn,
            [
                {
                    "organization_id": claim.organization_id,
                    "lead_id": claim.lead_id,
                    "type": BULK_EMAIL_SENT,
                    "payload": {"jobId": str(claim.job_id), "subject": claim.subject, "status": outcome["status"]},
                }
                for claim, outcome in zip(claimed, outcomes, strict=True)
                if outcome["status"] != DEFERRED
            ],
        )
        uow.commit()


def _finish_jobs() -> None:
    with UnitOfWork() as uow:
        still_open = (
            select(bulk_email_recipients.c.lead_id)
            .where(
                bulk_email_recipients.c.job_id == bulk_email_jobs.c.id,
                bulk_email_recipients.c.status.in_(("pending", "sending")),
            )
            .exists()
        )
        uow.connection.execute(
            update(bulk_email_jobs)
            .where(bulk_email_jobs.c.status.in_(RUNNING), ~still_open)
            .values(status="done", completed_at=sql_now(), updated_at=sql_now())
        )
        uow.commit()


# -- unsubscribe --------------------------------------------------------------------------------------------


def unsubscribe(token_lead_id: uuid.UUID) -> bool:
    """Revokes the lead's email consent (the public route verified the token); False when the lead is gone.
    Clicking twice records one revocation."""
    with UnitOfWork() as uow:
        conn = uow.connection
        organization_id = conn.execute(
            select(leads.c.organization_id).where(leads.c.id == token_lead_id)
        ).scalar_one_or_none()
        if organization_id is None:
            return False
        consent.revoke_if_allowed(
            conn, organization_id, token_lead_id, consent.ConsentChannel.EMAIL, source=UNSUBSCRIBE_SOURCE
        )
        uow.commit()
    return True
