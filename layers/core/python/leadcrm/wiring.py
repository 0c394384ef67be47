"""The composition root: what reacts to what, in one place.

- `IN_PROCESS`: messages a capability publishes inside its own unit of work (platform.messagebus) and the
  handlers of higher capabilities that answer them, in order. This is how a lower capability causes work in a
  higher one without importing it (the capabilities' import order is declared in pyproject's contracts).
- `EVENT_REACTIONS`: domain events from the bus (the outbox, through EventBridge and SQS) and platform events,
  each with the capability reaction that applies it; the events of `scoring.RESCORING_EVENTS` also rescore
  their lead, beside their own reaction; SES's email sending events (detail-types `Email …`) are here too.
  Consumed by functions/task_lifecycle.
- `JOBS`: the scheduled jobs (EventBridge Scheduler `{"job": name}`), each a capability's job function.

Nothing below the capabilities imports this module; the bus loads it on its first message.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from sqlalchemy import Connection

from leadcrm.analytics import attribution
from leadcrm.conversations import reactions as conversations_reactions
from leadcrm.conversations.bulk_email import run_bulk_email
from leadcrm.conversations.jobs import APPLIED_EVENTS_RETENTION
from leadcrm.conversations.queued_sweep import run_queued_email_sweep
from leadcrm.deals import owner_departure
from leadcrm.deals import reactions as deals_reactions
from leadcrm.deals.rotting import run_rotting_sweep
from leadcrm.directory import reactions as directory_reactions
from leadcrm.directory.messages import HeldEventsReleased, MembershipLeftStaff
from leadcrm.ingestion.jobs import CLAIMS_RETENTION
from leadcrm.leads import rate_limits, released_joins
from leadcrm.leads import reactions as leads_reactions
from leadcrm.leads.messages import LeadBecameMember, LeadCreated, LeadErasing, ScoringInputsChanged
from leadcrm.leads.rules.returning import LEAD_RETURNED_EVENT, MEMBERSHIP_JOIN_RELEASED
from leadcrm.platform import idempotency, messagebus, outbox
from leadcrm.platform.events import LEAD_CREATED, LEAD_STATUS_CHANGED
from leadcrm.platform.retention import Retention, run_cleanup
from leadcrm.qualification import reactions as qualification_reactions
from leadcrm.qualification import scoring
from leadcrm.qualification.jobs import purge_expired_snapshots
from leadcrm.qualification.qualification import run_nurture_reevaluation
from leadcrm.tickets.sweep import run_ticket_sweep
from leadcrm.work import follow_ups, task_closing
from leadcrm.work import reactions as work_reactions
from leadcrm.work.digest import run_daily_digest

logger = logging.getLogger(__name__)

EventReaction = Callable[[Connection, dict[str, Any]], bool]


def replay_held_events(conn: Connection, message: HeldEventsReleased) -> bool:
    """Events the directory held until their membership was active (a self-signup before its membership),
    applied now, in the transaction that made it active, exactly as if they had just arrived."""
    changed = False
    for detail_type, detail in message.events:
        changed = handle_event(conn, detail_type, detail) or changed
    return changed


IN_PROCESS: tuple[tuple[type, Callable[[Connection, Any], Any]], ...] = (
    (LeadCreated, work_reactions.contact_task_for_new_lead),
    (ScoringInputsChanged, qualification_reactions.rescore_changed_leads),
    (LeadErasing, qualification_reactions.same_person_as_erased_lead),
    (LeadErasing, deals_reactions.forget_person_on_deals),
    (LeadErasing, work_reactions.delete_tasks_of_erased_lead),
    (LeadBecameMember, deals_reactions.link_member_on_deals),
    (MembershipLeftStaff, owner_departure.hand_over_for_departure),
    (HeldEventsReleased, replay_held_events),
)

EVENT_REACTIONS: dict[str, EventReaction] = {
    directory_reactions.ORGANIZATION_CREATED: directory_reactions.on_organization_created,
    directory_reactions.ORGANIZATION_UPDATED: directory_reactions.on_organization_updated,
    directory_reactions.ORGANIZATION_DELETED: directory_reactions.on_organization_deleted,
    directory_reactions.USER_CREATED: directory_reactions.on_user_created,
    directory_reactions.USER_UPDATED: directory_reactions.on_user_updated,
    directory_reactions.MEMBERSHIP_CREATED: directory_reactions.on_membership_created,
    directory_reactions.MEMBERSHIP_UPDATED: directory_reactions.on_membership_updated,
    directory_reactions.MEMBERSHIP_DELETED: directory_reactions.on_membership_deleted,
    # The membership is mirrored by the directory; the handover answers its MembershipLeftStaff (IN_PROCESS).
    directory_reactions.MEMBERSHIP_STATUS_CHANGED: directory_reactions.on_membership_status_changed,
    LEAD_CREATED: leads_reactions.record_lead_created,
    leads_reactions.MINISITE_EVENT_PUBLISHED: leads_reactions.minisite_event_published,
    leads_reactions.MINISITE_EVENT_UPDATED: leads_reactions.minisite_event_published,
    leads_reactions.MINISITE_EVENT_ARCHIVED: leads_reactions.minisite_event_archived,
    leads_reactions.MEMBERSHIP_SELF_SIGNUP: leads_reactions.handle_membership_self_signup,
    leads_reactions.ENTITLEMENT_ACTIVATED: leads_reactions.handle_entitlement_activated,
    MEMBERSHIP_JOIN_RELEASED: released_joins.handle_join_released,
    LEAD_STATUS_CHANGED: task_closing.handle_lead_status_changed,
    LEAD_RETURNED_EVENT: follow_ups.sync_return_call,
    attribution.CONVERSATION_INBOUND_RECEIVED: attribution.handle_inbound_received,
    # SES's email sending events (source aws.ses, from the default bus): delivery status and suppression.
    **{detail_type: conversations_reactions.on_ses_event for detail_type in conversations_reactions.SES_DETAIL_TYPES},
}

# The growing tables the `retention_cleanup` job keeps in check, each with its owner's retention (README:
# Operate, Retention).
RETAINED: tuple[Retention, ...] = (
    idempotency.RETENTION,
    rate_limits.RETENTION,
    CLAIMS_RETENTION,
    APPLIED_EVENTS_RETENTION,
    outbox.RETENTION,
)

JOBS: dict[str, Callable[[], dict[str, int]]] = {
    "outbox_relay": outbox.relay_unpublished,
    "retention_cleanup": lambda: run_cleanup(RETAINED),
    "daily_digest": run_daily_digest,
    "rescore_leads": scoring.run_rescore_job,
    "nurture_reevaluation": run_nurture_reevaluation,
    "merge_snapshot_purge": purge_expired_snapshots,
    "deal_rotting_sweep": run_rotting_sweep,
    "ticket_sweep": run_ticket_sweep,
    "bulk_email": run_bulk_email,
    "queued_email_sweep": run_queued_email_sweep,
}


def subscribe_all() -> None:
    """Registers `IN_PROCESS` on the bus (called by the bus itself, on its first message)."""
    for message_type, handler in IN_PROCESS:
        messagebus.subscribe(message_type, handler)


def handle_event(conn: Connection, detail_type: str, detail: dict[str, Any]) -> bool:
    """Apply one event; True when it changed something. Unknown types are acknowledged and ignored."""
    reaction = EVENT_REACTIONS.get(detail_type)
    rescores = detail_type in scoring.RESCORING_EVENTS
    if reaction is None and not rescores:
        logger.info("ignoring event type", extra={"detailType": detail_type})
        return False
    changed = reaction(conn, detail) if reaction is not None else False
    if rescores:
        changed = scoring.handle_lead_changed(conn, detail) or changed
    return changed
