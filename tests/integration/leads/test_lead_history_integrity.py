"""The database itself keeps a lead's history inside its organization (migration 0024): a status event or a
timeline entry references its lead by (organization_id, lead_id), and goes with the lead."""

from __future__ import annotations

import pytest
from sqlalchemy import delete, insert, select
from sqlalchemy.exc import DBAPIError

from leadcrm.leads.tables import lead_activity_events, lead_status_events, leads
from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.failures import sqlstate
from leadcrm.platform.ids import uuid7
from tests.support.factories import make_caller
from tests.support.lead_moves_helpers import default_pipeline, insert_leads


def _history_rows(organization_id, lead_id):
    return {
        lead_status_events: {"id": uuid7(), "organization_id": organization_id, "lead_id": lead_id, "to_status": "new"},
        lead_activity_events: {"id": uuid7(), "organization_id": organization_id, "lead_id": lead_id, "type": "note"},
    }


@pytest.mark.parametrize("table", [lead_status_events, lead_activity_events], ids=lambda t: t.name)
def test_a_history_row_naming_another_organizations_lead_is_refused(table):
    mine, theirs = make_caller(), make_caller()
    (their_lead,) = insert_leads(theirs.org_id, default_pipeline(theirs.org_id), 1)
    with pytest.raises(DBAPIError) as refused, get_engine().begin() as conn:
        conn.execute(insert(table).values(**_history_rows(mine.org_id, their_lead)[table]))
    assert sqlstate(refused.value) == "23503"  # foreign_key_violation


def test_a_leads_history_goes_with_the_lead():
    caller = make_caller()
    (lead_id,) = insert_leads(caller.org_id, default_pipeline(caller.org_id), 1)
    with get_engine().begin() as conn:
        for table, row in _history_rows(caller.org_id, lead_id).items():
            conn.execute(insert(table).values(**row))
        conn.execute(delete(leads).where(leads.c.id == lead_id))
        for table in (lead_status_events, lead_activity_events):
            assert conn.execute(select(table.c.id).where(table.c.lead_id == lead_id)).all() == []
