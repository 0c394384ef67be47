"""Which events a subscription may name, and the webhook event(s) one bus event becomes.

A receiver gets ids and the fields it needs to act (documented per type in the README, "Outbound webhooks");
never free text. `lead.converted` is not a bus event of its own: it is a `lead.status_changed` whose new
status is `converted`, named for the receivers that only care about conversions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# webhook event type -> the fields of the bus event's payload it carries (ids, codes, instants; no PII)
EVENT_FIELDS: dict[str, tuple[str, ...]] = {
    "lead.created": ("leadId", "source", "stageId", "campaignId", "actorUserId"),
    "lead.status_changed": ("leadId", "fromStatus", "toStatus", "fromStageId", "toStageId", "actorUserId"),
    "lead.converted": ("leadId", "fromStatus", "toStatus", "toStageId", "actorUserId"),
    "lead.returned": ("leadId", "via", "fromStatus", "toStatus", "returnCount", "ownerUserId", "actorUserId"),
    "lead.erased": ("leadId", "actorUserId"),
    "deal.created": ("dealId", "leadId", "membershipId", "stageId", "actorUserId"),
    "deal.stage_changed": (
        "dealId",
        "leadId",
        "membershipId",
        "fromStageId",
        "toStageId",
        "fromStatus",
        "toStatus",
        "actorUserId",
    ),
    "deal.stalled": ("dealId", "leadId", "membershipId", "stageId", "ownerUserId"),
    "ticket.created": (
        "ticketId",
        "number",
        "channel",
        "priority",
        "status",
        "queueId",
        "assigneeUserId",
        "actorUserId",
    ),
    "ticket.status_changed": ("ticketId", "fromStatus", "toStatus", "trigger", "actorUserId"),
    "ticket.assigned": ("ticketId", "assigneeUserId", "queueId", "actorUserId"),
    "membership.activated": ("leadId", "userId", "membershipId", "role"),
}
EVENT_TYPES: tuple[str, ...] = tuple(EVENT_FIELDS)
# Events about a lead, whose payload may carry the lead's contact (PII) when the subscription and the
# organization allow it; an erased lead has none.
LEAD_EVENTS = frozenset(t for t, fields in EVENT_FIELDS.items() if fields[0] == "leadId" and t != "lead.erased")
CONVERTED = "converted"
# The bus's own detail-types that fan out (lead.converted comes from lead.status_changed).
SOURCE_TYPES = frozenset(EVENT_TYPES) - {"lead.converted"}


def webhook_types(detail_type: str, payload: Mapping[str, Any]) -> list[str]:
    """The webhook event types one bus event is delivered as (none for an event no receiver can name)."""
    if detail_type not in SOURCE_TYPES:
        return []
    if detail_type == "lead.status_changed" and payload.get("toStatus") == CONVERTED:
        return [detail_type, "lead.converted"]
    return [detail_type]


def webhook_data(webhook_type: str, event: Mapping[str, Any]) -> dict[str, Any]:
    """The `data` of a delivery, without PII: the event's id, its aggregate, and the type's own fields."""
    payload = event.get("payload") or {}
    data: dict[str, Any] = {field: payload.get(field) for field in EVENT_FIELDS[webhook_type]}
    if "leadId" in data and data["leadId"] is None and webhook_type.startswith("lead."):
        data["leadId"] = event.get("aggregateId")
    if "dealId" in data and data["dealId"] is None:
        data["dealId"] = event.get("aggregateId")
    if "ticketId" in data and data["ticketId"] is None:
        data["ticketId"] = event.get("aggregateId")
    return data
