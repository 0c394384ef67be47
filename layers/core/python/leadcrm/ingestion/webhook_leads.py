"""G6 / G7: a lead that arrived through a Meta Lead Ads form or a click-to-WhatsApp ad.

Both go through the create every entry point shares (`leads.intake.intake_lead`: dedup by person, a
closed lead reopened, the auto-task, `lead.created`), under a natural key claimed in the same transaction
(`ingested_events`: leadgen_id, ctwa_clid or wamid). A redelivery finds the claim and writes nothing; a
concurrent one waits on the key until the first commits, then finds it. Every lead gets its campaign hook
and one `lead_attributions` row (ad, ad set, form, campaign, platform, external ref).
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from sqlalchemy import Connection, insert, update
from sqlalchemy.dialects.postgresql import insert as pg_insert

from leadcrm.ingestion.connections import active_connection
from leadcrm.ingestion.rules.meta import (
    META_CHANNEL,
    META_PROVIDER,
    WHATSAPP_CHANNEL,
    WHATSAPP_PROVIDER,
    WHATSAPP_SOURCE,
    FetchedMetaLead,
    WhatsAppMessage,
    map_meta_lead,
    meta_campaign_hook,
    whatsapp_campaign_hook,
)
from leadcrm.ingestion.tables import ingested_events, lead_attributions
from leadcrm.leads.activity import record_activity
from leadcrm.leads.campaigns import find_or_create_campaign
from leadcrm.leads.capture import RESUBMITTED_ACTIVITY
from leadcrm.leads.intake import DuplicateLead, NewLead, intake_lead, record_receipt
from leadcrm.leads.rules.returning import ReturnVia
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.ids import uuid7

logger = logging.getLogger(__name__)


class Outcome(StrEnum):
    CREATED = "created"  # a new lead
    REOPENED = "reopened"  # a closed lead of the person came back
    DUPLICATE = "duplicate"  # the person's open (or won) lead: receipt, timeline entry and attribution only
    REPLAYED = "replayed"  # this delivery was ingested before: nothing written
    NO_CONNECTION = "no_connection"  # no active connection for the account: dropped
    ORGANIC = "organic"  # a WhatsApp message without a click-to-WhatsApp referral: dropped


DROPPED = frozenset({Outcome.NO_CONNECTION, Outcome.ORGANIC})


@dataclass(frozen=True)
class Ingested:
    """What happened to one delivery (ids only: this is what gets logged)."""

    channel: str
    external_ref: str
    outcome: Outcome
    organization_id: uuid.UUID | None = None
    lead_id: uuid.UUID | None = None

    def log_fields(self) -> dict[str, Any]:
        return {
            "channel": self.channel,
            "externalRef": self.external_ref,
            "outcome": self.outcome.value,
            "organizationId": str(self.organization_id) if self.organization_id else None,
            "leadId": str(self.lead_id) if self.lead_id else None,
        }


@dataclass(frozen=True)
class WebhookLead:
    """An ingested lead, ready for intake: who, the hook, the attribution and the receipt."""

    channel: str
    external_ref: str
    via: ReturnVia
    new: NewLead
    hook: tuple[str, str] | None  # (external_ref, name) of the campaign hook
    attribution: dict[str, Any]  # platform, external_campaign_id/name, adset_id, ad_id, form_id
    received: dict[str, Any]


# --- Meta Lead Ads (G6) ----------------------------------------------------------------------------------


def ingest_meta_lead(fetched: FetchedMetaLead) -> Ingested:
    """One fetched Lead Ads lead (the graph_fetch function read it from Graph): route by page, take it in.
    Nothing here calls Graph: the ingestion function runs in the VPC without internet access."""
    change, graph_lead = fetched.change, fetched.graph_lead
    with UnitOfWork() as uow:
        connection = active_connection(uow.connection, META_PROVIDER, change.page_id)
    if connection is None:
        return Ingested(META_CHANNEL, change.leadgen_id, Outcome.NO_CONNECTION)
    mapped = map_meta_lead(graph_lead)
    lead = WebhookLead(
        channel=META_CHANNEL,
        external_ref=change.leadgen_id,
        via=ReturnVia.META,
        new=NewLead(name=mapped.name, email=mapped.email, phone=mapped.phone, note=mapped.note, source=mapped.source),
        hook=meta_campaign_hook(graph_lead, change),
        attribution={
            "platform": mapped.source,
            "external_campaign_id": graph_lead.get("campaign_id"),
            "external_campaign_name": graph_lead.get("campaign_name"),
            "adset_id": graph_lead.get("adset_id") or change.adgroup_id,
            "ad_id": graph_lead.get("ad_id") or change.ad_id,
            "form_id": graph_lead.get("form_id") or change.form_id,
        },
        received={"leadgenId": change.leadgen_id, "pageId": change.page_id, "lead": graph_lead},
    )
    return ingest(connection.organization_id, lead)


# --- click-to-WhatsApp (G7) ------------------------------------------------------------------------------


def ingest_whatsapp_message(message: WhatsAppMessage) -> Ingested:
    """One inbound message: only a click-to-WhatsApp referral makes a lead; organic messages are dropped."""
    if message.referral is None:
        return Ingested(WHATSAPP_CHANNEL, message.wamid, Outcome.ORGANIC)
    with UnitOfWork() as uow:
        connection = active_connection(uow.connection, WHATSAPP_PROVIDER, message.phone_number_id)
    if connection is None:
        return Ingested(WHATSAPP_CHANNEL, message.external_ref, Outcome.NO_CONNECTION)
    referral = message.referral
    lead = WebhookLead(
        channel=WHATSAPP_CHANNEL,
        external_ref=message.external_ref,
        via=ReturnVia.WHATSAPP,
        new=NewLead(name=message.profile_name, phone=message.phone, note=message.text, source=WHATSAPP_SOURCE),
        hook=whatsapp_campaign_hook(referral),
        attribution={
            "platform": WHATSAPP_SOURCE,
            "ad_id": referral.source_id if referral.source_type in (None, "ad") else None,
        },
        received={
            "wamid": message.wamid,
            "phoneNumberId": message.phone_number_id,
            "profileName": message.profile_name,
            "waId": message.wa_id,
            "text": message.text,
            "referral": {
                "sourceId": referral.source_id,
                "sourceType": referral.source_type,
                "headline": referral.headline,
                "ctwaClid": referral.ctwa_clid,
            },
        },
    )
    return ingest(connection.organization_id, lead)


# --- the shared intake -----------------------------------------------------------------------------------


def ingest(organization_id: uuid.UUID, lead: WebhookLead) -> Ingested:
    """Claim the natural key, take the lead in through `intake_lead`, attribute it; one transaction."""
    with UnitOfWork() as uow:
        conn = uow.connection
        if not _claim(conn, organization_id, lead.channel, lead.external_ref):
            return Ingested(lead.channel, lead.external_ref, Outcome.REPLAYED, organization_id)
        campaign_id = find_or_create_campaign(conn, organization_id, lead.channel, *lead.hook) if lead.hook else None
        new = replace(lead.new, campaign_id=campaign_id)
        try:
            intake = intake_lead(
                uow,
                organization_id,
                new,
                actor_user_id=None,
                channel=lead.channel,
                received=lead.received,
                via=lead.via,
            )
            lead_id, outcome = intake.lead["id"], Outcome(intake.outcome.value)
        except DuplicateLead as duplicate:
            lead_id, outcome = duplicate.existing.id, Outcome.DUPLICATE
            if not duplicate.existing.suppressed:  # a pseudonymized person: nothing of what they sent is kept
                _record_resubmission(conn, organization_id, lead_id, lead, campaign_id)
        conn.execute(
            insert(lead_attributions).values(
                id=uuid7(),
                organization_id=organization_id,
                lead_id=lead_id,
                channel=lead.channel,
                campaign_id=campaign_id,
                external_ref=lead.external_ref,
                **{k: (str(v) if v is not None else None) for k, v in lead.attribution.items()},
            )
        )
        conn.execute(
            update(ingested_events)
            .where(ingested_events.c.channel == lead.channel, ingested_events.c.external_ref == lead.external_ref)
            .values(lead_id=lead_id, outcome=outcome.value)
        )
        uow.commit()
    return Ingested(lead.channel, lead.external_ref, outcome, organization_id, lead_id)


def _claim(conn: Connection, organization_id: uuid.UUID, channel: str, external_ref: str) -> bool:
    """True when this transaction owns the delivery. A concurrent claimant waits here on the primary key
    until the owner commits (then it is a replay) or rolls back (then it owns it)."""
    claimed = conn.execute(
        pg_insert(ingested_events)
        .values(channel=channel, external_ref=external_ref, organization_id=organization_id, outcome="created")
        .on_conflict_do_nothing(index_elements=["channel", "external_ref"])
        .returning(ingested_events.c.external_ref)
    ).first()
    return claimed is not None


def _record_resubmission(
    conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID, lead: WebhookLead, campaign_id: uuid.UUID | None
) -> None:
    """The person's lead is open (or won): what they sent is kept on a duplicate receipt and staff see it on
    the timeline, as for a minisite resubmission. The lead's own fields and campaign are left as they are."""
    receipt_id = record_receipt(
        conn, organization_id, lead_id, lead.channel, lead.received, duplicate=True, campaign_id=campaign_id
    )
    record_activity(
        conn,
        organization_id,
        lead_id,
        RESUBMITTED_ACTIVITY,
        {
            "channel": lead.channel,
            "receiptId": str(receipt_id),
            "campaignId": str(campaign_id) if campaign_id else None,
        },
    )
