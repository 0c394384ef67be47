"""Analytics jobs: rebuilding an organization's rollups from the source rows.

The rollups (migrations 0023, 0025, 0032) are kept by folding the leads the writers queued
(analytics.rollup_queue); this job is the recovery path (and the property tests' reference): under the
organization's rollup lock it drops the organization's facts, rollup rows and queue, and recomputes them with
the same database function the fold calls, from leads, lead_status_events, lead_touches and deals.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import Connection, delete, func, select, text

from leadcrm.analytics.rollup_queue import lock_organization_rollups
from leadcrm.analytics.tables import (
    analytics_daily_acquired,
    analytics_daily_funnel,
    analytics_daily_stages,
    analytics_lead_facts,
    analytics_lead_stage_facts,
    analytics_pending_batches,
)


def rebuild_rollups(conn: Connection, organization_id: uuid.UUID) -> int:
    """Recompute the organization's rollups from its source rows; returns how many real leads they count.
    Runs in the caller's transaction: the organization's rollup rows are replaced at once."""
    f = analytics_lead_facts
    lock_organization_rollups(conn, organization_id)
    conn.execute(
        delete(analytics_pending_batches).where(analytics_pending_batches.c.organization_id == organization_id)
    )
    conn.execute(
        delete(analytics_lead_stage_facts).where(
            analytics_lead_stage_facts.c.lead_id.in_(select(f.c.lead_id).where(f.c.organization_id == organization_id))
        )
    )
    conn.execute(delete(f).where(f.c.organization_id == organization_id))
    for table in (analytics_daily_funnel, analytics_daily_stages, analytics_daily_acquired):
        conn.execute(delete(table).where(table.c.organization_id == organization_id))
    conn.execute(
        text("SELECT analytics_refresh_leads(ARRAY(SELECT id FROM leads WHERE organization_id = :org))"),
        {"org": organization_id},
    )
    return conn.execute(select(func.count()).select_from(f).where(f.c.organization_id == organization_id)).scalar_one()


def rollup_snapshot(conn: Connection, organization_id: uuid.UUID) -> dict[str, Any]:
    """The organization's rollups as comparable values: slots summed, rows that net to zero left out."""
    funnel = analytics_daily_funnel
    stages = analytics_daily_stages
    acquired = analytics_daily_acquired
    facts = analytics_lead_facts
    lead_stages = analytics_lead_stage_facts
    return {
        "funnel": sorted(
            conn.execute(
                select(funnel.c.day, funnel.c.furthest, func.sum(funnel.c.leads))
                .where(funnel.c.organization_id == organization_id)
                .group_by(funnel.c.day, funnel.c.furthest)
                .having(func.sum(funnel.c.leads) != 0)
            ).all()
        ),
        "stages": sorted(
            (
                (row[0], str(row[1]), row[2], round(float(row[3]), 3), row[4])
                for row in conn.execute(
                    select(
                        stages.c.day,
                        stages.c.stage_id,
                        func.sum(stages.c.completed),
                        func.sum(stages.c.seconds),
                        func.sum(stages.c.current),
                    )
                    .where(stages.c.organization_id == organization_id)
                    .group_by(stages.c.day, stages.c.stage_id)
                    .having((func.sum(stages.c.completed) != 0) | (func.sum(stages.c.current) != 0))
                )
            ),
        ),
        "acquired": sorted(
            (
                (row[0], str(row[1]), row[2], row[3])
                for row in conn.execute(
                    select(acquired.c.day, acquired.c.campaign_id, acquired.c.channel, func.sum(acquired.c.leads))
                    .where(acquired.c.organization_id == organization_id)
                    .group_by(acquired.c.day, acquired.c.campaign_id, acquired.c.channel)
                    .having(func.sum(acquired.c.leads) != 0)
                )
            ),
        ),
        "facts": sorted(
            tuple(str(value) for value in row)
            for row in conn.execute(
                select(
                    facts.c.lead_id,
                    facts.c.day,
                    facts.c.furthest,
                    facts.c.acquired_at,
                    facts.c.campaign_id,
                    facts.c.channel,
                    facts.c.won_at,
                    facts.c.last_event_at,
                    facts.c.last_event_id,
                    facts.c.last_stage_id,
                ).where(facts.c.organization_id == organization_id)
            )
        ),
        "leadStages": sorted(
            (str(row[0]), str(row[1]), row[2], round(float(row[3]), 3), row[4])
            for row in conn.execute(
                select(
                    lead_stages.c.lead_id,
                    lead_stages.c.stage_id,
                    lead_stages.c.completed,
                    lead_stages.c.seconds,
                    lead_stages.c.current,
                )
                .join(facts, facts.c.lead_id == lead_stages.c.lead_id)
                .where(facts.c.organization_id == organization_id)
            )
        ),
    }
