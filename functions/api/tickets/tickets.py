"""Helpdesk tickets, routing rules, SLA policies and reports (issue 12).

Under /organizations/{orgId}:
- tickets: `GET/POST /tickets`, `GET /tickets/{ticketId}` (with history, mails, messages) and one route per
  §6 trigger a person causes: `assign`, `respond`, `request-info`, `customer-reply`, `resolve`, `confirm`,
  `reopen`, `take-ownership` (invalid for the ticket's state: 409 TICKET_INVALID_TRANSITION). Staff work
  tickets; a member may open one for themselves (channel portal) and see their own.
- configuration: api.tickets.ticket_config.
- `GET /ticket-reports/sla?from=&to=` (staff).
Public (no token): `GET/POST /public/ticket-surveys/{token}`, the satisfaction survey a closed ticket mails.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Header, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from api.http import caller, entity_id, json_response
from api.idempotent import respond_once
from api.leads.schemas_capture import IDEMPOTENCY_KEY_PATTERN
from api.operations import MEMBER, Operations
from api.params import DEFAULT_PAGE_SIZE, AssigneeParam, CursorParam, FromDay, PageSize, ToDay, assignee_of
from api.schemas import PeriodOut
from api.tickets.schemas_tickets import (
    AssignTicketBody,
    CreateTicketBody,
    CustomerReplyBody,
    MessageBody,
    ReopenTicketBody,
    ResolveBody,
    SlaReportEnvelope,
    Survey,
    SurveyAnswerBody,
    SurveyEnvelope,
    Ticket,
    TicketDetail,
    TicketDetailEnvelope,
    TicketEnvelope,
    TicketListEnvelope,
)
from leadcrm.directory.access import require_feature, require_staff
from leadcrm.directory.rules import LEAD_MANAGEMENT, Actor
from leadcrm.platform import clock
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import BadRequest, Forbidden
from leadcrm.platform.ids import parse_uuid
from leadcrm.platform.keyset import decode_keyset, encode_keyset
from leadcrm.tickets import creation, requester_actions, staff_actions
from leadcrm.tickets import queries as ticket_queries
from leadcrm.tickets import reports as ticket_reports
from leadcrm.tickets import surveys as ticket_surveys
from leadcrm.tickets import tickets as service
from leadcrm.tickets.rules.routing import Channel
from leadcrm.tickets.rules.states import TicketStatus

router = APIGatewayHttpRouter()
ops = Operations(router, "Tickets")

# A route that names responses documents its success status itself (the resolver adds 200 only otherwise).
OK = {200: {"description": "OK"}}
TICKET = {**OK, 404: {"description": "TICKET_NOT_FOUND"}}
TRANSITION = {**TICKET, 409: {"description": "TICKET_INVALID_TRANSITION (status, trigger, allowed)"}}


def _ticket_id(raw: str) -> uuid.UUID:
    return entity_id(raw, "TICKET_NOT_FOUND")


def _member_or_staff(actor: Actor) -> Actor:
    """Staff, or a member (who sees and opens only their own tickets), in an organization with lead management."""
    require_feature(actor, LEAD_MANAGEMENT)
    if not actor.is_staff and actor.membership_id is None:
        raise Forbidden("You are not a member of this organization.", code="NOT_A_MEMBER")
    return actor


def _visible(actor: Actor, ticket: dict[str, Any]) -> dict[str, Any]:
    """A member sees their own tickets only; anyone else's answers 404 like a random id."""
    if not actor.is_staff and ticket["membership_id"] != actor.membership_id:
        raise service.ticket_not_found()
    return ticket


# -- tickets ---------------------------------------------------------------------------------------------------


@ops.get(
    "/organizations/<orgId>/tickets",
    "listTickets",
    "List tickets",
    "Tickets in keyset pages; staff see the organization's, a member sees their own.",
    who=MEMBER,
)
def index(
    orgId: str,
    status: Annotated[TicketStatus | None, Query()] = None,
    queueId: Annotated[uuid.UUID | None, Query()] = None,
    assignee: AssigneeParam = None,
    leadId: Annotated[uuid.UUID | None, Query()] = None,
    limit: PageSize = DEFAULT_PAGE_SIZE,
    cursor: CursorParam = None,
) -> TicketListEnvelope:
    with UnitOfWork() as uow:
        actor = _member_or_staff(caller(uow, router, orgId))  # the gate before any rule of the request
        after = None
        if cursor is not None:
            after = parse_uuid(decode_keyset(cursor, 1)[0])
            if after is None:
                raise BadRequest("The cursor is not one this API returned.", code="INVALID_CURSOR")
        filters = ticket_queries.TicketFilters(
            status=status,
            queue_id=queueId,
            assignee=assignee_of(assignee, actor),
            lead_id=leadId,
            membership_id=None if actor.is_staff else actor.membership_id,
        )
        rows, last = ticket_queries.list_tickets(
            uow.connection, actor.organization_id, filters, after=after, limit=limit
        )
    return TicketListEnvelope(
        data=[Ticket.from_row(r) for r in rows], next_cursor=encode_keyset([str(last)]) if last else None
    )


@ops.post(
    "/organizations/<orgId>/tickets",
    "createTicket",
    "Open a ticket",
    (
        "Opens a ticket: staff for a lead or a member of this organization, a member for themselves; routing then "
        "picks its queue and agent."
    ),
    who=MEMBER,
    errors={
        400: ["TICKET_REQUESTER_REQUIRED"],
        403: ["STAFF_ONLY"],
        404: ["LEAD_NOT_FOUND", "MEMBERSHIP_NOT_FOUND", "TICKET_NOT_FOUND"],
        409: ["TICKET_INVALID_TRANSITION"],
    },
    ok={
        201: {"description": "The ticket (or the first answer replayed with the same Idempotency-Key)"},
        400: {"description": "TICKET_REQUESTER_REQUIRED"},
        404: {"description": "LEAD_NOT_FOUND, MEMBERSHIP_NOT_FOUND"},
    },
)
def create(
    orgId: str,
    body: Annotated[CreateTicketBody, Body()],
    idempotency_key: Annotated[str | None, Header(alias="idempotency-key", pattern=IDEMPOTENCY_KEY_PATTERN)] = None,
) -> Response[TicketEnvelope]:
    with UnitOfWork() as uow:
        actor = _member_or_staff(caller(uow, router, orgId))
        if actor.is_staff:
            if body.lead_id is None and body.membership_id is None:
                raise BadRequest("Name the lead or the member who asks.", code="TICKET_REQUESTER_REQUIRED")
            new = creation.NewTicket(
                subject=body.subject,
                description=body.description,
                channel=body.channel,
                priority=body.priority,
                lead_id=body.lead_id,
                membership_id=body.membership_id,
                requester_email=body.requester_email,
            )
        else:
            # A member asks for themselves, through the portal, whatever the body says about others.
            if body.lead_id is not None or (body.membership_id not in (None, actor.membership_id)):
                raise Forbidden("A member opens tickets for themselves only.", code="STAFF_ONLY")
            new = creation.NewTicket(
                subject=body.subject,
                description=body.description,
                channel=Channel.PORTAL,
                priority=body.priority,
                membership_id=actor.membership_id,
            )
        return respond_once(
            uow,
            f"tickets.create:{actor.organization_id}:{actor.user_id}",
            idempotency_key,
            body,
            201,
            lambda: TicketEnvelope(
                data=Ticket.from_row(
                    creation.create_ticket(uow, actor.organization_id, new, actor_user_id=actor.user_id)
                )
            ),
        )


@ops.get(
    "/organizations/<orgId>/tickets/<ticketId>",
    "getTicket",
    "A ticket",
    "A ticket with its history, mails and messages; a member sees only their own.",
    who=MEMBER,
    errors={404: ["TICKET_NOT_FOUND"]},
    ok=TICKET,
)
def show(orgId: str, ticketId: str) -> TicketDetailEnvelope:
    with UnitOfWork() as uow:
        actor = _member_or_staff(caller(uow, router, orgId))
        conn, org = uow.connection, actor.organization_id
        ticket = _visible(actor, service.read_ticket(conn, org, _ticket_id(ticketId)))
        detail = TicketDetail.model_validate(
            {
                **Ticket.from_row(ticket).model_dump(),
                "history": ticket_queries.history(conn, org, ticket["id"]) if actor.is_staff else [],
                "mails": ticket_queries.mails(conn, org, ticket["id"]) if actor.is_staff else [],
                "messages": ticket_queries.messages(conn, org, ticket["id"]),
            }
        )
    return TicketDetailEnvelope(data=detail)


def _staff_action(orgId: str, action: Callable[[UnitOfWork, Actor], dict[str, Any]]) -> Response[TicketEnvelope]:
    """Runs one staff action on a ticket in one unit of work and answers the ticket as written."""
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        row = action(uow, actor)
        uow.commit()
    return json_response(200, TicketEnvelope(data=Ticket.from_row(row)))


@ops.post(
    "/organizations/<orgId>/tickets/<ticketId>/assign",
    "assignTicket",
    "Assign an agent and/or a queue (Unassigned → Assigned; a handover elsewhere)",
    (
        "Assigns an agent (active staff) and/or a queue: Unassigned → Assigned, or a handover in the other open "
        "states. A transition the state does not allow is 409 TICKET_INVALID_TRANSITION (status, trigger, allowed)."
    ),
    errors={
        400: ["ASSIGNEE_NOT_STAFF", "TICKET_QUEUE_ARCHIVED"],
        404: ["TICKET_NOT_FOUND", "TICKET_QUEUE_NOT_FOUND"],
        409: ["TICKET_INVALID_TRANSITION"],
    },
    ok={**TRANSITION, 400: {"description": "ASSIGNEE_NOT_STAFF, TICKET_QUEUE_ARCHIVED"}},
)
def assign(orgId: str, ticketId: str, body: Annotated[AssignTicketBody, Body()]) -> Response[TicketEnvelope]:
    return _staff_action(
        orgId,
        lambda uow, actor: staff_actions.assign(
            uow, actor, _ticket_id(ticketId), assignee_user_id=body.assignee_user_id, queue_id=body.queue_id
        ),
    )


@ops.post(
    "/organizations/<orgId>/tickets/<ticketId>/respond",
    "respondToTicket",
    "Log the agent's response (Assigned or Reopened → In Progress)",
    "Logs the agent's response: Assigned or Reopened → In Progress; it stops the first-response clock.",
    errors={404: ["TICKET_NOT_FOUND"], 409: ["TICKET_INVALID_TRANSITION"]},
    ok=TRANSITION,
)
def respond(orgId: str, ticketId: str, body: Annotated[MessageBody, Body()]) -> Response[TicketEnvelope]:
    return _staff_action(
        orgId, lambda uow, actor: staff_actions.respond(uow, actor, _ticket_id(ticketId), message=body.message)
    )


@ops.post(
    "/organizations/<orgId>/tickets/<ticketId>/request-info",
    "requestTicketInfo",
    "Ask the customer for information (In Progress → Awaiting Customer; the clock pauses)",
    "Asks the customer for information: In Progress → Awaiting Customer, the SLA clock pauses.",
    errors={404: ["TICKET_NOT_FOUND"], 409: ["TICKET_INVALID_TRANSITION"]},
    ok=TRANSITION,
)
def request_info(orgId: str, ticketId: str, body: Annotated[MessageBody, Body()]) -> Response[TicketEnvelope]:
    return _staff_action(
        orgId, lambda uow, actor: staff_actions.request_info(uow, actor, _ticket_id(ticketId), message=body.message)
    )


@ops.post(
    "/organizations/<orgId>/tickets/<ticketId>/customer-reply",
    "logTicketCustomerReply",
    "Log the customer's reply by phone or chat (Awaiting Customer → In Progress; the clock resumes)",
    "Logs the customer's reply by phone or chat: Awaiting Customer → In Progress, the SLA clock resumes.",
    errors={404: ["TICKET_NOT_FOUND"], 409: ["TICKET_INVALID_TRANSITION"]},
    ok=TRANSITION,
)
def customer_reply(orgId: str, ticketId: str, body: Annotated[CustomerReplyBody, Body()]) -> Response[TicketEnvelope]:
    return _staff_action(
        orgId,
        lambda uow, actor: requester_actions.customer_reply(
            uow,
            actor.organization_id,
            _ticket_id(ticketId),
            message=body.message,
            actor_user_id=actor.user_id,
            channel=body.channel.value,
        ),
    )


@ops.post(
    "/organizations/<orgId>/tickets/<ticketId>/resolve",
    "resolveTicket",
    "Propose the solution (In Progress → Resolved; the customer is asked to confirm)",
    "Proposes the solution: In Progress → Resolved; the customer is asked to confirm.",
    errors={404: ["TICKET_NOT_FOUND"], 409: ["TICKET_INVALID_TRANSITION"]},
    ok=TRANSITION,
)
def resolve(orgId: str, ticketId: str, body: Annotated[ResolveBody, Body()]) -> Response[TicketEnvelope]:
    return _staff_action(
        orgId, lambda uow, actor: staff_actions.resolve(uow, actor, _ticket_id(ticketId), resolution=body.resolution)
    )


@ops.post(
    "/organizations/<orgId>/tickets/<ticketId>/confirm",
    "confirmTicket",
    "Record the customer's confirmation (Resolved → Closed; the survey goes out)",
    "Records the customer's confirmation: Resolved → Closed, and the satisfaction survey is mailed.",
    errors={404: ["TICKET_NOT_FOUND"], 409: ["TICKET_INVALID_TRANSITION"]},
    ok=TRANSITION,
)
def confirm(orgId: str, ticketId: str) -> Response[TicketEnvelope]:
    return _staff_action(
        orgId,
        lambda uow, actor: requester_actions.confirm(
            uow, actor.organization_id, _ticket_id(ticketId), actor_user_id=actor.user_id
        ),
    )


@ops.post(
    "/organizations/<orgId>/tickets/<ticketId>/reopen",
    "reopenTicket",
    "The issue persists (Resolved → Reopened; the resolution clock restarts)",
    "The issue persists: Resolved → Reopened with a reason, the resolution clock restarts.",
    errors={400: ["TICKET_REOPEN_REASON_REQUIRED"], 404: ["TICKET_NOT_FOUND"], 409: ["TICKET_INVALID_TRANSITION"]},
    ok=TRANSITION,
)
def reopen(orgId: str, ticketId: str, body: Annotated[ReopenTicketBody, Body()]) -> Response[TicketEnvelope]:
    return _staff_action(
        orgId,
        lambda uow, actor: requester_actions.reopen(
            uow, actor.organization_id, _ticket_id(ticketId), reason=body.reason, actor_user_id=actor.user_id
        ),
    )


@ops.post(
    "/organizations/<orgId>/tickets/<ticketId>/take-ownership",
    "takeTicketOwnership",
    "A higher-tier agent takes an escalated ticket (Escalated → In Progress)",
    "A higher-tier agent takes an escalated ticket: Escalated → In Progress (403 TICKET_HIGHER_TIER_ONLY otherwise).",
    errors={
        403: ["TICKET_HIGHER_TIER_ONLY"],
        404: ["TICKET_NOT_FOUND", "TICKET_QUEUE_NOT_FOUND"],
        409: ["TICKET_INVALID_TRANSITION"],
    },
    ok={**TRANSITION, 403: {"description": "TICKET_HIGHER_TIER_ONLY"}},
)
def take_ownership(orgId: str, ticketId: str) -> Response[TicketEnvelope]:
    return _staff_action(orgId, lambda uow, actor: staff_actions.take_ownership(uow, actor, _ticket_id(ticketId)))


# -- reports ---------------------------------------------------------------------------------------------------


@ops.get(
    "/organizations/<orgId>/ticket-reports/sla",
    "getTicketSlaReport",
    "First response and resolution times, breach rate: totals, per queue, per agent",
    "First response and resolution times and breach rate over a period: totals, per queue and per agent.",
    errors={400: ["INVALID_PERIOD"]},
    ok={**OK, 400: {"description": "INVALID_PERIOD"}},
)
def sla_report(
    orgId: str,
    from_: FromDay = None,
    to: ToDay = None,
) -> SlaReportEnvelope:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))  # the gate before any rule of the request
        days = ticket_reports.report_period(uow.connection, actor.organization_id, from_, to, now=clock.now())
        starts_at, ends_at = days.instants.starts_at, days.instants.ends_at
        assert starts_at is not None and ends_at is not None  # both days are known
        report = ticket_reports.sla_report(uow.connection, actor.organization_id, starts_at, ends_at)
    period = PeriodOut(
        from_=days.first, to=days.last, timezone=days.timezone or "UTC", starts_at=starts_at, ends_at=ends_at
    )
    return SlaReportEnvelope.model_validate({"data": {**report, "period": period}})


# -- the public survey -------------------------------------------------------------------------------------------


@ops.get(
    "/public/ticket-surveys/<token>",
    "getTicketSurvey",
    "The satisfaction survey a closed ticket mailed",
    "The satisfaction survey a closed ticket mailed, by the link's token; an unknown token is 404.",
    errors={404: ["SURVEY_NOT_FOUND"]},
    ok={**OK, 404: {"description": "SURVEY_NOT_FOUND"}},
)
def survey(token: str) -> SurveyEnvelope:
    with UnitOfWork() as uow:
        row = ticket_surveys.survey_for_token(uow.connection, token)
    return SurveyEnvelope(data=Survey.from_row(row))


@ops.post(
    "/public/ticket-surveys/<token>",
    "answerTicketSurvey",
    "Answer the satisfaction survey, once",
    "Answers the survey, once: a second answer is 409 SURVEY_ALREADY_ANSWERED.",
    errors={404: ["SURVEY_NOT_FOUND"], 409: ["SURVEY_ALREADY_ANSWERED"]},
    ok={
        201: {"description": "The answer, recorded"},
        404: {"description": "SURVEY_NOT_FOUND"},
        409: {"description": "SURVEY_ALREADY_ANSWERED"},
    },
)
def answer_survey(token: str, body: Annotated[SurveyAnswerBody, Body()]) -> Response[SurveyEnvelope]:
    with UnitOfWork() as uow:
        row = ticket_surveys.answer_survey(uow.connection, token, body.rating, body.comment or None)
        uow.commit()
    return json_response(201, SurveyEnvelope(data=Survey.from_row(row)))
