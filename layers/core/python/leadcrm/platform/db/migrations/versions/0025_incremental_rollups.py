"""Analytics rollups: the common writes add their difference instead of recomputing the lead.

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-02

Migration 0023 refreshes every lead a statement touches: it takes the lead's facts out of the rollups,
recomputes them from all its status events, deals and touches, and adds them back. Right for any write, but a
bulk move of 10,000 leads paid for reading their whole history twice over, and a lead's intake paid three
refreshes (the lead, its first status event, its first touch).

The three writes that make almost all the traffic now add what they change and nothing else:
- a new lead: its fact row (its day and slot; no rank, touch or win yet), nothing in the rollups;
- status events that come after the lead's last known event (every move, intake, import, bulk move): the stay
  they end, the stays they open, the furthest rank and the first win, from the lead's fact row, which now also
  keeps that last event (`last_event_at`, `last_event_id`, `last_stage_id`);
- a first touch of a lead that has none: its acquisition.
Anything else (an event dated before the last one, a merge moving rows, an undo, an erasure, a deal, a
timezone) still refreshes the lead from the source rows, as before, and `analytics.jobs.rebuild_rollups`
recomputes an organization with the same refresh. The test that checks the rollups equal a rebuild after a
random history of writes covers both paths.

Expand-only: three nullable columns, filled here from the history; functions replaced.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None

SLOTS = 4

COLUMNS = """
ALTER TABLE analytics_lead_facts
    ADD COLUMN last_event_at timestamptz,
    ADD COLUMN last_event_id uuid,
    ADD COLUMN last_stage_id uuid;
"""

BACKFILL = """
UPDATE analytics_lead_facts f
SET last_event_at = e.changed_at, last_event_id = e.id, last_stage_id = e.to_stage_id
FROM (
    SELECT DISTINCT ON (lead_id) lead_id, id, changed_at, to_stage_id
    FROM lead_status_events ORDER BY lead_id, changed_at DESC, id DESC
) e
WHERE e.lead_id = f.lead_id;
"""

# As 0023's, with the lead's last event kept on its fact row.
REFRESH = f"""
CREATE OR REPLACE FUNCTION analytics_refresh_leads(ids uuid[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF ids IS NULL OR cardinality(ids) = 0 THEN
        RETURN;
    END IF;

    -- 1. The stored facts of these leads leave the rollups.
    WITH old AS (
        DELETE FROM analytics_lead_facts WHERE lead_id = ANY(ids) RETURNING *
    ), old_stages AS (
        DELETE FROM analytics_lead_stage_facts WHERE lead_id = ANY(ids) RETURNING *
    ), funnel AS (
        INSERT INTO analytics_daily_funnel AS r (organization_id, day, furthest, slot, leads)
        SELECT organization_id, day, furthest, slot, -count(*) FROM old WHERE furthest IS NOT NULL
        GROUP BY 1, 2, 3, 4
        ON CONFLICT (organization_id, day, furthest, slot) DO UPDATE SET leads = r.leads + excluded.leads
    ), acquired AS (
        INSERT INTO analytics_daily_acquired AS r (organization_id, day, campaign_id, channel, slot, leads)
        SELECT organization_id, day, campaign_id, channel, slot, -count(*) FROM old WHERE acquired_at IS NOT NULL
        GROUP BY 1, 2, 3, 4, 5
        ON CONFLICT (organization_id, day, campaign_id, channel, slot) DO UPDATE SET leads = r.leads + excluded.leads
    )
    INSERT INTO analytics_daily_stages AS r (organization_id, day, stage_id, slot, completed, seconds, current)
    SELECT o.organization_id, o.day, s.stage_id, o.slot, -sum(s.completed), -sum(s.seconds), -sum(s.current)
    FROM old_stages s JOIN old o ON o.lead_id = s.lead_id
    GROUP BY 1, 2, 3, 4
    ON CONFLICT (organization_id, day, stage_id, slot) DO UPDATE
        SET completed = r.completed + excluded.completed, seconds = r.seconds + excluded.seconds,
            current = r.current + excluded.current;

    -- 2. Their facts, recomputed from the source rows (a lead erased, or now a test lead, has none).
    WITH zones AS MATERIALIZED (
        SELECT o.id, analytics_zone(o.timezone) AS zone FROM organizations o
        WHERE o.id IN (SELECT l.organization_id FROM leads l WHERE l.id = ANY(ids))
    ), lead_rows AS MATERIALIZED (
        SELECT l.id, l.organization_id, (l.created_at AT TIME ZONE z.zone)::date AS day,
               (abs(hashtext(l.id::text)) % {SLOTS})::smallint AS slot
        FROM leads l JOIN zones z ON z.id = l.organization_id
        WHERE l.id = ANY(ids) AND NOT l.is_test
    ), events AS MATERIALIZED (
        SELECT e.lead_id, e.id, e.to_stage_id, e.to_status, e.changed_at,
               lead(e.changed_at) OVER (PARTITION BY e.lead_id ORDER BY e.changed_at, e.id) AS left_at
        FROM lead_status_events e JOIN lead_rows l ON l.id = e.lead_id AND l.organization_id = e.organization_id
    ), per_lead AS (
        SELECT e.lead_id, max(analytics_funnel_rank(e.to_status)) AS furthest,
               min(e.changed_at) FILTER (WHERE e.to_status IN ('converted', 'customer')) AS won_at
        FROM events e GROUP BY e.lead_id
    ), last_events AS (
        SELECT DISTINCT ON (e.lead_id) e.lead_id, e.id, e.changed_at, e.to_stage_id
        FROM events e ORDER BY e.lead_id, e.changed_at DESC, e.id DESC
    ), deal_wins AS (
        SELECT d.lead_id, min(d.closed_at) AS won_at
        FROM deals d JOIN lead_rows l ON l.id = d.lead_id AND l.organization_id = d.organization_id
        WHERE d.status = 'won' GROUP BY d.lead_id
    ), facts AS (
        INSERT INTO analytics_lead_facts (lead_id, organization_id, day, slot, furthest, acquired_at, campaign_id,
                                          channel, won_at, last_event_at, last_event_id, last_stage_id)
        SELECT l.id, l.organization_id, l.day, l.slot, p.furthest, t.occurred_at, t.campaign_id, t.channel,
               least(p.won_at, w.won_at), le.changed_at, le.id, le.to_stage_id
        FROM lead_rows l
        LEFT JOIN per_lead p ON p.lead_id = l.id
        LEFT JOIN last_events le ON le.lead_id = l.id
        LEFT JOIN deal_wins w ON w.lead_id = l.id
        LEFT JOIN lead_touches t ON t.organization_id = l.organization_id AND t.lead_id = l.id AND t.is_first
        RETURNING *
    ), stages AS (
        INSERT INTO analytics_lead_stage_facts (lead_id, stage_id, completed, seconds, current)
        SELECT e.lead_id, e.to_stage_id, count(e.left_at), coalesce(sum(extract(epoch FROM e.left_at - e.changed_at)), 0),
               count(*) FILTER (WHERE e.left_at IS NULL)
        FROM events e WHERE e.to_stage_id IS NOT NULL
        GROUP BY 1, 2
        RETURNING *
    ), funnel AS (
        INSERT INTO analytics_daily_funnel AS r (organization_id, day, furthest, slot, leads)
        SELECT organization_id, day, furthest, slot, count(*) FROM facts WHERE furthest IS NOT NULL
        GROUP BY 1, 2, 3, 4
        ON CONFLICT (organization_id, day, furthest, slot) DO UPDATE SET leads = r.leads + excluded.leads
    ), acquired AS (
        INSERT INTO analytics_daily_acquired AS r (organization_id, day, campaign_id, channel, slot, leads)
        SELECT organization_id, day, campaign_id, channel, slot, count(*) FROM facts WHERE acquired_at IS NOT NULL
        GROUP BY 1, 2, 3, 4, 5
        ON CONFLICT (organization_id, day, campaign_id, channel, slot) DO UPDATE SET leads = r.leads + excluded.leads
    )
    INSERT INTO analytics_daily_stages AS r (organization_id, day, stage_id, slot, completed, seconds, current)
    SELECT l.organization_id, l.day, s.stage_id, l.slot, sum(s.completed), sum(s.seconds), sum(s.current)
    FROM stages s JOIN lead_rows l ON l.id = s.lead_id
    GROUP BY 1, 2, 3, 4
    ON CONFLICT (organization_id, day, stage_id, slot) DO UPDATE
        SET completed = r.completed + excluded.completed, seconds = r.seconds + excluded.seconds,
            current = r.current + excluded.current;
END
$$;
"""

# Transition tables are visible only inside the trigger function, so each incremental path is written there.
ON_INSERT = f"""
CREATE OR REPLACE FUNCTION analytics_rollup_on_insert() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    others uuid[];
BEGIN
    IF TG_TABLE_NAME = 'leads' THEN
        -- A lead has no events, touches or deals before it exists: its facts are its day and slot.
        WITH zones AS MATERIALIZED (
            SELECT o.id, analytics_zone(o.timezone) AS zone FROM organizations o
            WHERE o.id IN (SELECT DISTINCT n.organization_id FROM new_rows n)
        ), added AS (
            INSERT INTO analytics_lead_facts (lead_id, organization_id, day, slot)
            SELECT n.id, n.organization_id, (n.created_at AT TIME ZONE z.zone)::date,
                   (abs(hashtext(n.id::text)) % {SLOTS})::smallint
            FROM new_rows n JOIN zones z ON z.id = n.organization_id
            WHERE NOT n.is_test
            ON CONFLICT (lead_id) DO NOTHING
            RETURNING lead_id
        )
        SELECT ARRAY(SELECT n.id FROM new_rows n WHERE NOT n.is_test AND n.id NOT IN (SELECT lead_id FROM added))
        INTO others;
    ELSIF TG_TABLE_NAME = 'lead_status_events' THEN
        -- The leads whose new events all come after their last known one take the difference; the others
        -- (no fact row, or an event dated earlier) are refreshed.
        SELECT ARRAY(
            SELECT n.lead_id FROM new_rows n LEFT JOIN analytics_lead_facts f ON f.lead_id = n.lead_id
            GROUP BY n.lead_id
            HAVING NOT bool_and(f.lead_id IS NOT NULL AND (f.last_event_at IS NULL
                                OR (n.changed_at, n.id) > (f.last_event_at, f.last_event_id)))
        ) INTO others;
        WITH appended AS MATERIALIZED (
            SELECT n.lead_id, n.id, n.to_stage_id, n.to_status, n.changed_at,
                   lead(n.changed_at) OVER w AS left_at, row_number() OVER w AS position
            FROM new_rows n
            WHERE n.lead_id <> ALL(others)
            WINDOW w AS (PARTITION BY n.lead_id ORDER BY n.changed_at, n.id)
        ), facts AS MATERIALIZED (
            SELECT f.*, a.changed_at AS first_new_at FROM analytics_lead_facts f
            JOIN appended a ON a.lead_id = f.lead_id AND a.position = 1
        ), per_lead AS MATERIALIZED (
            SELECT f.lead_id, f.organization_id, f.day, f.slot, f.furthest AS old_furthest,
                   greatest(f.furthest, max(analytics_funnel_rank(a.to_status))) AS furthest,
                   least(f.won_at, min(a.changed_at) FILTER (WHERE a.to_status IN ('converted', 'customer')))
                       AS won_at
            FROM facts f JOIN appended a ON a.lead_id = f.lead_id
            GROUP BY f.lead_id, f.organization_id, f.day, f.slot, f.furthest, f.won_at
        ), stays AS MATERIALIZED (
            -- The stay the first new event ends, then each new event's own: ended, or the current one.
            SELECT f.lead_id, f.last_stage_id AS stage_id, 1 AS completed,
                   extract(epoch FROM f.first_new_at - f.last_event_at) AS seconds, -1 AS current
            FROM facts f WHERE f.last_stage_id IS NOT NULL
            UNION ALL
            SELECT a.lead_id, a.to_stage_id, (a.left_at IS NOT NULL)::int,
                   coalesce(extract(epoch FROM a.left_at - a.changed_at), 0), (a.left_at IS NULL)::int
            FROM appended a WHERE a.to_stage_id IS NOT NULL
        ), lead_stays AS (
            INSERT INTO analytics_lead_stage_facts AS r (lead_id, stage_id, completed, seconds, current)
            SELECT lead_id, stage_id, sum(completed), sum(seconds), sum(current) FROM stays GROUP BY 1, 2
            ON CONFLICT (lead_id, stage_id) DO UPDATE
                SET completed = r.completed + excluded.completed, seconds = r.seconds + excluded.seconds,
                    current = r.current + excluded.current
        ), daily_stays AS (
            INSERT INTO analytics_daily_stages AS r (organization_id, day, stage_id, slot, completed, seconds, current)
            SELECT p.organization_id, p.day, s.stage_id, p.slot, sum(s.completed), sum(s.seconds), sum(s.current)
            FROM stays s JOIN per_lead p ON p.lead_id = s.lead_id
            GROUP BY 1, 2, 3, 4
            ON CONFLICT (organization_id, day, stage_id, slot) DO UPDATE
                SET completed = r.completed + excluded.completed, seconds = r.seconds + excluded.seconds,
                    current = r.current + excluded.current
        ), reached AS (
            INSERT INTO analytics_daily_funnel AS r (organization_id, day, furthest, slot, leads)
            SELECT organization_id, day, rank, slot, sum(change) FROM (
                SELECT organization_id, day, old_furthest AS rank, slot, -1 AS change FROM per_lead
                WHERE old_furthest IS NOT NULL AND furthest IS DISTINCT FROM old_furthest
                UNION ALL
                SELECT organization_id, day, furthest, slot, 1 FROM per_lead
                WHERE furthest IS NOT NULL AND furthest IS DISTINCT FROM old_furthest
            ) c
            GROUP BY 1, 2, 3, 4
            ON CONFLICT (organization_id, day, furthest, slot) DO UPDATE SET leads = r.leads + excluded.leads
        ), last_events AS (
            SELECT DISTINCT ON (a.lead_id) a.lead_id, a.id, a.changed_at, a.to_stage_id
            FROM appended a ORDER BY a.lead_id, a.changed_at DESC, a.id DESC
        )
        UPDATE analytics_lead_facts f
        SET furthest = p.furthest, won_at = p.won_at,
            last_event_at = le.changed_at, last_event_id = le.id, last_stage_id = le.to_stage_id
        FROM per_lead p JOIN last_events le ON le.lead_id = p.lead_id
        WHERE f.lead_id = p.lead_id;
    ELSIF TG_TABLE_NAME = 'lead_touches' THEN
        -- A lead's first touch (one per lead, a partial unique index) is its acquisition.
        WITH firsts AS MATERIALIZED (
            SELECT n.lead_id, n.occurred_at, n.campaign_id, n.channel, f.organization_id, f.day, f.slot
            FROM new_rows n JOIN analytics_lead_facts f ON f.lead_id = n.lead_id
            WHERE n.is_first AND f.acquired_at IS NULL
        ), acquired AS (
            INSERT INTO analytics_daily_acquired AS r (organization_id, day, campaign_id, channel, slot, leads)
            SELECT organization_id, day, campaign_id, channel, slot, count(*) FROM firsts
            GROUP BY 1, 2, 3, 4, 5
            ON CONFLICT (organization_id, day, campaign_id, channel, slot) DO UPDATE SET leads = r.leads + excluded.leads
        ), noted AS (
            UPDATE analytics_lead_facts f
            SET acquired_at = t.occurred_at, campaign_id = t.campaign_id, channel = t.channel
            FROM firsts t WHERE f.lead_id = t.lead_id
        )
        SELECT ARRAY(
            SELECT DISTINCT n.lead_id FROM new_rows n
            WHERE n.is_first AND n.lead_id NOT IN (SELECT lead_id FROM firsts)
        ) INTO others;
    ELSIF TG_TABLE_NAME = 'deals' THEN
        others := ARRAY(SELECT DISTINCT n.lead_id FROM new_rows n WHERE n.status = 'won' AND n.lead_id IS NOT NULL);
    ELSE
        others := ARRAY(SELECT DISTINCT n.lead_id FROM new_rows n);
    END IF;
    PERFORM analytics_refresh_leads(others);
    RETURN NULL;
END
$$;
"""

PREVIOUS_ON_INSERT = """
CREATE OR REPLACE FUNCTION analytics_rollup_on_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'leads' THEN
        PERFORM analytics_refresh_leads(ARRAY(SELECT n.id FROM new_rows n WHERE NOT n.is_test));
    ELSIF TG_TABLE_NAME = 'lead_touches' THEN
        PERFORM analytics_refresh_leads(ARRAY(SELECT DISTINCT n.lead_id FROM new_rows n WHERE n.is_first));
    ELSIF TG_TABLE_NAME = 'deals' THEN
        PERFORM analytics_refresh_leads(
            ARRAY(SELECT DISTINCT n.lead_id FROM new_rows n WHERE n.status = 'won' AND n.lead_id IS NOT NULL));
    ELSE
        PERFORM analytics_refresh_leads(ARRAY(SELECT DISTINCT n.lead_id FROM new_rows n));
    END IF;
    RETURN NULL;
END
$$;
"""


def upgrade() -> None:
    op.execute(COLUMNS)
    op.execute(BACKFILL)
    op.execute(REFRESH)
    op.execute(ON_INSERT)


def downgrade() -> None:
    op.execute(PREVIOUS_ON_INSERT)
    op.execute(_previous_refresh())
    op.execute(
        "ALTER TABLE analytics_lead_facts DROP COLUMN last_stage_id, DROP COLUMN last_event_id, "
        "DROP COLUMN last_event_at"
    )


def _previous_refresh() -> str:
    """0023's refresh (which knows nothing of the last event), read from that migration."""
    path = Path(__file__).with_name("0023_analytics_rollups.py")
    spec = importlib.util.spec_from_file_location("analytics_rollups_0023", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    functions: str = module.FUNCTIONS
    start = functions.index("CREATE FUNCTION analytics_refresh_leads")
    end = functions.index("-- Which leads a statement touched")
    return "CREATE OR REPLACE" + functions[start + len("CREATE") : end]
