"""The satisfaction survey a closed ticket sends: a public link with a random token, answered once.

The token exists only in the mail (made when the sweep sends it); the table keeps its SHA-256 digest. An
unknown or not-yet-sent token answers 404 like any other; a second answer is 409 SURVEY_ALREADY_ANSWERED and
changes nothing.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, select, update

from leadcrm.directory.tables import organizations
from leadcrm.platform import clock
from leadcrm.platform.errors import Conflict, NotFound
from leadcrm.tickets.sweep import token_digest
from leadcrm.tickets.tables import ticket_surveys, tickets
from leadcrm.tickets.tickets import record_events

MAX_TOKEN_LENGTH = 200


def _not_found() -> NotFound:
    return NotFound("Survey not found.", code="SURVEY_NOT_FOUND")


def survey_for_token(conn: Connection, token: str) -> dict[str, Any]:
    """What the survey page shows: the organization, the ticket number and subject, whether it was answered."""
    if not token or len(token) > MAX_TOKEN_LENGTH:
        raise _not_found()
    row = (
        conn.execute(
            select(
                ticket_surveys.c.id,
                ticket_surveys.c.ticket_id,
                ticket_surveys.c.answered_at,
                ticket_surveys.c.rating,
                tickets.c.number,
                tickets.c.subject,
                organizations.c.name.label("organization_name"),
            )
            .select_from(
                ticket_surveys.join(tickets, tickets.c.id == ticket_surveys.c.ticket_id).join(
                    organizations, organizations.c.id == ticket_surveys.c.organization_id
                )
            )
            .where(ticket_surveys.c.token_digest == token_digest(token))
        )
        .mappings()
        .first()
    )
    if row is None:
        raise _not_found()
    return dict(row)


def answer_survey(conn: Connection, token: str, rating: int, comment: str | None) -> dict[str, Any]:
    survey = survey_for_token(conn, token)
    answered = conn.execute(
        update(ticket_surveys)
        .where(ticket_surveys.c.id == survey["id"], ticket_surveys.c.answered_at.is_(None))
        .values(rating=rating, comment=comment, answered_at=clock.now())
        .returning(ticket_surveys.c.id)
    ).first()
    if answered is None:  # answered before, or by a concurrent request that committed first
        raise Conflict("This survey was answered already.", code="SURVEY_ALREADY_ANSWERED")
    organization_id = conn.execute(
        select(tickets.c.organization_id).where(tickets.c.id == survey["ticket_id"])
    ).scalar_one()
    record_events(
        conn,
        [
            {
                "organization_id": organization_id,
                "ticket_id": survey["ticket_id"],
                "type": "survey_answered",
                "payload": {"rating": rating},
            }
        ],
    )
    return survey_for_token(conn, token)
