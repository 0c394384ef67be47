"""What a caller may do in the Sales workspace, named (issue 26): each action is the gate its routes apply.

The routes that carry an action call `gate(action)` instead of naming a role gate themselves, and
`GET …/sales-workspace/access/me` lists the actions whose gate lets the caller through: one table, so the
screen's buttons and the API's refusals cannot drift apart. The authorization test checks, for every role, that
each listed action's route lets the caller in and each omitted one refuses it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from enum import StrEnum
from types import MappingProxyType

from leadcrm.directory.access import require_manager, require_staff
from leadcrm.directory.rules import Actor
from leadcrm.platform.errors import Forbidden

Gate = Callable[[Actor], Actor]


class WorkspaceAction(StrEnum):
    VIEW_LEADS = "view_leads"  # the Work queue, the Board, a lead's sheet
    EDIT_LEADS = "edit_leads"  # PATCH a lead: owner, contact details, test flag
    MOVE_STAGE = "move_stage"  # the Board's stage write
    LOG_RESULTS = "log_results"  # the Sales sheet's results
    BULK_MOVE = "bulk_move"
    BULK_EMAIL = "bulk_email"
    CONVERT = "convert"
    LINK_MEMBER = "link_member"
    ERASE = "erase"
    EDIT_PIPELINES = "edit_pipelines"
    CONNECT_INTEGRATIONS = "connect_integrations"  # Meta pages, WhatsApp numbers, CRM events, templates
    EDIT_ASSIGNMENT_RULES = "edit_assignment_rules"
    MANAGE_WEBHOOKS = "manage_webhooks"  # outbound webhook subscriptions and their delivery logs


GATES: Mapping[WorkspaceAction, Gate] = MappingProxyType(
    {
        WorkspaceAction.VIEW_LEADS: require_staff,
        WorkspaceAction.EDIT_LEADS: require_staff,
        WorkspaceAction.MOVE_STAGE: require_staff,
        WorkspaceAction.LOG_RESULTS: require_staff,
        WorkspaceAction.BULK_MOVE: require_staff,
        WorkspaceAction.BULK_EMAIL: require_staff,
        WorkspaceAction.CONVERT: require_manager,
        WorkspaceAction.LINK_MEMBER: require_manager,
        WorkspaceAction.ERASE: require_manager,
        WorkspaceAction.EDIT_PIPELINES: require_manager,
        WorkspaceAction.CONNECT_INTEGRATIONS: require_manager,
        WorkspaceAction.EDIT_ASSIGNMENT_RULES: require_manager,
        WorkspaceAction.MANAGE_WEBHOOKS: require_manager,
    }
)


def gate(action: WorkspaceAction) -> Gate:
    """The gate of the routes that carry `action`."""
    return GATES[action]


def allowed_actions(actor: Actor) -> list[WorkspaceAction]:
    """The actions whose gate lets `actor` through, in the table's order."""
    allowed = []
    for action, check in GATES.items():
        try:
            check(actor)
        except Forbidden:
            continue
        allowed.append(action)
    return allowed
