"""Creating leads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import insert

from leadcrm.db.tables import lead_status_events, leads
from leadcrm.db.uow import UnitOfWork
from leadcrm.domain.access import Actor
from leadcrm.domain.events import LEAD_CREATED, DomainEvent
from leadcrm.ids import uuid7
from leadcrm.services.pipelines import default_new_stage

LEAD_COLUMNS = (
    leads.c.id,
    leads.c.organization_id,
    leads.c.name,
    leads.c.email,
    leads.c.phone,
    leads.c.locale,
    leads.c.note,
    leads.c.lost_reason,
    leads.c.source,
    leads.c.status,
    leads.c.pipeline_id,
    leads.c.stage_id,
    leads.c.campaign_id,
    leads.c.assigned_to_user_id,
    leads.c.is_test,
    leads.c.archived_at,
    leads.c.trial_date,
    leads.c.next_action_at,
    leads.c.next_action_type,
    leads.c.next_action_note,
    leads.c.status_changed_at,
    leads.c.created_at,
    leads.c.updated_at,
)


@dataclass(frozen=True)
class NewLead:
    name: str | None = None
    email: str | None = None
    phone: str | None = None
    locale: str | None = None
    note: str | None = None
    source: str = "manual"
    is_test: bool = False


def create_lead(uow: UnitOfWork, actor: Actor, new: NewLead) -> dict[str, Any]:
    """A lead on the default pipeline's New stage, its first status event, and `lead.created`."""
    conn = uow.connection
    placement = default_new_stage(conn, actor.organization_id)
    lead_id = uuid7()
    row = (
        conn.execute(
            insert(leads)
            .values(
                id=lead_id,
                organization_id=actor.organization_id,
                name=new.name,
                email=new.email,
                phone=new.phone,
                locale=new.locale,
                note=new.note,
                source=new.source,
                is_test=new.is_test,
                status=placement.category.value,
                pipeline_id=placement.pipeline_id,
                stage_id=placement.stage_id,
                created_by_user_id=actor.user_id,
            )
            .returning(*LEAD_COLUMNS)
        )
        .mappings()
        .one()
    )
    conn.execute(
        insert(lead_status_events).values(
            id=uuid7(),
            organization_id=actor.organization_id,
            lead_id=lead_id,
            from_status=None,
            to_status=placement.category.value,
            to_stage_id=placement.stage_id,
            actor_user_id=actor.user_id,
            changed_at=row["created_at"],
        )
    )
    uow.add_event(
        DomainEvent(
            type=LEAD_CREATED,
            organization_id=actor.organization_id,
            aggregate_id=lead_id,
            payload={
                "leadId": str(lead_id),
                "source": new.source,
                "stageId": str(placement.stage_id),
                "actorUserId": str(actor.user_id),
            },
        )
    )
    return dict(row)
