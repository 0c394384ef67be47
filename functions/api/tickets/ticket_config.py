"""Helpdesk configuration under /organizations/{orgId} (staff read, owner/admin write): `/ticket-settings`,
`/ticket-queues`, `/ticket-routing-rules` (ordered; first match wins)."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from api.http import caller, entity_id, json_response
from api.operations import MANAGER, Operations
from api.tickets.schemas_tickets import (
    CreateQueueBody,
    CreateRuleBody,
    Queue,
    QueueEnvelope,
    QueueListEnvelope,
    Rule,
    RuleEnvelope,
    RuleListEnvelope,
    RuleOrderBody,
    TicketSettings,
    TicketSettingsEnvelope,
    UpdateQueueBody,
    UpdateRuleBody,
    UpdateTicketSettingsBody,
)
from api.tickets.tickets import OK
from leadcrm.directory.access import require_manager, require_staff
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.tickets import config as ticket_config

router = APIGatewayHttpRouter()
ops = Operations(router, "Tickets")


@ops.get(
    "/organizations/<orgId>/ticket-settings",
    "getTicketSettings",
    "Helpdesk settings",
    "The helpdesk's support address, business hours, holidays, SLA targets, auto-close and escalation share.",
)
def settings(orgId: str) -> TicketSettingsEnvelope:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        view = ticket_config.settings_view(uow.connection, actor.organization_id)
        uow.commit()  # the first read makes the settings row (and the support address)
    return TicketSettingsEnvelope(data=TicketSettings.from_view(view))


@ops.patch(
    "/organizations/<orgId>/ticket-settings",
    "updateTicketSettings",
    "Change business hours, holidays, SLA targets, auto-close and escalation",
    (
        "Changes the helpdesk settings; hours and holidays that leave an SLA target no business time are 400 "
        "INVALID_CALENDAR."
    ),
    who=MANAGER,
    errors={400: ["INVALID_CALENDAR", "INVALID_SLA_POLICY"]},
    ok={**OK, 400: {"description": "INVALID_CALENDAR, INVALID_SLA_POLICY"}},
)
def update_settings(orgId: str, body: Annotated[UpdateTicketSettingsBody, Body()]) -> TicketSettingsEnvelope:
    with UnitOfWork() as uow:
        actor = require_manager(caller(uow, router, orgId))
        view = ticket_config.update_settings(uow.connection, actor.organization_id, body.changes())
        uow.commit()
    return TicketSettingsEnvelope(data=TicketSettings.from_view(view))


@ops.get(
    "/organizations/<orgId>/ticket-queues",
    "listTicketQueues",
    "Queues",
    "The helpdesk's queues.",
)
def queues(orgId: str) -> QueueListEnvelope:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        rows = ticket_config.list_queues(uow.connection, actor.organization_id)
    return QueueListEnvelope(data=[Queue.model_validate(r) for r in rows], next_cursor=None)


@ops.post(
    "/organizations/<orgId>/ticket-queues",
    "createTicketQueue",
    "Create a queue",
    "Creates a queue; names are unique whatever their case (400 TICKET_QUEUE_NAME_TAKEN).",
    who=MANAGER,
    errors={400: ["ASSIGNEE_NOT_STAFF", "TICKET_QUEUE_NAME_TAKEN"], 404: ["TICKET_QUEUE_NOT_FOUND"]},
    ok={201: {"description": "The queue"}, 400: {"description": "TICKET_QUEUE_NAME_TAKEN, ASSIGNEE_NOT_STAFF"}},
)
def create_queue(orgId: str, body: Annotated[CreateQueueBody, Body()]) -> Response[QueueEnvelope]:
    with UnitOfWork() as uow:
        actor = require_manager(caller(uow, router, orgId))
        row = ticket_config.create_queue(uow.connection, actor.organization_id, body.name, body.escalation_user_id)
        uow.commit()
    return json_response(201, QueueEnvelope(data=Queue.model_validate(row)))


@ops.patch(
    "/organizations/<orgId>/ticket-queues/<queueId>",
    "updateTicketQueue",
    "Rename, set the escalation agent, archive",
    "Renames a queue, sets its escalation agent (active staff) or archives it.",
    who=MANAGER,
    errors={400: ["ASSIGNEE_NOT_STAFF", "TICKET_QUEUE_NAME_TAKEN"], 404: ["TICKET_QUEUE_NOT_FOUND"]},
    ok={**OK, 404: {"description": "TICKET_QUEUE_NOT_FOUND"}},
)
def update_queue(orgId: str, queueId: str, body: Annotated[UpdateQueueBody, Body()]) -> QueueEnvelope:
    with UnitOfWork() as uow:
        actor = require_manager(caller(uow, router, orgId))
        row = ticket_config.update_queue(
            uow.connection, actor.organization_id, entity_id(queueId, "TICKET_QUEUE_NOT_FOUND"), body.changes()
        )
        uow.commit()
    return QueueEnvelope(data=Queue.model_validate(row))


@ops.get(
    "/organizations/<orgId>/ticket-routing-rules",
    "listTicketRoutingRules",
    "Routing rules in order",
    "The routing rules in the order they are tried.",
)
def rules(orgId: str) -> RuleListEnvelope:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        rows = ticket_config.list_rules(uow.connection, actor.organization_id)
    return RuleListEnvelope(data=[Rule.model_validate(r) for r in rows], next_cursor=None)


@ops.post(
    "/organizations/<orgId>/ticket-routing-rules",
    "createTicketRoutingRule",
    "Add a routing rule at a position",
    "Adds a routing rule at a position; a rule names a queue or an agent to route to.",
    who=MANAGER,
    errors={
        400: ["ASSIGNEE_NOT_STAFF", "TICKET_QUEUE_ARCHIVED", "TICKET_RULE_NEEDS_TARGET"],
        404: ["TICKET_QUEUE_NOT_FOUND", "TICKET_ROUTING_RULE_NOT_FOUND"],
    },
    ok={
        201: {"description": "The rule"},
        400: {"description": "TICKET_RULE_NEEDS_TARGET, ASSIGNEE_NOT_STAFF, TICKET_QUEUE_ARCHIVED"},
    },
)
def create_rule(orgId: str, body: Annotated[CreateRuleBody, Body()]) -> Response[RuleEnvelope]:
    with UnitOfWork() as uow:
        actor = require_manager(caller(uow, router, orgId))
        row = ticket_config.create_rule(uow.connection, actor.organization_id, body.changes())
        uow.commit()
    return json_response(201, RuleEnvelope(data=Rule.model_validate(row)))


@ops.put(
    "/organizations/<orgId>/ticket-routing-rules/order",
    "reorderTicketRoutingRules",
    "Put the routing rules in this order",
    "Puts the routing rules in this order: every rule once.",
    who=MANAGER,
    errors={400: ["TICKET_RULE_ORDER_MISMATCH"]},
    ok={**OK, 400: {"description": "TICKET_RULE_ORDER_MISMATCH"}},
)
def order_rules(orgId: str, body: Annotated[RuleOrderBody, Body()]) -> RuleListEnvelope:
    with UnitOfWork() as uow:
        actor = require_manager(caller(uow, router, orgId))
        rows = ticket_config.reorder_rules(uow.connection, actor.organization_id, body.rule_ids)
        uow.commit()
    return RuleListEnvelope(data=[Rule.model_validate(r) for r in rows], next_cursor=None)


@ops.patch(
    "/organizations/<orgId>/ticket-routing-rules/<ruleId>",
    "updateTicketRoutingRule",
    "Change a routing rule",
    "Changes a routing rule's conditions or target.",
    who=MANAGER,
    errors={
        400: ["ASSIGNEE_NOT_STAFF", "TICKET_QUEUE_ARCHIVED", "TICKET_RULE_NEEDS_TARGET"],
        404: ["TICKET_QUEUE_NOT_FOUND", "TICKET_ROUTING_RULE_NOT_FOUND"],
    },
    ok={**OK, 404: {"description": "TICKET_ROUTING_RULE_NOT_FOUND"}},
)
def update_rule(orgId: str, ruleId: str, body: Annotated[UpdateRuleBody, Body()]) -> RuleEnvelope:
    with UnitOfWork() as uow:
        actor = require_manager(caller(uow, router, orgId))
        row = ticket_config.update_rule(
            uow.connection, actor.organization_id, entity_id(ruleId, "TICKET_ROUTING_RULE_NOT_FOUND"), body.changes()
        )
        uow.commit()
    return RuleEnvelope(data=Rule.model_validate(row))


@ops.delete(
    "/organizations/<orgId>/ticket-routing-rules/<ruleId>",
    "deleteTicketRoutingRule",
    "Delete a routing rule",
    "Deletes a routing rule.",
    who=MANAGER,
    errors={404: ["TICKET_ROUTING_RULE_NOT_FOUND"]},
    ok={**OK, 404: {"description": "TICKET_ROUTING_RULE_NOT_FOUND"}},
)
def delete_rule(orgId: str, ruleId: str) -> Response[dict[str, Any]]:
    with UnitOfWork() as uow:
        actor = require_manager(caller(uow, router, orgId))
        ticket_config.delete_rule(
            uow.connection, actor.organization_id, entity_id(ruleId, "TICKET_ROUTING_RULE_NOT_FOUND")
        )
        uow.commit()
    return json_response(200, {"data": {"deleted": True}})
