"""Writing the lead's touches at intake: where each arrival came from (leads.rules.touches classifies it).

- the lead's creation (`leads.intake._insert_lead`): its first touch, in the same statement as the lead;
- a CSV import's leads, in bulk (ingestion.csv_import);
- every later receipt on an existing lead (`leads.intake.record_receipt`: a resubmitted form, a reopen, an ad
  or a WhatsApp referral of a known person).
Attribution (analytics.attribution) reads and corrects them and reports over them.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import CTE, ColumnElement, Connection, Insert, Text, Uuid, cast, func, insert, literal, select, true
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.dialects.postgresql import insert as pg_insert

from leadcrm.leads.rules.touches import TouchKind, Utm, acquisition_channel, touch_kind, utm_from_received
from leadcrm.leads.tables import lead_touches
from leadcrm.platform.ids import uuid7

IMPORT_SOURCE = "import"  # the source a CSV import gives its leads (ingestion.csv_import)


def _utm_values(utm: Utm) -> dict[str, str | None]:
    return {
        "utm_source": utm.source,
        "utm_medium": utm.medium,
        "utm_campaign": utm.campaign,
        "utm_term": utm.term,
        "utm_content": utm.content,
    }


def first_touch_insert(
    new_lead: CTE,
    *,
    source: str,
    campaign_id: uuid.UUID | None,
    entry_channel: str,
    received: Mapping[str, Any],
    receipt_id: uuid.UUID,
) -> Insert:
    """The lead's first touch, as a data-modifying CTE of the statement that inserts the lead (`new_lead`):
    its acquisition channel, campaign and the UTM parameters the entry point received, at its creation."""
    utm = utm_from_received(received)
    values = {
        "id": literal(uuid7(), Uuid),
        "organization_id": new_lead.c.organization_id,
        "lead_id": new_lead.c.id,
        "kind": literal(touch_kind(entry_channel, utm).value, Text),
        "channel": literal(acquisition_channel(source, campaign_id, utm), Text),
        "is_first": true(),
        "occurred_at": new_lead.c.created_at,
        "campaign_id": new_lead.c.campaign_id,
        **{name: literal(value, Text) for name, value in _utm_values(utm).items()},
        "detail": literal({"receiptId": str(receipt_id)}, JSONB),
    }
    return insert(lead_touches).from_select(list(values), select(*values.values()))


FIRST_TOUCH_ROW_COLUMNS = {
    "touch_id": Uuid,
    "touch_kind": Text,
    "touch_channel": Text,
    "utm_source": Text,
    "utm_medium": Text,
    "utm_campaign": Text,
    "utm_term": Text,
    "utm_content": Text,
}


def first_touch_row(
    *, source: str, campaign_id: uuid.UUID | None, entry_channel: str, received: Mapping[str, Any]
) -> dict[str, Any]:
    """What `first_touch_insert` computes for one lead, as the columns of a row of many (`first_touches_insert`)."""
    utm = utm_from_received(received)
    return {
        "touch_id": uuid7(),
        "touch_kind": touch_kind(entry_channel, utm).value,
        "touch_channel": acquisition_channel(source, campaign_id, utm),
        **_utm_values(utm),
    }


def first_touches_insert(new_leads: CTE, rows: Any) -> Insert:
    """The first touches of many leads inserted by one statement (`new_leads`, its CTE): `rows` has each
    lead's `id`, `receipt_id` and the `first_touch_row` columns."""
    values = {
        "id": rows.c.touch_id,
        "organization_id": new_leads.c.organization_id,
        "lead_id": new_leads.c.id,
        "kind": rows.c.touch_kind,
        "channel": rows.c.touch_channel,
        "is_first": true(),
        "occurred_at": new_leads.c.created_at,
        "campaign_id": new_leads.c.campaign_id,
        **{name: rows.c[name] for name in ("utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content")},
        "detail": func.jsonb_build_object("receiptId", cast(rows.c.receipt_id, Text)),
    }
    return insert(lead_touches).from_select(
        list(values), select(*values.values()).select_from(new_leads.join(rows, rows.c.id == new_leads.c.id))
    )


def imported_first_touches(organization_id: uuid.UUID, rows: Any, at: ColumnElement[datetime]) -> Insert:
    """The first touches of leads a CSV import wrote in bulk (the import skips `intake_lead` on purpose):
    `rows` has each lead's `id`, `touch_id` and `receipt_id`. An import says nothing of where its people came
    from, so they are Direct / Unknown until staff correct them. One statement whatever the size; at the
    import's instant `at`, the leads' own creation time."""
    utm = Utm()
    channel = acquisition_channel(IMPORT_SOURCE, None, utm)
    values = {
        "id": rows.c.touch_id,
        "organization_id": literal(organization_id, Uuid),
        "lead_id": rows.c.id,
        "kind": literal(TouchKind.IMPORT.value, Text),
        "channel": literal(channel, Text),
        "is_first": true(),
        "occurred_at": at,
        "detail": func.jsonb_build_object("receiptId", cast(rows.c.receipt_id, Text)),
    }
    return insert(lead_touches).from_select(list(values), select(*values.values()))


def append_receipt_touch(
    conn: Connection,
    organization_id: uuid.UUID,
    lead_id: uuid.UUID,
    entry_channel: str,
    received: Mapping[str, Any],
    *,
    campaign_id: uuid.UUID | None,
    receipt_id: uuid.UUID,
) -> None:
    """A later touch: an entry point received something for a lead that already exists."""
    utm = utm_from_received(received)
    conn.execute(
        pg_insert(lead_touches).values(
            id=uuid7(),
            organization_id=organization_id,
            lead_id=lead_id,
            kind=touch_kind(entry_channel, utm).value,
            channel=utm.source.lower() if utm.source else entry_channel,
            campaign_id=campaign_id,
            detail={"receiptId": str(receipt_id)},
            **_utm_values(utm),
        )
    )
