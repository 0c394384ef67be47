"""The composition root: what reacts to what, in one place.

- `IN_PROCESS`: messages a capability publishes inside its own unit of work (platform.messagebus) and the
  handlers of higher capabilities that answer them, in order. This is how a lower capability causes work in a
  higher one without importing it (the capabilities' import order is declared in pyproject's contracts).
- `EVENT_REACTIONS`: domain events from the bus (the outbox, through EventBridge and SQS) and platform events,
  each with the capability reaction that applies it; the events of `scoring.RESCORING_EVENTS` also rescore
  their lead, beside their own reaction, those of `META_CRM_EVENTS` also become Meta CRM events
  (leadcrm.ingestion.meta_crm_events) and those of `WEBHOOK_EVENTS` outbound webhook deliveries
  (leadcrm.integrations.fanout); SES's email sending events (detail-types `Email …`) are here too.
  Consumed by functions/task_lifecycle.
- `JOBS`: the scheduled jobs (EventBridge Scheduler `{"job": name}`), each a capability's job function.

Nothing below the capabilities imports this module; the bus loads it on its first message.

Every reaction and job is named here by module and function (`Deferred`) and imported on its first call:
task_lifecycle handles one kind of event or job an invocation, and the API publishes one kind of message a
request, so importing every capability with this table was most of their cold starts. The detail-types are
written out for the same reason; tests/unit/platform/test_wiring.py checks each against the constant its
capability declares, and each reference against the function it names.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from typing import Any

from sqlalchemy import Connection

from leadcrm.conversations.jobs import APPLIED_EVENTS_RETENTION, WHATSAPP_STATUSES_RETENTION
from leadcrm.directory.messages import HeldEventsReleased, MembershipLeftStaff
from leadcrm.ingestion.jobs import CLAIMS_RETENTION
from leadcrm.integrations.retention import DELIVERIES_RETENTION
from leadcrm.leads import rate_limits
from leadcrm.leads.messages import (
    LeadBecameMember,
    LeadCreated,
    LeadErasing,
    LeadsCreated,
    ScoringInputsChanged,
)
from leadcrm.platform import idempotency, messagebus, outbox
from leadcrm.platform.retention import Retention, run_cleanup

logger = logging.getLogger(__name__)

EventReaction = Callable[[Connection, dict[str, Any]], bool]


class Deferred:
    """`module.name`, a capability's function, imported when it is first called (or `target` first read)."""

    __slots__ = ("module", "name", "_target")

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name
        self._target: Callable[..., Any] | None = None

    @property
    def target(self) -> Callable[..., Any]:
        if self._target is None:
            self._target = getattr(importlib.import_module(self.module), self.name)
        return self._target

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.target(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Deferred({self.module}.{self.name})"


def _in(module: str) -> Callable[[str], Deferred]:
    return lambda name: Deferred(f"leadcrm.{module}", name)


_directory = _in("directory.reactions")
_leads = _in("leads.reactions")
_ses_event = Deferred("leadcrm.conversations.reactions", "on_ses_event")
# scoring.RESCORING_EVENTS: the events that also rescore their lead
RESCORING_EVENTS = frozenset({"lead.created", "lead.returned", "conversation.inbound_received"})
_rescore = Deferred("leadcrm.qualification.scoring", "handle_lead_changed")
# ingestion.meta_crm_events.STAGE_EVENTS: the events whose stage change also becomes a Meta CRM event (a
# Lead Ads lead's, where its organization turned CRM events on), beside their own reaction
META_CRM_EVENTS = frozenset({"lead.created", "lead.status_changed"})
_meta_crm_event = Deferred("leadcrm.ingestion.meta_crm_events", "on_stage_event")
# integrations.rules.events.SOURCE_TYPES: the events that also become outbound webhook deliveries
WEBHOOK_EVENTS = frozenset(
    {
        "lead.created",
        "lead.status_changed",
        "lead.returned",
        "lead.erased",
        "deal.created",
        "deal.stage_changed",
        "deal.stalled",
        "ticket.created",
        "ticket.status_changed",
        "ticket.assigned",
        "membership.activated",
    }
)
_fan_out = Deferred("leadcrm.integrations.fanout", "fan_out")
# What the events of each set do beside their own reaction, in this order.
ALSO_REACTIONS: tuple[tuple[frozenset[str], EventReaction], ...] = (
    (RESCORING_EVENTS, _rescore),
    (META_CRM_EVENTS, _meta_crm_event),
    (WEBHOOK_EVENTS, _fan_out),
)


def replay_held_events(conn: Connection, message: HeldEventsReleased) -> bool:
    """Events the directory held until their membership was active (a self-signup before its membership),
    applied now, in the transaction that made it active, exactly as if they had just arrived."""
    changed = False
    for detail_type, detail in message.events:
        changed = handle_event(conn, detail_type, detail) or changed
    return changed


IN_PROCESS: tuple[tuple[type, Callable[[Connection, Any], Any]], ...] = (
    (LeadCreated, Deferred("leadcrm.work.reactions", "contact_task_for_new_lead")),
    (LeadsCreated, Deferred("leadcrm.work.reactions", "contact_tasks_for_new_leads")),
    (ScoringInputsChanged, Deferred("leadcrm.qualification.reactions", "rescore_changed_leads")),
    (LeadErasing, Deferred("leadcrm.qualification.reactions", "same_person_as_erased_lead")),
    (LeadErasing, Deferred("leadcrm.deals.reactions", "forget_person_on_deals")),
    (LeadErasing, Deferred("leadcrm.work.reactions", "delete_tasks_of_erased_lead")),
    (LeadBecameMember, Deferred("leadcrm.deals.reactions", "link_member_on_deals")),
    (MembershipLeftStaff, Deferred("leadcrm.deals.owner_departure", "hand_over_for_departure")),
    (HeldEventsReleased, replay_held_events),
)

EVENT_REACTIONS: dict[str, EventReaction] = {
    "organization.created": _directory("on_organization_created"),
    "organization.updated": _directory("on_organization_updated"),
    "organization.deleted": _directory("on_organization_deleted"),
    "user.created": _directory("on_user_created"),
    "user.updated": _directory("on_user_updated"),
    "membership.created": _directory("on_membership_created"),
    "membership.updated": _directory("on_membership_updated"),
    "membership.deleted": _directory("on_membership_deleted"),
    # The membership is mirrored by the directory; the handover answers its MembershipLeftStaff (IN_PROCESS).
    "membership.status_changed": _directory("on_membership_status_changed"),
    "lead.created": _leads("record_lead_created"),
    "minisite_event.published": _leads("minisite_event_published"),
    "minisite_event.updated": _leads("minisite_event_published"),
    "minisite_event.archived": _leads("minisite_event_archived"),
    "membership.self_signup": _leads("handle_membership_self_signup"),
    "entitlement.activated": _leads("handle_entitlement_activated"),
    "membership.join_released": Deferred("leadcrm.leads.released_joins", "handle_join_released"),
    "lead.status_changed": Deferred("leadcrm.work.task_closing", "handle_lead_status_changed"),
    "lead.returned": Deferred("leadcrm.work.follow_ups", "sync_return_call"),
    "conversation.inbound_received": Deferred("leadcrm.analytics.attribution", "handle_inbound_received"),
    # A recorded CRM event, checked again and handed to the meta_events function (outside the VPC).
    "lead.crm_event_recorded": Deferred("leadcrm.ingestion.meta_crm_events", "hand_to_sender"),
    # the webhook_delivery function's report of one attempt (source leadcrm.webhook_delivery)
    "webhook.delivery_attempted": Deferred("leadcrm.integrations.deliveries", "record_attempt"),
    # SES's email sending events (source aws.ses, from the default bus): delivery status and suppression
    # (conversations.reactions.SES_DETAIL_TYPES).
    "Email Sent": _ses_event,
    "Email Delivered": _ses_event,
    "Email Bounced": _ses_event,
    "Email Complaint Received": _ses_event,
    "Email Rejected": _ses_event,
    "Email Delivery Delayed": _ses_event,
}

# The growing tables the `retention_cleanup` job keeps in check, each with its owner's retention (README:
# Operate, Retention).
RETAINED: tuple[Retention, ...] = (
    idempotency.RETENTION,
    rate_limits.RETENTION,
    CLAIMS_RETENTION,
    APPLIED_EVENTS_RETENTION,
    WHATSAPP_STATUSES_RETENTION,
    outbox.RETENTION,
    DELIVERIES_RETENTION,
)

JOBS: dict[str, Callable[[], dict[str, int]]] = {
    "outbox_relay": outbox.relay_unpublished,
    "retention_cleanup": lambda: run_cleanup(RETAINED),
    "daily_digest": Deferred("leadcrm.work.digest", "run_daily_digest"),
    "rescore_leads": Deferred("leadcrm.qualification.scoring", "run_rescore_job"),
    "nurture_reevaluation": Deferred("leadcrm.qualification.qualification", "run_nurture_reevaluation"),
    "merge_snapshot_purge": Deferred("leadcrm.qualification.jobs", "purge_expired_snapshots"),
    "deal_rotting_sweep": Deferred("leadcrm.deals.rotting", "run_rotting_sweep"),
    "ticket_sweep": Deferred("leadcrm.tickets.sweep", "run_ticket_sweep"),
    "bulk_email": Deferred("leadcrm.conversations.bulk_email", "run_bulk_email"),
    "queued_email_sweep": Deferred("leadcrm.conversations.queued_sweep", "run_queued_email_sweep"),
    "webhook_delivery_sweep": Deferred("leadcrm.integrations.fanout", "run_delivery_sweep"),
    "analytics_fold": Deferred("leadcrm.analytics.rollup_queue", "run_fold_job"),
}


def subscribe_all() -> None:
    """Registers `IN_PROCESS` on the bus (called by the bus itself, on its first message)."""
    for message_type, handler in IN_PROCESS:
        messagebus.subscribe(message_type, handler)


def handle_event(conn: Connection, detail_type: str, detail: dict[str, Any]) -> bool:
    """Apply one event; True when it changed something. Unknown types are acknowledged and ignored."""
    reaction = EVENT_REACTIONS.get(detail_type)
    besides = [also for events, also in ALSO_REACTIONS if detail_type in events]
    if reaction is None and not besides:
        logger.info("ignoring event type", extra={"detailType": detail_type})
        return False
    changed = reaction(conn, detail) if reaction is not None else False
    for also in besides:
        changed = also(conn, detail) or changed
    return changed
