"""Assignment rules (staff read, owner/admin write): `/organizations/{orgId}/lead-assignment-rules`, ordered,
first match wins; and staff availability, `/organizations/{orgId}/staff/{userId}/availability` (own for
staff, anyone's for owner/admin). What they do at intake: leadcrm.leads.assignment."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Header
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from api.http import caller, entity_id, json_response
from api.idempotent import respond_once
from api.leads.schemas_assignment import (
    AssignmentRule,
    AssignmentRuleEnvelope,
    AssignmentRuleListEnvelope,
    AssignmentRuleOrderBody,
    Availability,
    AvailabilityBody,
    AvailabilityEnvelope,
    CreateAssignmentRuleBody,
    UpdateAssignmentRuleBody,
)
from api.operations import MANAGER, Operations
from leadcrm.directory import availability
from leadcrm.directory.access import require_staff
from leadcrm.directory.actions import WorkspaceAction, gate
from leadcrm.leads import assignment_rules as rules
from leadcrm.platform.db.uow import UnitOfWork

router = APIGatewayHttpRouter()
ops = Operations(router, "Leads")

RULES = "/organizations/<orgId>/lead-assignment-rules"
RULE_ERRORS = {
    400: ["ASSIGNEE_NOT_STAFF", "ASSIGNMENT_RULE_INVALID", "ASSIGNMENT_RULE_UNKNOWN_REFERENCE"],
}
IdempotencyKey = Annotated[str | None, Header(alias="idempotency-key", max_length=255)]


@ops.get(
    RULES,
    "listLeadAssignmentRules",
    "Assignment rules in order",
    "The rules that give a lead arriving without an owner one, in the order they are tried; each reports the "
    "people it names who left the organization (`problems`, code ASSIGNEE_LEFT).",
)
def index(orgId: str) -> AssignmentRuleListEnvelope:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        rows = rules.list_rules(uow.connection, actor.organization_id)
    return AssignmentRuleListEnvelope(data=[AssignmentRule.of(r) for r in rows], next_cursor=None)


@ops.post(
    RULES,
    "createLeadAssignmentRule",
    "Add an assignment rule at a position",
    "Adds a rule at a position (default last): what it matches (source, campaign hook, pipeline, form or "
    "WhatsApp number, language, time of day in the organization's timezone) and how it assigns (round-robin, "
    "least-loaded or a fixed person, among the active staff it names).",
    who=MANAGER,
    errors=RULE_ERRORS,
    ok={201: {"description": "The rule"}},
)
def create(
    orgId: str,
    body: Annotated[CreateAssignmentRuleBody, Body()],
    idempotency_key: IdempotencyKey = None,
) -> Response[AssignmentRuleEnvelope]:
    with UnitOfWork() as uow:
        actor = gate(WorkspaceAction.EDIT_ASSIGNMENT_RULES)(caller(uow, router, orgId))

        def produce() -> AssignmentRuleEnvelope:
            row = rules.create_rule(uow.connection, actor.organization_id, body.changes(), body.position)
            return AssignmentRuleEnvelope(data=AssignmentRule.of(row))

        scope = f"leads.assignment_rules:{actor.organization_id}"
        return respond_once(uow, scope, idempotency_key, body, 201, produce)


@ops.put(
    f"{RULES}/order",
    "reorderLeadAssignmentRules",
    "Put the assignment rules in this order",
    "Puts the rules in this order: every rule once.",
    who=MANAGER,
    errors={400: ["ASSIGNMENT_RULE_ORDER_MISMATCH"]},
)
def order(orgId: str, body: Annotated[AssignmentRuleOrderBody, Body()]) -> AssignmentRuleListEnvelope:
    with UnitOfWork() as uow:
        actor = gate(WorkspaceAction.EDIT_ASSIGNMENT_RULES)(caller(uow, router, orgId))
        rows = rules.reorder_rules(uow.connection, actor.organization_id, body.rule_ids)
        uow.commit()
    return AssignmentRuleListEnvelope(data=[AssignmentRule.of(r) for r in rows], next_cursor=None)


@ops.patch(
    f"{RULES}/<ruleId>",
    "updateLeadAssignmentRule",
    "Change an assignment rule",
    "Changes what a rule matches, whom it assigns to, or switches it off; a new list of people restarts the "
    "round-robin.",
    who=MANAGER,
    errors={**RULE_ERRORS, 404: ["ASSIGNMENT_RULE_NOT_FOUND"]},
)
def change(orgId: str, ruleId: str, body: Annotated[UpdateAssignmentRuleBody, Body()]) -> AssignmentRuleEnvelope:
    with UnitOfWork() as uow:
        actor = gate(WorkspaceAction.EDIT_ASSIGNMENT_RULES)(caller(uow, router, orgId))
        row = rules.update_rule(
            uow.connection, actor.organization_id, entity_id(ruleId, "ASSIGNMENT_RULE_NOT_FOUND"), body.changes()
        )
        uow.commit()
    return AssignmentRuleEnvelope(data=AssignmentRule.of(row))


@ops.delete(
    f"{RULES}/<ruleId>",
    "deleteLeadAssignmentRule",
    "Delete an assignment rule",
    "Deletes a rule; the rules after it move up one.",
    who=MANAGER,
    errors={404: ["ASSIGNMENT_RULE_NOT_FOUND"]},
    ok={200: {"description": "Deleted"}},
)
def remove(orgId: str, ruleId: str) -> Response[dict[str, Any]]:
    with UnitOfWork() as uow:
        actor = gate(WorkspaceAction.EDIT_ASSIGNMENT_RULES)(caller(uow, router, orgId))
        rules.delete_rule(uow.connection, actor.organization_id, entity_id(ruleId, "ASSIGNMENT_RULE_NOT_FOUND"))
        uow.commit()
    return json_response(200, {"data": {"deleted": True}})


# -- staff availability ----------------------------------------------------------------------------------------

AVAILABILITY = "/organizations/<orgId>/staff/<userId>/availability"
AVAILABILITY_ERRORS = {403: ["OWN_AVAILABILITY_ONLY"], 404: ["STAFF_NOT_FOUND"]}


@ops.get(
    AVAILABILITY,
    "getStaffAvailability",
    "A staff member's availability",
    "When the person takes new leads from the assignment rules: away until, and working hours in the "
    "organization's timezone. Staff read their own; an owner or admin anyone's.",
    errors=AVAILABILITY_ERRORS,
)
def read_availability(orgId: str, userId: str) -> AvailabilityEnvelope:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        row = availability.read_availability(uow.connection, actor, entity_id(userId, "STAFF_NOT_FOUND"))
    return AvailabilityEnvelope(data=Availability.model_validate(row))


@ops.put(
    AVAILABILITY,
    "setStaffAvailability",
    "Set a staff member's availability",
    "Replaces the person's away-until and working hours (empty: any time). Assignment rules skip a person who "
    "is away or outside their working hours. Staff set their own; an owner or admin anyone's.",
    errors=AVAILABILITY_ERRORS,
)
def set_availability(orgId: str, userId: str, body: Annotated[AvailabilityBody, Body()]) -> AvailabilityEnvelope:
    with UnitOfWork() as uow:
        actor = require_staff(caller(uow, router, orgId))
        row = availability.set_availability(
            uow.connection,
            actor,
            entity_id(userId, "STAFF_NOT_FOUND"),
            away_until=body.away_until,
            working_hours=body.stored_hours(),
        )
        uow.commit()
    return AvailabilityEnvelope(data=Availability.model_validate(row))
