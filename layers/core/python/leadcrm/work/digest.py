"""The scheduled morning digest (job `daily_digest`): each staff member's urgent counts by mail (SES).

Every run (every 15 minutes) looks at every organization with lead management; an organization whose local
time is in its morning (`leadcrm.work.rules.digest.in_morning_window`) has its staff mailed once that local day:

1. One transaction per organization counts each active staff member's (owner/admin/coach with an email)
   urgent items with the urgent prompt's own count (`urgent_prompt.urgent_counts`: their open tasks overdue
   and due today, and for owner/admin the leads needing attention), then claims a
   `staff_digest_deliveries` row (INSERT … ON CONFLICT DO NOTHING RETURNING) for those with something to
   say, and commits. Only the rows this run inserted get mail, so a second run the same local day sends
   nothing more, even when two runs overlap.
2. The mails are sent after that commit, one SES call each, and the outcome is written to the row: `sent`
   with the SES message id, or `failed` with the error (spec "Notification fails": the failure is kept and
   surfaced, in the row, a log line with ids and the error code, and the job's `failed` count).

Delivery is at most once per day, on purpose: a failed or interrupted send is not retried that day (the
SES client already retries throttling and transient errors itself). The digest is a nudge; the in-app
urgent prompt shows the same counts, and two copies of a mail are worse than none.

Nothing is sent when all counts are 0, and nothing names a lead: a mailbox is not the CRM.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from sqlalchemy import Connection, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert

from leadcrm.directory.rules import LEAD_MANAGEMENT, STAFF_ROLES, MembershipStatus, enabled_features
from leadcrm.directory.tables import memberships, organizations, users
from leadcrm.platform import clock
from leadcrm.platform.adapters import ses
from leadcrm.platform.adapters.aws import error_code
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.ids import uuid7
from leadcrm.work.rules.attention import UrgentCounts, counts_leads
from leadcrm.work.rules.digest import compose_digest, counts_payload, in_morning_window, local_now, worth_sending
from leadcrm.work.tables import staff_digest_deliveries
from leadcrm.work.urgent_prompt import urgent_counts

logger = logging.getLogger(__name__)

JOB_NAME = "daily_digest"
# Mails one run sends at most (well inside the function's 30 s); organizations left over are mailed by the
# next runs of the same morning.
MAX_MAILS_PER_RUN = 200
MAX_ERROR_LENGTH = 500

Sender = Callable[[str, str, str], str]  # (to, subject, text) -> provider message id


@dataclass(frozen=True)
class Claimed:
    delivery_id: uuid.UUID
    user_id: uuid.UUID
    email: str
    counts: UrgentCounts
    includes_leads: bool


def run_daily_digest(now: datetime | None = None, *, send: Sender | None = None) -> dict[str, int]:
    """The scheduled job; `now` and `send` are for tests. Returns what it did (counts only)."""
    now = now or clock.now()
    send = send or ses.send_email
    stats = {"organizations": 0, "sent": 0, "failed": 0}
    budget = MAX_MAILS_PER_RUN
    for organization_id, local_date in _organizations_in_their_morning(now):
        if budget <= 0:
            break
        stats["organizations"] += 1
        organization_name, claimed = _claim(organization_id, local_date, now, budget)
        budget -= len(claimed)
        outcomes = [_send_one(send, organization_id, organization_name, local_date, claim) for claim in claimed]
        _record_outcomes(outcomes)
        stats["sent"] += sum(1 for outcome in outcomes if outcome["status"] == "sent")
        stats["failed"] += sum(1 for outcome in outcomes if outcome["status"] == "failed")
    return stats


def _organizations_in_their_morning(now: datetime) -> list[tuple[uuid.UUID, date]]:
    """Organizations with lead management whose wall clock is in the morning window, with their local date."""
    with UnitOfWork() as uow:
        rows = uow.connection.execute(
            select(organizations.c.id, organizations.c.timezone, organizations.c.features).order_by(organizations.c.id)
        ).all()
    found = []
    for row in rows:
        if LEAD_MANAGEMENT not in enabled_features(row.features):
            continue
        local = local_now(now, row.timezone)
        if in_morning_window(local):
            found.append((row.id, local.date()))
    return found


def _claim(organization_id: uuid.UUID, local_date: date, now: datetime, budget: int) -> tuple[str, list[Claimed]]:
    """Counts and claims in one committed transaction; the claims this run won (at most `budget`)."""
    with UnitOfWork() as uow:
        conn = uow.connection
        organization_name = conn.execute(
            select(organizations.c.name).where(organizations.c.id == organization_id)
        ).scalar_one()
        candidates: list[tuple[Any, UrgentCounts, bool]] = []
        for member in _staff_not_yet_mailed(conn, organization_id, local_date):
            if len(candidates) >= budget:
                break
            counts = urgent_counts(conn, organization_id, member.user_id, member.role, now=now)
            if worth_sending(counts):
                candidates.append((member, counts, counts_leads(member.role)))
        if not candidates:
            return organization_name, []
        rows = [
            {
                "id": uuid7(),
                "organization_id": organization_id,
                "user_id": member.user_id,
                "local_date": local_date,
                "status": "sending",
                "counts": counts_payload(counts, includes_leads=includes_leads),
            }
            for member, counts, includes_leads in candidates
        ]
        won = set(
            conn.execute(
                pg_insert(staff_digest_deliveries)
                .values(rows)
                .on_conflict_do_nothing(index_elements=["organization_id", "user_id", "local_date"])
                .returning(staff_digest_deliveries.c.id)
            ).scalars()
        )
        uow.commit()
    return organization_name, [
        Claimed(
            delivery_id=row["id"],
            user_id=member.user_id,
            email=member.email,
            counts=counts,
            includes_leads=includes_leads,
        )
        for row, (member, counts, includes_leads) in zip(rows, candidates, strict=True)
        if row["id"] in won
    ]


def _staff_not_yet_mailed(conn: Connection, organization_id: uuid.UUID, local_date: date) -> list[Any]:
    """Active staff (owner/admin/coach) with an email and no digest for the organization-local day yet."""
    already_mailed = (
        select(staff_digest_deliveries.c.id)
        .where(
            staff_digest_deliveries.c.organization_id == organization_id,
            staff_digest_deliveries.c.user_id == memberships.c.user_id,
            staff_digest_deliveries.c.local_date == local_date,
        )
        .exists()
    )
    return list(
        conn.execute(
            select(memberships.c.user_id, memberships.c.role, users.c.email)
            .select_from(memberships.join(users, users.c.id == memberships.c.user_id))
            .where(
                memberships.c.organization_id == organization_id,
                memberships.c.role.in_([role.value for role in STAFF_ROLES]),
                memberships.c.status == MembershipStatus.ACTIVE.value,
                memberships.c.deleted_at.is_(None),
                users.c.email.is_not(None),
                users.c.email != "",
                ~already_mailed,
            )
            .order_by(memberships.c.user_id)
        ).all()
    )


def _send_one(
    send: Sender, organization_id: uuid.UUID, organization_name: str, local_date: date, claim: Claimed
) -> dict[str, Any]:
    mail = compose_digest(claim.counts, organization_name, local_date, includes_leads=claim.includes_leads)
    try:
        message_id = send(claim.email, mail.subject, mail.text)
    except Exception as error:  # recorded and surfaced, never retried the same day (see the module doc)
        code = error_code(error)
        logger.warning(
            "digest not sent",
            extra={"organizationId": str(organization_id), "userId": str(claim.user_id), "errorCode": code},
        )
        return {"id": claim.delivery_id, "status": "failed", "error": f"{code}: {error}"[:MAX_ERROR_LENGTH]}
    logger.info("digest sent", extra={"organizationId": str(organization_id), "userId": str(claim.user_id)})
    return {"id": claim.delivery_id, "status": "sent", "provider_message_id": message_id}


def _record_outcomes(outcomes: list[dict[str, Any]]) -> None:
    if not outcomes:
        return
    with UnitOfWork() as uow:
        for outcome in outcomes:
            sent = outcome["status"] == "sent"
            uow.connection.execute(
                update(staff_digest_deliveries)
                .where(staff_digest_deliveries.c.id == outcome["id"])
                .values(
                    status=outcome["status"],
                    provider_message_id=outcome.get("provider_message_id"),
                    error=outcome.get("error"),
                    sent_at=sql_now() if sent else None,
                )
            )
        uow.commit()
