"""Tags on leads: contact labels (`label`) and what a contact bought (`purchase`, spec "Course purchases tag
the contact"). A tag's name is unique per organization and category, whatever its case.

Every change of a lead's tags is on its timeline (`tag_added` / `tag_removed`), best-effort.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, delete, func, insert, literal, select, tuple_, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.exc import IntegrityError

from leadcrm.leads.activity import record_activities
from leadcrm.leads.tables import lead_tag_assignments, lead_tags, leads
from leadcrm.platform.db.now import sql_now
from leadcrm.platform.errors import BadRequest, Conflict, NotFound
from leadcrm.platform.ids import uuid7
from leadcrm.platform.keyset import decode_keyset, encode_keyset

LABEL = "label"
PURCHASE = "purchase"
TAG_ADDED_ACTIVITY = "tag_added"
TAG_REMOVED_ACTIVITY = "tag_removed"

TAG_COLUMNS = (
    lead_tags.c.id,
    lead_tags.c.name,
    lead_tags.c.category,
    lead_tags.c.color,
    lead_tags.c.created_at,
    lead_tags.c.updated_at,
)


def _tag_exists(name: str, category: str) -> Conflict:
    return Conflict(f"A {category} tag with this name already exists.", code="TAG_EXISTS", name=name, category=category)


# --- the organization's tags ------------------------------------------------------------------------------


def create_tag(
    conn: Connection, organization_id: uuid.UUID, *, name: str, category: str, color: str | None
) -> dict[str, Any]:
    """A new tag; 409 TAG_EXISTS when the category already has one of this name (any case)."""
    row = (
        conn.execute(
            pg_insert(lead_tags)
            .values(id=uuid7(), organization_id=organization_id, name=name, category=category, color=color)
            .on_conflict_do_nothing()
            .returning(*TAG_COLUMNS)
        )
        .mappings()
        .first()
    )
    if row is None:
        raise _tag_exists(name, category)
    return dict(row)


def find_or_create_tag(conn: Connection, organization_id: uuid.UUID, name: str, category: str) -> uuid.UUID:
    """The tag of this name and category, made on first use; safe under concurrency (course purchases:
    one purchase tag per course, named after it)."""
    created = conn.execute(
        pg_insert(lead_tags)
        .values(id=uuid7(), organization_id=organization_id, name=name, category=category)
        .on_conflict_do_nothing()
        .returning(lead_tags.c.id)
    ).scalar()
    if created is not None:
        return created
    return conn.execute(
        select(lead_tags.c.id).where(
            lead_tags.c.organization_id == organization_id,
            lead_tags.c.category == category,
            func.lower(lead_tags.c.name) == func.lower(name),
        )
    ).scalar_one()


@dataclass(frozen=True)
class TagPage:
    items: list[dict[str, Any]]
    next_cursor: str | None


def list_tags(
    conn: Connection, organization_id: uuid.UUID, *, category: str | None, limit: int, cursor: str | None
) -> TagPage:
    """Tags by category, then name (case-insensitive), keyset-paginated on the unique index's own key."""
    sort_key = (lead_tags.c.category, func.lower(lead_tags.c.name))
    query = select(*TAG_COLUMNS).where(lead_tags.c.organization_id == organization_id)
    if category is not None:
        query = query.where(lead_tags.c.category == category)
    if cursor:
        after_category, after_name = decode_keyset(cursor, 2)
        query = query.where(tuple_(*sort_key) > tuple_(literal(after_category), literal(after_name)))
    rows = conn.execute(query.order_by(*sort_key).limit(limit + 1)).mappings().all()
    items = [dict(r) for r in rows[:limit]]
    next_cursor = None
    if len(rows) > limit:
        next_cursor = encode_keyset([items[-1]["category"], items[-1]["name"].lower()])
    return TagPage(items=items, next_cursor=next_cursor)


def update_tag(
    conn: Connection, organization_id: uuid.UUID, tag_id: uuid.UUID, changes: dict[str, Any]
) -> dict[str, Any]:
    """Rename or recolour a tag (`changes`: name and/or color, only what was sent; a null color clears it).
    404 TAG_NOT_FOUND for another organization's id; 409 TAG_EXISTS when the new name is taken."""
    values: dict[str, Any] = {"updated_at": sql_now()}
    values.update({key: changes[key] for key in ("name", "color") if key in changes})
    statement = (
        update(lead_tags)
        .where(lead_tags.c.organization_id == organization_id, lead_tags.c.id == tag_id)
        .values(**values)
        .returning(*TAG_COLUMNS)
    )
    try:
        with conn.begin_nested():  # a name collision rolls back only this update
            row = conn.execute(statement).mappings().first()
    except IntegrityError as error:
        category = conn.execute(select(lead_tags.c.category).where(lead_tags.c.id == tag_id)).scalar_one()
        raise _tag_exists(changes.get("name", ""), category) from error
    if row is None:
        raise NotFound("Tag not found.", code="TAG_NOT_FOUND")
    return dict(row)


def delete_tag(
    conn: Connection, organization_id: uuid.UUID, tag_id: uuid.UUID, *, actor_user_id: uuid.UUID | None
) -> None:
    """Delete a tag; every lead that carried it gets a `tag_removed` entry. 404 TAG_NOT_FOUND as above."""
    # The assignments first, to learn whose they were (the tag's ON DELETE CASCADE would not say).
    lead_ids = (
        conn.execute(
            delete(lead_tag_assignments)
            .where(lead_tag_assignments.c.organization_id == organization_id, lead_tag_assignments.c.tag_id == tag_id)
            .returning(lead_tag_assignments.c.lead_id)
        )
        .scalars()
        .all()
    )
    tag = conn.execute(
        delete(lead_tags)
        .where(lead_tags.c.organization_id == organization_id, lead_tags.c.id == tag_id)
        .returning(lead_tags.c.id, lead_tags.c.name, lead_tags.c.category)
    ).first()
    if tag is None:
        raise NotFound("Tag not found.", code="TAG_NOT_FOUND")
    record_activities(
        conn,
        [
            _tag_activity(organization_id, lead_id, TAG_REMOVED_ACTIVITY, tag.id, tag.name, tag.category, actor_user_id)
            for lead_id in lead_ids
        ],
    )


# --- a lead's tags ----------------------------------------------------------------------------------------


def attach_tag(
    conn: Connection,
    organization_id: uuid.UUID,
    lead_id: uuid.UUID,
    tag_id: uuid.UUID,
    *,
    actor_user_id: uuid.UUID | None = None,
) -> bool:
    """Put a tag on a lead (other areas call this, e.g. course purchases). True when it was not there yet;
    a replay changes nothing. Tag and lead must both be this organization's, else nothing happens."""
    attached = conn.execute(
        pg_insert(lead_tag_assignments)
        .from_select(
            ["lead_id", "tag_id", "organization_id"],
            select(leads.c.id, lead_tags.c.id, leads.c.organization_id)
            .select_from(leads.join(lead_tags, lead_tags.c.organization_id == leads.c.organization_id))
            .where(
                leads.c.organization_id == organization_id,
                leads.c.id == lead_id,
                lead_tags.c.id == tag_id,
            ),
        )
        .on_conflict_do_nothing()
        .returning(lead_tag_assignments.c.tag_id)
    ).first()
    if attached is None:
        return False
    tag = conn.execute(select(lead_tags.c.name, lead_tags.c.category).where(lead_tags.c.id == tag_id)).one()
    record_activities(
        conn,
        [_tag_activity(organization_id, lead_id, TAG_ADDED_ACTIVITY, tag_id, tag.name, tag.category, actor_user_id)],
    )
    return True


def replace_lead_tags(
    conn: Connection,
    organization_id: uuid.UUID,
    lead_id: uuid.UUID,
    tag_ids: list[uuid.UUID],
    *,
    actor_user_id: uuid.UUID | None,
) -> list[dict[str, Any]]:
    """Make the lead's tags exactly `tag_ids` (set-based: one delete, one insert); returns its tags now.

    404 LEAD_NOT_FOUND for a lead not in this organization; 400 TAG_NOT_FOUND (with the unknown ids) when a
    tag is not this organization's, answered the same for another organization's id as for a random one.
    """
    wanted = list(dict.fromkeys(tag_ids))
    # The lead row lock serializes two replacements of the same lead, so the difference below stays true.
    locked = conn.execute(
        select(leads.c.id).where(leads.c.organization_id == organization_id, leads.c.id == lead_id).with_for_update()
    ).first()
    if locked is None:
        raise NotFound("Lead not found.", code="LEAD_NOT_FOUND")
    wanted_tags = _tags_by_id(conn, organization_id, wanted)
    unknown = [str(tag_id) for tag_id in wanted if tag_id not in wanted_tags]
    if unknown:
        raise BadRequest("Some tags are not tags of this organization.", code="TAG_NOT_FOUND", unknownTagIds=unknown)
    current = {row["id"]: row for row in lead_tag_list(conn, organization_id, lead_id)}
    to_add = [tag_id for tag_id in wanted if tag_id not in current]
    to_remove = [tag_id for tag_id in current if tag_id not in wanted_tags]
    if to_remove:
        conn.execute(
            delete(lead_tag_assignments).where(
                lead_tag_assignments.c.organization_id == organization_id,
                lead_tag_assignments.c.lead_id == lead_id,
                lead_tag_assignments.c.tag_id.in_(to_remove),
            )
        )
    if to_add:
        conn.execute(
            insert(lead_tag_assignments).values(
                [{"lead_id": lead_id, "tag_id": tag_id, "organization_id": organization_id} for tag_id in to_add]
            )
        )
    if to_add or to_remove:
        conn.execute(update(leads).where(leads.c.id == lead_id).values(updated_at=sql_now()))
        record_activities(
            conn,
            [
                _tag_activity(
                    organization_id,
                    lead_id,
                    TAG_ADDED_ACTIVITY,
                    t,
                    wanted_tags[t]["name"],
                    wanted_tags[t]["category"],
                    actor_user_id,
                )
                for t in to_add
            ]
            + [
                _tag_activity(
                    organization_id,
                    lead_id,
                    TAG_REMOVED_ACTIVITY,
                    t,
                    current[t]["name"],
                    current[t]["category"],
                    actor_user_id,
                )
                for t in to_remove
            ],
        )
    return sorted(wanted_tags.values(), key=lambda tag: (tag["category"], tag["name"].lower()))


def _tags_by_id(conn: Connection, organization_id: uuid.UUID, tag_ids: list[uuid.UUID]) -> dict[uuid.UUID, dict]:
    if not tag_ids:
        return {}
    rows = conn.execute(
        select(*TAG_COLUMNS).where(lead_tags.c.organization_id == organization_id, lead_tags.c.id.in_(tag_ids))
    ).mappings()
    return {row["id"]: dict(row) for row in rows}


def lead_tag_list(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> list[dict[str, Any]]:
    rows = conn.execute(
        select(*TAG_COLUMNS)
        .join(lead_tag_assignments, lead_tag_assignments.c.tag_id == lead_tags.c.id)
        .where(lead_tag_assignments.c.organization_id == organization_id, lead_tag_assignments.c.lead_id == lead_id)
        .order_by(lead_tags.c.category, func.lower(lead_tags.c.name))
    ).mappings()
    return [dict(r) for r in rows]


def _tag_activity(
    organization_id: uuid.UUID,
    lead_id: uuid.UUID,
    activity_type: str,
    tag_id: uuid.UUID,
    name: str,
    category: str,
    actor_user_id: uuid.UUID | None,
) -> dict[str, Any]:
    return {
        "organization_id": organization_id,
        "lead_id": lead_id,
        "type": activity_type,
        "payload": {"tagId": str(tag_id), "name": name, "category": category},
        "actor_user_id": actor_user_id,
    }
