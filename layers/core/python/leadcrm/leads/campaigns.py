"""Campaign hooks (`lead_campaigns`): which exact ad, form or surface brought a lead (spec "Campaign hooks").

Integrations and minisite surfaces find-or-create a hook on (organization, channel, external_ref); staff make
manual buckets (no external_ref) and attach an existing hook to a lead they create.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from functools import cache
from typing import Any

from sqlalchemy import Connection, Select, Text, Uuid, bindparam, func, insert, select, tuple_, update
from sqlalchemy.dialects.postgresql import insert as pg_insert

from leadcrm.leads.tables import lead_campaigns
from leadcrm.platform.db.inserts import insert_skipping_conflicts
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.db.recordsets import recordset, recordset_document
from leadcrm.platform.errors import BadRequest, NotFound
from leadcrm.platform.ids import uuid7
from leadcrm.platform.keyset import decode_keyset, encode_keyset

MANUAL_CHANNEL = "manual"

CAMPAIGN_COLUMNS = (
    lead_campaigns.c.id,
    lead_campaigns.c.name,
    lead_campaigns.c.channel,
    lead_campaigns.c.external_ref,
    lead_campaigns.c.color,
    lead_campaigns.c.archived_at,
    lead_campaigns.c.created_at,
    lead_campaigns.c.updated_at,
)


def find_or_create_campaign(
    conn: Connection, organization_id: uuid.UUID, channel: str, external_ref: str, name: str
) -> uuid.UUID:
    """The hook for (organization, channel, external_ref), minted on first use; safe under concurrency.

    Of two transactions minting the same hook, the second waits on the unique index until the first
    commits, inserts nothing, and then reads the winner's row (READ COMMITTED: the SELECT is a new
    statement and sees it). An archived hook is still returned: attribution stays truthful after staff
    hid the hook from their pickers.
    """
    created = conn.execute(
        pg_insert(lead_campaigns)
        .values(id=uuid7(), organization_id=organization_id, name=name, channel=channel, external_ref=external_ref)
        .on_conflict_do_nothing(
            index_elements=["organization_id", "channel", "external_ref"],
            index_where=lead_campaigns.c.external_ref.isnot(None),
        )
        .returning(lead_campaigns.c.id)
    ).scalar()
    if created is not None:
        return created
    return conn.execute(
        select(lead_campaigns.c.id).where(
            lead_campaigns.c.organization_id == organization_id,
            lead_campaigns.c.channel == channel,
            lead_campaigns.c.external_ref == external_ref,
        )
    ).scalar_one()


def find_or_create_campaigns(
    conn: Connection, organization_id: uuid.UUID, channel: str, hooks: dict[str, str]
) -> dict[str, uuid.UUID]:
    """`find_or_create_campaign` for many hooks of one channel at once (external_ref -> name): one statement
    whatever their number (two when a concurrent transaction minted one of them meanwhile). The refs are
    inserted in sorted order, so two batches minting the same hooks wait for each other on the first they
    share instead of deadlocking."""
    if not hooks:
        return {}
    refs = sorted(hooks)
    rows = [{"id": uuid7(), "name": hooks[ref], "external_ref": ref} for ref in refs]
    parameters = {"hooks_organization_id": organization_id, "hooks_channel": channel}
    created = conn.execute(_hooks_statement(), {"campaign_hooks": recordset_document(rows), **parameters}).all()
    found = {row.external_ref: row.id for row in created}
    if missing := [ref for ref in refs if ref not in found]:
        # Minted by a concurrent transaction we waited for, after this statement began: a new one sees it.
        rows = conn.execute(
            select(lead_campaigns.c.external_ref, lead_campaigns.c.id).where(
                lead_campaigns.c.organization_id == organization_id,
                lead_campaigns.c.channel == channel,
                lead_campaigns.c.external_ref.in_(missing),
            )
        ).all()
        found.update({row.external_ref: row.id for row in rows})
    return found


@cache
def _hooks_statement() -> Select:
    """`find_or_create_campaigns`'s statement, built once: the hooks minted (in ref order) and those minted
    before, read by the same statement (it sees them; not the ones it mints itself)."""
    src = recordset("campaign_hooks", "campaign_hooks", [], {"id": Uuid, "name": Text, "external_ref": Text})
    organization_id = bindparam("hooks_organization_id", type_=Uuid)
    channel = bindparam("hooks_channel", type_=Text)
    minted = (
        insert_skipping_conflicts(
            lead_campaigns,
            ["organization_id", "channel", "external_ref"],
            index_where=lead_campaigns.c.external_ref.isnot(None),
        )
        .from_select(
            ["id", "organization_id", "name", "channel", "external_ref"],
            select(src.c.id, organization_id, src.c.name, channel, src.c.external_ref)
            .select_from(src)
            .order_by(src.c.external_ref),
        )
        .returning(lead_campaigns.c.external_ref, lead_campaigns.c.id)
        .cte("minted")
    )
    minted_before = (
        select(lead_campaigns.c.external_ref, lead_campaigns.c.id)
        .join(src, lead_campaigns.c.external_ref == src.c.external_ref)
        .where(lead_campaigns.c.organization_id == organization_id, lead_campaigns.c.channel == channel)
    )
    return select(minted.c.external_ref, minted.c.id).union_all(minted_before)


def require_attachable_campaign(conn: Connection, organization_id: uuid.UUID, campaign_id: uuid.UUID) -> None:
    """400 CAMPAIGN_NOT_FOUND unless the hook is a live one of this organization (staff paths' campaignId).

    Another organization's id answers exactly like an id that does not exist.
    """
    found = conn.execute(
        select(lead_campaigns.c.id).where(
            lead_campaigns.c.organization_id == organization_id,
            lead_campaigns.c.id == campaign_id,
            lead_campaigns.c.archived_at.is_(None),
        )
    ).first()
    if found is None:
        raise BadRequest("No such campaign in this organization.", code="CAMPAIGN_NOT_FOUND")


def create_manual_campaign(
    conn: Connection, organization_id: uuid.UUID, *, name: str, channel: str | None, color: str | None
) -> dict[str, Any]:
    """A manual bucket: staff-named, no external_ref, so it never collides with an integration's hook."""
    row = (
        conn.execute(
            insert(lead_campaigns)
            .values(
                id=uuid7(),
                organization_id=organization_id,
                name=name,
                channel=channel or MANUAL_CHANNEL,
                color=color,
                external_ref=None,
            )
            .returning(*CAMPAIGN_COLUMNS)
        )
        .mappings()
        .one()
    )
    return dict(row)


@dataclass(frozen=True)
class CampaignPage:
    items: list[dict[str, Any]]
    next_cursor: str | None


def list_campaigns(
    conn: Connection, organization_id: uuid.UUID, *, archived: bool, limit: int, cursor: str | None
) -> CampaignPage:
    """Live hooks (or, with `archived`, the archived ones) in name order, keyset-paginated on (name, id)."""
    query = select(*CAMPAIGN_COLUMNS).where(
        lead_campaigns.c.organization_id == organization_id,
        lead_campaigns.c.archived_at.isnot(None) if archived else lead_campaigns.c.archived_at.is_(None),
    )
    if cursor:
        after_name, after_id = decode_keyset(cursor, 2)
        try:
            after = uuid.UUID(after_id)
        except ValueError as error:
            raise BadRequest("The cursor is not one this API returned.", code="INVALID_CURSOR") from error
        query = query.where(tuple_(lead_campaigns.c.name, lead_campaigns.c.id) > tuple_(after_name, after))
    rows = conn.execute(query.order_by(lead_campaigns.c.name, lead_campaigns.c.id).limit(limit + 1)).mappings().all()
    items = [dict(r) for r in rows[:limit]]
    next_cursor = encode_keyset([items[-1]["name"], str(items[-1]["id"])]) if len(rows) > limit else None
    return CampaignPage(items=items, next_cursor=next_cursor)


def update_campaign(
    conn: Connection, organization_id: uuid.UUID, campaign_id: uuid.UUID, changes: dict[str, Any]
) -> dict[str, Any]:
    """Rename, recolour, archive or unarchive a hook. `changes` holds only what the caller sent:
    name, color (None clears it), archived (bool). 404 CAMPAIGN_NOT_FOUND for another organization's id."""
    values: dict[str, Any] = {"updated_at": sql_now()}
    if "name" in changes:
        values["name"] = changes["name"]
    if "color" in changes:
        values["color"] = changes["color"]
    if "archived" in changes:
        # Archiving again keeps the first archive time; unarchiving clears it.
        values["archived_at"] = func.coalesce(lead_campaigns.c.archived_at, sql_now()) if changes["archived"] else None
    row = (
        conn.execute(
            update(lead_campaigns)
            .where(lead_campaigns.c.organization_id == organization_id, lead_campaigns.c.id == campaign_id)
            .values(**values)
            .returning(*CAMPAIGN_COLUMNS)
        )
        .mappings()
        .first()
    )
    if row is None:
        raise NotFound("Campaign not found.", code="CAMPAIGN_NOT_FOUND")
    return dict(row)
