"""Conversions API for CRM: an organization's settings per Meta connection (owner/admin), and what the CRM event
reactions read about a lead (`lead_facts`, `crm_target`).

Settings are one row per connection (`meta_crm_settings`): the Meta dataset the events go to, on/off, whether
hashed email and phone may go with them, and the organization's name for each stage (a stage left out is sent
under its own name). The token is the connection's own secret (the page's access token), read by the sender.
A PUT replaces the settings whole; the same PUT again writes nothing (not even `updated_at`), so a retried or
concurrent PUT has one effect.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, and_, exists, func, literal, or_, select
from sqlalchemy.dialects.postgresql import insert as pg_insert

from leadcrm.conversations.consent import REVOKED, ConsentChannel
from leadcrm.conversations.tables import lead_consents
from leadcrm.directory.rules import Actor
from leadcrm.ingestion.rules.meta import META_CHANNEL, META_PROVIDER
from leadcrm.ingestion.rules.meta_crm import LeadFacts
from leadcrm.ingestion.tables import integration_connections, lead_attributions, meta_crm_settings
from leadcrm.leads.tables import lead_pseudonyms, lead_receipts, leads
from leadcrm.pipelines.tables import pipeline_stages
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import Conflict, NotFound

ACTIVE = "active"
CHANNELS = len(ConsentChannel)


@dataclass(frozen=True)
class CrmSettings:
    dataset_id: str
    enabled: bool
    send_hashed_contact: bool
    stage_event_names: dict[str, str]


@dataclass(frozen=True)
class CrmTarget:
    """Where a lead's CRM events go: its page's active connection and that connection's settings."""

    connection_id: uuid.UUID
    page_id: str
    settings: CrmSettings


def _connection(conn: Connection, organization_id: uuid.UUID, connection_id: uuid.UUID) -> Any:
    row = conn.execute(
        select(
            integration_connections.c.id,
            integration_connections.c.external_account_id,
            integration_connections.c.status,
        ).where(
            integration_connections.c.id == connection_id,
            integration_connections.c.organization_id == organization_id,
            integration_connections.c.provider == META_PROVIDER,
        )
    ).first()
    if row is None:
        raise NotFound("No such connection.", code="CONNECTION_NOT_FOUND")
    return row


def _view(connection: Any, row: Any) -> dict[str, Any]:
    return {
        "connection_id": connection.id,
        "page_id": connection.external_account_id,
        "configured": row is not None,
        "dataset_id": row.dataset_id if row is not None else None,
        "enabled": bool(row.enabled) if row is not None else False,
        "send_hashed_contact": bool(row.send_hashed_contact) if row is not None else False,
        "stage_event_names": dict(row.stage_event_names) if row is not None else {},
        "updated_at": row.updated_at if row is not None else None,
    }


_SETTINGS_COLUMNS = (
    meta_crm_settings.c.dataset_id,
    meta_crm_settings.c.enabled,
    meta_crm_settings.c.send_hashed_contact,
    meta_crm_settings.c.stage_event_names,
    meta_crm_settings.c.updated_at,
)


def get_settings(conn: Connection, organization_id: uuid.UUID, connection_id: uuid.UUID) -> dict[str, Any]:
    """The connection's settings (`configured: false` and everything off before the first PUT). 404
    CONNECTION_NOT_FOUND for another organization's connection or a WhatsApp one."""
    connection = _connection(conn, organization_id, connection_id)
    row = conn.execute(select(*_SETTINGS_COLUMNS).where(meta_crm_settings.c.connection_id == connection.id)).first()
    return _view(connection, row)


def put_settings(uow: UnitOfWork, actor: Actor, connection_id: uuid.UUID, settings: CrmSettings) -> dict[str, Any]:
    """Replace the connection's settings; commits. 404 CONNECTION_NOT_FOUND, 409 CONNECTION_NOT_ACTIVE for a
    disconnected page (no token to send with), 404 STAGE_NOT_FOUND for a mapped stage that is not one of the
    organization's."""
    conn = uow.connection
    connection = _connection(conn, actor.organization_id, connection_id)
    if connection.status != ACTIVE:
        raise Conflict("The page is disconnected: reconnect it first.", code="CONNECTION_NOT_ACTIVE")
    _require_stages(conn, actor.organization_id, settings.stage_event_names)
    values = {
        "dataset_id": settings.dataset_id,
        "enabled": settings.enabled,
        "send_hashed_contact": settings.send_hashed_contact,
        "stage_event_names": settings.stage_event_names,
    }
    statement = pg_insert(meta_crm_settings).values(
        connection_id=connection.id, organization_id=actor.organization_id, updated_by_user_id=actor.user_id, **values
    )
    changed = [meta_crm_settings.c[name].is_distinct_from(statement.excluded[name]) for name in values]
    conn.execute(
        statement.on_conflict_do_update(
            index_elements=[meta_crm_settings.c.connection_id],
            set_={
                **{name: statement.excluded[name] for name in values},
                "updated_by_user_id": actor.user_id,
                "updated_at": sql_now(),
            },
            where=or_(*changed),  # the same settings again write nothing
        )
    )
    view = get_settings(conn, actor.organization_id, connection.id)
    uow.commit()
    return view


def _require_stages(conn: Connection, organization_id: uuid.UUID, mapping: dict[str, str]) -> None:
    if not mapping:
        return
    try:
        ids = {uuid.UUID(key) for key in mapping}
    except ValueError:
        raise NotFound("Stage not found.", code="STAGE_NOT_FOUND") from None
    found = conn.execute(
        select(func.count()).where(pipeline_stages.c.organization_id == organization_id, pipeline_stages.c.id.in_(ids))
    ).scalar_one()
    if found != len(ids):
        raise NotFound("Stage not found.", code="STAGE_NOT_FOUND")


# --- what the reactions read ------------------------------------------------------------------------------


@dataclass(frozen=True)
class LeadRecord:
    facts: LeadFacts
    email: str | None
    phone: str | None
    page_id: str | None


def lead_facts(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> LeadRecord:
    """One statement: the lead (contact details), whether it is pseudonymized, how many channels it revoked,
    its first Lead Ads leadgen id and the page that leadgen came to (its receipt)."""
    meta = (
        select(
            lead_attributions.c.external_ref.label("leadgen_id"), lead_receipts.c.payload["pageId"].astext.label("page")
        )
        .select_from(lead_attributions)
        .outerjoin(
            lead_receipts,
            and_(
                lead_receipts.c.organization_id == lead_attributions.c.organization_id,
                lead_receipts.c.lead_id == lead_attributions.c.lead_id,
                lead_receipts.c.channel == META_CHANNEL,
                lead_receipts.c.payload["leadgenId"].astext == lead_attributions.c.external_ref,
            ),
        )
        .where(
            lead_attributions.c.organization_id == organization_id,
            lead_attributions.c.lead_id == lead_id,
            lead_attributions.c.channel == META_CHANNEL,
        )
        .order_by(lead_attributions.c.created_at, lead_attributions.c.id)
        .limit(1)
        .lateral("meta")
    )
    pseudonymized = exists().where(lead_pseudonyms.c.lead_id == lead_id)
    revoked = (
        select(func.count())
        .where(
            lead_consents.c.organization_id == organization_id,
            lead_consents.c.lead_id == lead_id,
            lead_consents.c.status == REVOKED,
        )
        .scalar_subquery()
    )
    row = conn.execute(
        select(
            leads.c.email,
            leads.c.phone,
            pseudonymized.label("pseudonymized"),
            revoked.label("revoked"),
            meta.c.leadgen_id,
            meta.c.page,
        )  # fmt: skip
        .select_from(leads.outerjoin(meta, literal(True)))
        .where(leads.c.id == lead_id, leads.c.organization_id == organization_id)
    ).first()
    if row is None:
        return LeadRecord(LeadFacts(False, False, 0, None), None, None, None)
    return LeadRecord(
        LeadFacts(True, bool(row.pseudonymized), int(row.revoked), row.leadgen_id), row.email, row.phone, row.page
    )


def crm_target(conn: Connection, organization_id: uuid.UUID, page_id: str | None) -> CrmTarget | None:
    """The organization's active connection to the page, with its CRM events on; None otherwise."""
    if not page_id:
        return None
    row = conn.execute(
        select(integration_connections.c.id, *_SETTINGS_COLUMNS)
        .join(meta_crm_settings, meta_crm_settings.c.connection_id == integration_connections.c.id)
        .where(
            integration_connections.c.organization_id == organization_id,
            integration_connections.c.provider == META_PROVIDER,
            integration_connections.c.external_account_id == page_id,
            integration_connections.c.status == ACTIVE,
            meta_crm_settings.c.enabled.is_(True),
        )
    ).first()
    if row is None:
        return None
    settings = CrmSettings(row.dataset_id, row.enabled, row.send_hashed_contact, dict(row.stage_event_names))
    return CrmTarget(row.id, page_id, settings)


def connection_active(conn: Connection, connection_id: uuid.UUID | None) -> bool:
    if connection_id is None:
        return False
    status = conn.execute(
        select(integration_connections.c.status).where(integration_connections.c.id == connection_id)
    ).scalar_one_or_none()
    return status == ACTIVE


def stage_name(conn: Connection, organization_id: uuid.UUID, stage_id: uuid.UUID) -> str | None:
    return conn.execute(
        select(pipeline_stages.c.name).where(
            pipeline_stages.c.id == stage_id, pipeline_stages.c.organization_id == organization_id
        )
    ).scalar_one_or_none()
