"""Qualification's reads: merges (a lead's merges, the survivor of a merged lead, the leads merged into one) and
merge suggestions (the organization's other leads that look like the same person)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from sqlalchemy import (
    Connection,
    select,
)

from leadcrm.leads.dedup import leads_with_keys
from leadcrm.leads.identity import organization_region
from leadcrm.leads.rules.identity import is_same_lead_person, last_seven_digits, person_key
from leadcrm.leads.tables import (
    leads,
)
from leadcrm.platform.errors import NotFound
from leadcrm.qualification.rules.merges import (
    is_won,
)
from leadcrm.qualification.tables import lead_merges

SUGGESTION_LIMIT = 20

def survivor_of(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> dict[str, Any] | None:
    """The tombstone of a merged lead: {survivorId, mergeId, mergedAt}, or None (the id was never merged
    away, or the merge was undone). One hop: a later merge of the survivor moved the tombstone along."""
    row = conn.execute(
        select(lead_merges.c.id, lead_merges.c.survivor_lead_id, lead_merges.c.merged_at).where(
            lead_merges.c.organization_id == organization_id,
            lead_merges.c.merged_lead_id == lead_id,
            lead_merges.c.undone_at.is_(None),
        )
    ).first()
    if row is None:
        return None
    return {"survivor_id": row.survivor_lead_id, "merge_id": row.id, "merged_at": row.merged_at}

def merged_lead_ids(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> list[uuid.UUID]:
    """The ids of the duplicates merged into this lead (live tombstones): what still names them outside the
    lead (a stored Idempotency-Key answer of their create) belongs to the survivor's person too."""
    return list(
        conn.execute(
            select(lead_merges.c.merged_lead_id).where(
                lead_merges.c.organization_id == organization_id,
                lead_merges.c.survivor_lead_id == lead_id,
                lead_merges.c.undone_at.is_(None),
            )
        ).scalars()
    )

def get_merge(conn: Connection, organization_id: uuid.UUID, merge_id: uuid.UUID) -> dict[str, Any]:
    return _public_merge(merge_row(conn, organization_id, merge_id, lock=False))

def merges_of(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> list[dict[str, Any]]:
    """The merges a lead survived, newest first. Another organization's lead, or a random id, is 404 like
    every lead sub-resource (a lead merged away since is still found by the merges it survived)."""
    known = conn.execute(
        select(leads.c.id).where(leads.c.organization_id == organization_id, leads.c.id == lead_id)
    ).first() or conn.execute(
        select(lead_merges.c.id).where(
            lead_merges.c.organization_id == organization_id, lead_merges.c.survivor_lead_id == lead_id
        )
    ).first()
    if known is None:
        raise NotFound("Lead not found.", code="LEAD_NOT_FOUND")
    rows = conn.execute(
        select(lead_merges)
        .where(lead_merges.c.organization_id == organization_id, lead_merges.c.survivor_lead_id == lead_id)
        .order_by(lead_merges.c.merged_at.desc(), lead_merges.c.id.desc())
        .limit(100)
    ).mappings()
    return [_public_merge(dict(r)) for r in rows]

def _public_merge(row: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "survivor_lead_id": row["survivor_lead_id"],
        "original_survivor_id": row["original_survivor_id"],
        "merged_lead_id": row["merged_lead_id"],
        "actor_user_id": row["actor_user_id"],
        "merged_at": row["merged_at"],
        "moved": {key: entry["rows"] for key, entry in row["moved"].items()},
        "undone_at": row["undone_at"],
        "undone_by_user_id": row["undone_by_user_id"],
        "undo_report": row["undo_report"],
    }

_PERSON_COLUMNS = (
    leads.c.id,
    leads.c.name,
    leads.c.email,
    leads.c.phone,
    leads.c.status,
    leads.c.converted_membership_id,
    leads.c.created_at,
)

def merge_suggestions(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> dict[str, Any]:
    """The leads of the organization that are the same person as this one by the identity rules
    (leads.rules.identity.is_same_lead_person: equal canonical email, or equal phone with agreeing names and no
    one else on that number), oldest first, and the suggested survivor: the oldest of them all (the lead
    every later duplicate was a copy of). A converted lead is never suggested to be merged away."""
    lead = conn.execute(
        select(*_PERSON_COLUMNS).where(leads.c.organization_id == organization_id, leads.c.id == lead_id)
    ).first()
    if lead is None:
        raise NotFound("Lead not found.", code="LEAD_NOT_FOUND")
    region = organization_region(conn, organization_id)
    key = person_key(lead.email, lead.phone, lead.name, default_region=region)
    last7 = last_seven_digits(key.phone_e164)
    if key.email is None and last7 is None:
        return {"survivor_id": lead_id, "duplicates": []}
    found = leads_with_keys(
        organization_id,
        [key.email] if key.email is not None else [],
        [last7] if last7 is not None else [],
        _PERSON_COLUMNS,
    )
    rows = conn.execute(
        select(*(found.c[column.name] for column in _PERSON_COLUMNS))
        .where(found.c.id != lead_id)
        .order_by(found.c.created_at, found.c.id)
        .limit(SUGGESTION_LIMIT)
    ).all()
    keys = {r.id: person_key(r.email, r.phone, r.name, default_region=region) for r in rows}
    on_phone = [k for k in keys.values() if key.phone_e164 is not None and k.phone_e164 == key.phone_e164]
    duplicates = []
    for row in rows:
        candidate = keys[row.id]
        others = [other for other in on_phone if other is not candidate]
        if not is_same_lead_person(candidate, key, others):
            continue
        duplicates.append(
            {
                "lead_id": row.id,
                "name": row.name,
                "status": row.status,
                "matched_by": "email" if key.email is not None and candidate.email == key.email else "phone",
                "created_at": row.created_at,
                "converted": is_won(row.status, row.converted_membership_id),
            }
        )
    everyone = [(lead.created_at, lead.id, is_won(lead.status, lead.converted_membership_id))] + [
        (d["created_at"], d["lead_id"], d["converted"]) for d in duplicates
    ]
    # A converted lead survives whenever there is one (it cannot be merged away); else the oldest.
    survivor = min(everyone, key=lambda e: (not e[2], e[0], e[1]))[1]
    return {"survivor_id": survivor, "duplicates": duplicates}

def has_unresolved_duplicates(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID) -> bool:
    return bool(merge_suggestions(conn, organization_id, lead_id)["duplicates"])


def merge_row(conn: Connection, organization_id: uuid.UUID, merge_id: uuid.UUID, *, lock: bool) -> dict[str, Any]:
    query = select(lead_merges).where(lead_merges.c.organization_id == organization_id, lead_merges.c.id == merge_id)
    row = conn.execute(query.with_for_update() if lock else query).mappings().first()
    if row is None:
        raise NotFound("Merge not found.", code="MERGE_NOT_FOUND")
    return dict(row)
