"""A Meta Lead Ads lead or a WhatsApp message, read into the lead it makes before any I/O (`read`), and what
became of each delivery (`Ingested`, `Outcome`). The intake itself is leadcrm.ingestion.webhook_leads."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

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
from leadcrm.leads.intake import NewLead
from leadcrm.leads.rules.returning import ReturnVia


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


Delivery = FetchedMetaLead | WhatsAppMessage
ATTRIBUTION_FIELDS = ("platform", "external_campaign_id", "external_campaign_name", "adset_id", "ad_id", "form_id")


@dataclass(frozen=True)
class Routable:
    """A delivery read into its lead, waiting for the connection of the account it came to."""

    provider: str
    account_id: str
    lead: WebhookLead


def read(delivery: Delivery) -> Ingested | Routable:
    """A delivery in Python terms, before any I/O: the lead it makes, or why it makes none."""
    if isinstance(delivery, FetchedMetaLead):
        return Routable(META_PROVIDER, delivery.change.page_id, _meta_lead(delivery))
    if delivery.referral is None:
        return Ingested(WHATSAPP_CHANNEL, delivery.wamid, Outcome.ORGANIC)
    return Routable(WHATSAPP_PROVIDER, delivery.phone_number_id, _whatsapp_lead(delivery))


# --- Meta Lead Ads (G6) ----------------------------------------------------------------------------------


def _meta_lead(fetched: FetchedMetaLead) -> WebhookLead:
    change, graph_lead = fetched.change, fetched.graph_lead
    mapped = map_meta_lead(graph_lead)
    form_id = graph_lead.get("form_id") or change.form_id
    return WebhookLead(
        channel=META_CHANNEL,
        external_ref=change.leadgen_id,
        via=ReturnVia.META,
        new=NewLead(
            name=mapped.name,
            email=mapped.email,
            phone=mapped.phone,
            note=mapped.note,
            source=mapped.source,
            form_ref=str(form_id) if form_id else None,  # what an assignment rule's form condition matches
        ),
        hook=meta_campaign_hook(graph_lead, change),
        attribution={
            "platform": mapped.source,
            "external_campaign_id": graph_lead.get("campaign_id"),
            "external_campaign_name": graph_lead.get("campaign_name"),
            "adset_id": graph_lead.get("adset_id") or change.adgroup_id,
            "ad_id": graph_lead.get("ad_id") or change.ad_id,
            "form_id": form_id,
        },
        received={"leadgenId": change.leadgen_id, "pageId": change.page_id, "lead": graph_lead},
    )


# --- click-to-WhatsApp (G7) ------------------------------------------------------------------------------


def _whatsapp_lead(message: WhatsAppMessage) -> WebhookLead:
    referral = message.referral
    assert referral is not None  # organic messages were dropped by the caller
    return WebhookLead(
        channel=WHATSAPP_CHANNEL,
        external_ref=message.external_ref,
        via=ReturnVia.WHATSAPP,
        new=NewLead(
            name=message.profile_name,
            phone=message.phone,
            note=message.text,
            source=WHATSAPP_SOURCE,
            form_ref=message.phone_number_id,  # the number it came through: an assignment rule may match it
        ),
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
