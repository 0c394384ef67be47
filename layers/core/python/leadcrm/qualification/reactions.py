"""What qualification does when a lead's scoring inputs change or a lead is erased (in the same unit of work,
platform.messagebus); the events that rescore from the bus are `scoring.RESCORING_EVENTS`."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import Connection

from leadcrm.leads.messages import ErasingAnswer, LeadErasing, ScoringInputsChanged
from leadcrm.qualification.queries import merged_lead_ids
from leadcrm.qualification.scoring import rescore_leads


def rescore_changed_leads(conn: Connection, message: ScoringInputsChanged) -> dict[uuid.UUID, dict[str, Any]]:
    return rescore_leads(conn, message.organization_id, list(message.lead_ids))


def same_person_as_erased_lead(conn: Connection, message: LeadErasing) -> ErasingAnswer:
    """Duplicates merged into the lead were the same person: their stored answers go with it."""
    return ErasingAnswer(same_person_lead_ids=merged_lead_ids(conn, message.organization_id, message.lead_id))
