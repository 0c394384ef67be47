"""Attribution: the touch log, the audited correction of a lead's acquisition, campaign spend, and the
per-campaign report (customers, CAC, first-touch / last-touch / linear credit). Rules: leads.rules.touches.

Where touches come from: intake writes them (leads.touches), and `conversation.inbound_received`
(task_lifecycle) adds one for a message from a lead, once per event id.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Connection,
    DateTime,
    Text,
    Uuid,
    literal,
    select,
    true,
    update,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.dialects.postgresql import insert as pg_insert

from leadcrm.directory.rules import Actor
from leadcrm.leads.activity import record_activity
from leadcrm.leads.campaigns import require_attachable_campaign
from leadcrm.leads.rules.touches import (
    TouchKind,
)
from leadcrm.leads.tables import lead_touches, leads
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.errors import NotFound
from leadcrm.platform.events import CONVERSATION_INBOUND_RECEIVED as CONVERSATION_INBOUND_RECEIVED
from leadcrm.platform.ids import parse_uuid, uuid7

logger = logging.getLogger(__name__)

ATTRIBUTION_CORRECTED = "attribution_corrected"
TOUCH_LOG_LIMIT = 200

TOUCH_COLUMNS = (
    lead_touches.c.id,
    lead_touches.c.kind,
    lead_touches.c.channel,
    lead_touches.c.is_first,
    lead_touches.c.occurred_at,
    lead_touches.c.campaign_id,
    lead_touches.c.utm_source,
    lead_touches.c.utm_medium,
    lead_touches.c.utm_campaign,
    lead_touches.c.utm_term,
    lead_touches.c.utm_content,
    lead_touches.c.detail,
)


# -- touches from intake -----------------------------------------------------------------------------------


def handle_inbound_received(conn: Connection, detail: dict[str, Any]) -> bool:
    """`conversation.inbound_received` (outbox envelope; payload {organizationId, conversationId, leadId|null,
    messageId, channel}): a message from a lead is a touch, appended once per event id. A message on a
    thread without a lead (a member's), of a lead erased since, or of another organization appends nothing;
    a malformed event is logged and acknowledged (a retry could never make it valid)."""
    try:
        event_id = uuid.UUID(str(detail["eventId"]))
        organization_id = uuid.UUID(str(detail["organizationId"]))
        payload = detail["payload"]
        raw_lead_id = payload.get("leadId")
        channel = str(payload.get("channel") or "other")[:32]
        occurred_at = datetime.fromisoformat(str(detail["occurredAt"])) if detail.get("occurredAt") else None
    except (KeyError, TypeError, ValueError, AttributeError):
        logger.warning("conversation.inbound_received dropped: malformed", extra={"eventId": detail.get("eventId")})
        return False
    lead_id = parse_uuid(str(raw_lead_id)) if raw_lead_id else None
    if lead_id is None:
        return False
    kind = TouchKind.EMAIL_REPLY if channel == "email" else TouchKind.MESSAGE
    values = {
        "id": literal(uuid7(), Uuid),
        "organization_id": leads.c.organization_id,
        "lead_id": leads.c.id,
        "kind": literal(kind.value, Text),
        "channel": literal(channel, Text),
        "occurred_at": literal(occurred_at, DateTime(timezone=True)) if occurred_at else sql_now(),
        "detail": literal(
            {
                "conversationId": payload.get("conversationId"),
                "messageId": payload.get("messageId"),
                "eventId": str(event_id),
            },
            JSONB,
        ),
        "source_event_id": literal(event_id, Uuid),
    }
    source = select(*values.values()).where(leads.c.organization_id == organization_id, leads.c.id == lead_id)
    statement = (
        pg_insert(lead_touches)
        .from_select(list(values), source)
        .on_conflict_do_nothing(
            index_elements=["organization_id", "source_event_id"],
            index_where=lead_touches.c.source_event_id.isnot(None),
        )
        .returning(lead_touches.c.id)
    )
    return conn.execute(statement).first() is not None


# -- a lead's attribution ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class LeadAttribution:
    first_touch: dict[str, Any] | None
    touches: list[dict[str, Any]]  # every touch, the first included, oldest first (up to TOUCH_LOG_LIMIT)


def _require_lead(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID, *, lock: bool = False) -> None:
    statement = select(leads.c.id).where(leads.c.organization_id == organization_id, leads.c.id == lead_id)
    if conn.execute(statement.with_for_update() if lock else statement).first() is None:
        raise NotFound("Lead not found.", code="LEAD_NOT_FOUND")


def lead_attribution(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> LeadAttribution:
    _require_lead(conn, organization_id, lead_id)
    rows = [
        dict(r)
        for r in conn.execute(
            select(*TOUCH_COLUMNS)
            .where(lead_touches.c.organization_id == organization_id, lead_touches.c.lead_id == lead_id)
            .order_by(lead_touches.c.is_first.desc(), lead_touches.c.occurred_at, lead_touches.c.id)
            .limit(TOUCH_LOG_LIMIT)
        ).mappings()
    ]
    first = next((r for r in rows if r["is_first"]), None)
    return LeadAttribution(first_touch=first, touches=rows)


def correct_attribution(
    conn: Connection,
    actor: Actor,
    lead_id: uuid.UUID,
    *,
    channel: str,
    campaign_id: uuid.UUID | None,
    reason: str,
) -> LeadAttribution:
    """Staff correct a lead's acquisition (spec "Campaign source unknown"): the first touch's channel and
    campaign change (the UTM parameters it arrived with stay as received), the lead's campaign hook follows,
    and an `attribution_corrected` timeline entry keeps who, why, and what it was before. The only way a
    first touch ever changes. 404 LEAD_NOT_FOUND; 400 CAMPAIGN_NOT_FOUND."""
    organization_id = actor.organization_id
    _require_lead(conn, organization_id, lead_id, lock=True)
    if campaign_id is not None:
        require_attachable_campaign(conn, organization_id, campaign_id)
    before = conn.execute(
        select(lead_touches.c.channel, lead_touches.c.campaign_id).where(
            lead_touches.c.organization_id == organization_id,
            lead_touches.c.lead_id == lead_id,
            lead_touches.c.is_first,
        )
    ).first()
    # A lead without a first touch (none should remain after migration 0015) gets one at its creation time.
    upsert = pg_insert(lead_touches).from_select(
        ["id", "organization_id", "lead_id", "kind", "channel", "is_first", "occurred_at", "campaign_id", "detail"],
        select(
            literal(uuid7(), Uuid),
            leads.c.organization_id,
            leads.c.id,
            literal(TouchKind.OTHER.value, Text),
            literal(channel, Text),
            true(),
            leads.c.created_at,
            literal(campaign_id, Uuid),
            literal({}, JSONB),
        ).where(leads.c.organization_id == organization_id, leads.c.id == lead_id),
    )
    conn.execute(
        upsert.on_conflict_do_update(
            index_elements=["organization_id", "lead_id"],
            index_where=lead_touches.c.is_first,
            set_={"channel": upsert.excluded.channel, "campaign_id": upsert.excluded.campaign_id},
        )
    )
    conn.execute(
        update(leads)
        .where(leads.c.organization_id == organization_id, leads.c.id == lead_id)
        .values(campaign_id=campaign_id, updated_at=sql_now())
    )
    record_activity(
        conn,
        organization_id,
        lead_id,
        ATTRIBUTION_CORRECTED,
        {
            "from": {
                "channel": before.channel if before else None,
                "campaignId": str(before.campaign_id) if before and before.campaign_id else None,
            },
            "to": {"channel": channel, "campaignId": str(campaign_id) if campaign_id else None},
            # Free text a person wrote: under `note`, which a pseudonymized erasure scrubs from the timeline.
            "note": reason,
        },
        actor.user_id,
    )
    return lead_attribution(conn, organization_id, lead_id)


# -- campaign spend ----------------------------------------------------------------------------------------


# -- the attribution report --------------------------------------------------------------------------------
