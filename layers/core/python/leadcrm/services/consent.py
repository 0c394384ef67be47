"""A lead's consent per channel (email, sms, whatsapp, call): `lead_consents`, one row per lead and channel.

No row means nothing was said: the channel is allowed. A revocation (a `dnc` call outcome today; an
unsubscribe or a STOP reply when conversations exist) writes `revoked`; sends on consent-gated channels ask
`is_allowed` first (spec "1:1 sends respect the contact's gate").
"""

from __future__ import annotations

import uuid
from enum import StrEnum

from sqlalchemy import Connection, func, select
from sqlalchemy.dialects.postgresql import insert as pg_insert

from leadcrm.db.tables import lead_consents
from leadcrm.ids import uuid7


class ConsentChannel(StrEnum):
    EMAIL = "email"
    SMS = "sms"
    WHATSAPP = "whatsapp"
    CALL = "call"


GRANTED = "granted"
REVOKED = "revoked"


def is_allowed(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID, channel: ConsentChannel | str) -> bool:
    """False only when the lead's consent on the channel is revoked."""
    status = conn.execute(
        select(lead_consents.c.status).where(
            lead_consents.c.organization_id == organization_id,
            lead_consents.c.lead_id == lead_id,
            lead_consents.c.channel == ConsentChannel(channel).value,
        )
    ).scalar_one_or_none()
    return status != REVOKED


def revoke_all(conn: Connection, organization_id: uuid.UUID, lead_id: uuid.UUID, *, source: str) -> None:
    """Revokes consent on every channel in one statement (an upsert per channel); idempotent."""
    rows = [
        {
            "id": uuid7(),
            "organization_id": organization_id,
            "lead_id": lead_id,
            "channel": channel.value,
            "status": REVOKED,
            "source": source,
        }
        for channel in ConsentChannel
    ]
    statement = pg_insert(lead_consents).values(rows)
    conn.execute(
        statement.on_conflict_do_update(
            index_elements=["lead_id", "channel"],
            set_={"status": REVOKED, "source": statement.excluded.source, "updated_at": func.now()},
        )
    )
