"""Bulk email to an audience of leads, run as a job (issue 7), and its public unsubscribe route.

- `POST /organizations/{orgId}/bulk-emails` (staff): resolves the audience into recipients now (leads
  without email consent or address are skipped and reported) and answers 202 with the job; the
  `bulk_email` scheduled job sends within the SES rate. `GET …/bulk-emails/{jobId}` shows its progress,
  what SES said (delivery counts) and a pause; `GET …/bulk-emails/{jobId}/recipients` each recipient.
- `GET /unsubscribe/{token}` (public): a page with a confirm button (a GET never unsubscribes: mail
  scanners follow links); `POST /unsubscribe/{token}` (public; the List-Unsubscribe-Post one-click target)
  revokes the lead's email consent. The token is signed: a forged or altered one changes nothing.
"""

from __future__ import annotations

from enum import StrEnum
from html import escape
from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from api.conversations.schemas_conversations import BulkAudience, BulkEmailBody, BulkEmailJob, BulkRecipient
from api.http import caller, entity_id, json_response
from api.operations import Operations
from api.params import DEFAULT_PAGE_SIZE, CursorParam, PageSize, assignee_of
from api.schemas import Envelope, ListEnvelope
from leadcrm.conversations import bulk_email, queries
from leadcrm.conversations.rules.delivery import DeliveryStatus
from leadcrm.conversations.rules.reply_addresses import parse_unsubscribe_token
from leadcrm.directory.access import require_staff
from leadcrm.directory.actions import WorkspaceAction, gate
from leadcrm.directory.rules import Actor
from leadcrm.leads.rules.listing import LeadListFilters, parse_search, unique
from leadcrm.platform import mail_keys
from leadcrm.platform.db.uow import UnitOfWork

router = APIGatewayHttpRouter()
ops = Operations(router, "Conversations")

HTML = "text/html; charset=utf-8"


def audience_of(body: BulkAudience, actor: Actor) -> bulk_email.Audience:
    stage_ids = unique([*(body.stage_ids or []), *([body.stage_id] if body.stage_id else [])])
    filters = LeadListFilters(
        statuses=tuple(s.value for s in unique(body.statuses)),
        pipeline_id=body.pipeline_id,
        stage_ids=stage_ids,
        tag_ids=unique(body.include_tag_ids),
        campaign_id=body.campaign_id,
        archived=body.archived,
        assignee=assignee_of(body.assignee, actor),
        is_test=body.is_test,
        search=parse_search(body.search),
    )
    return bulk_email.Audience(
        filters=filters,
        lead_ids=unique(body.lead_ids),
        exclude_tag_ids=unique(body.exclude_tag_ids),
        described=body.model_dump(mode="json", by_alias=True, exclude_defaults=True),
    )


@ops.post(
    "/organizations/<orgId>/bulk-emails",
    "createBulkEmail",
    "Mail an audience of leads",
    "Broadcast, not conversations: no thread is written and no lead moves; a reply lands in "
    "the lead's thread. Leads whose email consent is revoked, or without an address, are skipped and "
    "reported (`skippedLeads`, first 100, and the counts). Answers 202: sending runs as a job within the "
    "SES sending rate; poll `GET …/bulk-emails/{id}`.",
    errors={400: ["AUDIENCE_EMPTY", "AUDIENCE_TOO_LARGE"], 404: ["BULK_EMAIL_NOT_FOUND"]},
    ok={
        202: {"description": "The job, queued"},
        400: {"description": "AUDIENCE_EMPTY, AUDIENCE_TOO_LARGE, VALIDATION_FAILED"},
    },
)
def create_bulk_email(orgId: str, body: Annotated[BulkEmailBody, Body()]) -> Response[Envelope[BulkEmailJob]]:
    with UnitOfWork() as uow:
        actor = gate(WorkspaceAction.BULK_EMAIL)(caller(uow, router, orgId))
        audience = audience_of(body.audience, actor)
        job = bulk_email.create_job(uow.connection, actor, body.subject, body.body, audience)
        uow.commit()
    return json_response(202, Envelope[BulkEmailJob](data=BulkEmailJob.model_validate(job)))


@ops.get(
    "/organizations/<orgId>/bulk-emails/<jobId>",
    "getBulkEmail",
    "A bulk email's progress",
    "The job's status (sending, paused, done), its send and delivery counts, and why it paused if it did.",
    errors={404: ["BULK_EMAIL_NOT_FOUND"]},
    ok={200: {"description": "OK"}, 404: {"description": "BULK_EMAIL_NOT_FOUND"}},
)
def read_bulk_email(orgId: str, jobId: str) -> Envelope[BulkEmailJob]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        job = bulk_email.job_view(uow.connection, actor.organization_id, entity_id(jobId, "BULK_EMAIL_NOT_FOUND"))
    return Envelope[BulkEmailJob](data=BulkEmailJob.model_validate(job))


class RecipientStatus(StrEnum):
    PENDING = "pending"
    SENDING = "sending"
    SENT = "sent"
    FAILED = "failed"
    UNKNOWN = "unknown"
    SKIPPED = "skipped"


@ops.get(
    "/organizations/<orgId>/bulk-emails/<jobId>/recipients",
    "listBulkEmailRecipients",
    "A bulk email's recipients, their send and delivery status",
    "By lead id, keyset pages (`nextCursor` back as `cursor`). `status` filters the send status, "
    "`deliveryStatus` what SES said (delivered, bounced, complained, rejected, delayed).",
    errors={404: ["BULK_EMAIL_NOT_FOUND"]},
    ok={200: {"description": "OK"}, 404: {"description": "BULK_EMAIL_NOT_FOUND"}},
)
def bulk_email_recipients(
    orgId: str,
    jobId: str,
    status: Annotated[RecipientStatus | None, Query()] = None,
    deliveryStatus: Annotated[DeliveryStatus | None, Query()] = None,
    limit: PageSize = DEFAULT_PAGE_SIZE,
    cursor: CursorParam = None,
) -> ListEnvelope[BulkRecipient]:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        page = queries.list_bulk_recipients(
            uow.connection,
            actor.organization_id,
            entity_id(jobId, "BULK_EMAIL_NOT_FOUND"),
            status=status.value if status else None,
            delivery_status=deliveryStatus.value if deliveryStatus else None,
            limit=limit,
            cursor=cursor,
        )
    return ListEnvelope[BulkRecipient](
        data=[BulkRecipient.model_validate(item) for item in page.items], next_cursor=page.next_cursor
    )


def _page(status: int, title: str, text: str, form_action: str | None = None) -> Response[str]:
    form = (
        f'<form method="post" action="{escape(form_action)}"><button type="submit">Unsubscribe</button></form>'
        if form_action
        else ""
    )
    html = (
        f'<!doctype html><html><head><meta charset="utf-8"><meta name="robots" content="noindex">'
        f"<title>{escape(title)}</title></head><body><h1>{escape(title)}</h1><p>{escape(text)}</p>{form}</body></html>"
    )
    return Response(status_code=status, content_type=HTML, body=html)


_INVALID = ("Link not valid", "This unsubscribe link is not valid.")


# Pages for people, success and failure alike (an invalid link is a 404 page, not our JSON error).
PAGES = {
    status: {"description": description, "content": {"text/html": {"schema": {"type": "string"}}}}
    for status, description in ((200, "The page"), (404, "Link not valid (a page)"))
}


@ops.get(
    "/unsubscribe/<token>",
    "getUnsubscribePage",
    "Unsubscribe page",
    "The page a bulk email's unsubscribe link opens: it asks to confirm (HTML, for people).",
    ok=PAGES,
    include_in_schema=True,
)
def unsubscribe_page(token: str) -> Response[str]:
    if parse_unsubscribe_token(token, mail_keys.signing_keys()) is None:
        return _page(404, *_INVALID)
    return _page(200, "Unsubscribe", "Stop receiving these emails?", form_action=f"/unsubscribe/{token}")


@ops.post(
    "/unsubscribe/<token>",
    "unsubscribe",
    "Unsubscribe",
    "RFC 8058 one-click target of List-Unsubscribe-Post: revokes the lead's email consent.",
    ok=PAGES,
)
def unsubscribe(token: str) -> Response[str]:
    lead_id = parse_unsubscribe_token(token, mail_keys.signing_keys())
    if lead_id is None or not bulk_email.unsubscribe(lead_id):
        return _page(404, *_INVALID)
    return _page(200, "Unsubscribed", "You will not receive these emails any more.")
