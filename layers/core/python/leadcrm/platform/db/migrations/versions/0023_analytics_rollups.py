"""Analytics rollups: the funnel and the attribution report read per-organization, per-day rollups.

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-05

- analytics_lead_facts: one row per real (non-test) lead: its local day of creation (the organization's
  timezone), how far along the funnel it got, its first touch (time, campaign, channel) and when it first won
  (a won status, or a linked deal closed won: whichever came first, spec crm-workflows section 7).
- analytics_lead_stage_facts: per lead and stage, the stays that ended (count, seconds) and the current one.
- analytics_daily_funnel / analytics_daily_stages / analytics_daily_acquired: the sums of those facts per
  organization, local day and a small slot (a hash of the lead id, 0..3), so concurrent intake of one
  organization on one day spreads over four rows instead of queueing on one. Fill factor 70: the upserts
  change no indexed column, so they stay HOT updates on the same page.

Maintained in the writer's own transaction by statement-level triggers with transition tables on leads,
lead_status_events, lead_touches, deals and organizations (timezone): every writer (create, bulk moves, CSV
import, merges, undo, erasure, pseudonymize) keeps them right without code of its own, and a set-based write
pays one refresh per statement. A refresh is idempotent: it takes each affected lead's stored facts out of the
rollups (additive upserts of negative counts), recomputes the facts from the source rows, and adds them back.
analytics.jobs.rebuild_rollups recomputes an organization from scratch with the same function.

Expand-only: new tables, functions and triggers; the existing reads keep working.
"""

from __future__ import annotations

from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None

# Spread of a hot (organization, day): concurrent intake adds to SLOTS rows; a read sums SLOTS times the rows.
SLOTS = 4

TABLES = """
CREATE TABLE analytics_lead_facts (
    lead_id uuid CONSTRAINT pk_analytics_lead_facts PRIMARY KEY,
    organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    day date NOT NULL,
    slot smallint NOT NULL,
    furthest smallint,
    acquired_at timestamptz,
    campaign_id uuid,
    channel text,
    won_at timestamptz
);
CREATE INDEX ix_analytics_lead_facts_org_day_won ON analytics_lead_facts (organization_id, day)
    INCLUDE (acquired_at, won_at, campaign_id, channel) WHERE won_at IS NOT NULL AND acquired_at IS NOT NULL;

CREATE TABLE analytics_lead_stage_facts (
    lead_id uuid NOT NULL,
    stage_id uuid NOT NULL,
    completed integer NOT NULL,
    seconds numeric NOT NULL,
    current integer NOT NULL,
    CONSTRAINT pk_analytics_lead_stage_facts PRIMARY KEY (lead_id, stage_id)
);

CREATE TABLE analytics_daily_funnel (
    organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    day date NOT NULL,
    furthest smallint NOT NULL,
    slot smallint NOT NULL,
    leads bigint NOT NULL,
    CONSTRAINT pk_analytics_daily_funnel PRIMARY KEY (organization_id, day, furthest, slot)
) WITH (fillfactor = 70);

CREATE TABLE analytics_daily_stages (
    organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    day date NOT NULL,
    stage_id uuid NOT NULL,
    slot smallint NOT NULL,
    completed bigint NOT NULL,
    seconds numeric NOT NULL,
    current bigint NOT NULL,
    CONSTRAINT pk_analytics_daily_stages PRIMARY KEY (organization_id, day, stage_id, slot)
) WITH (fillfactor = 70);

CREATE TABLE analytics_daily_acquired (
    organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    day date NOT NULL,
    campaign_id uuid,
    channel text NOT NULL,
    slot smallint NOT NULL,
    leads bigint NOT NULL
) WITH (fillfactor = 70);
CREATE UNIQUE INDEX uq_analytics_daily_acquired ON analytics_daily_acquired
    (organization_id, day, campaign_id, channel, slot) NULLS NOT DISTINCT;
"""

FUNCTIONS = f"""
CREATE FUNCTION analytics_zone(name text) RETURNS text LANGUAGE plpgsql STABLE AS $$
BEGIN
    -- As platform.periods.zone_of: an unknown or empty name is UTC rather than a failed write.
    IF name IS NULL OR name = '' THEN
        RETURN 'UTC';
    END IF;
    PERFORM now() AT TIME ZONE name;
    RETURN name;
EXCEPTION WHEN others THEN
    RETURN 'UTC';
END
$$;

CREATE FUNCTION analytics_funnel_rank(status text) RETURNS smallint LANGUAGE sql IMMUTABLE AS $$
    -- analytics.rules.reports.FUNNEL_RANK
    SELECT (CASE status
        WHEN 'contacted' THEN 1 WHEN 'callback' THEN 1
        WHEN 'trial_booked' THEN 2 WHEN 'no_show' THEN 2
        WHEN 'converted' THEN 3 WHEN 'customer' THEN 3
        ELSE 0 END)::smallint
$$;

CREATE FUNCTION analytics_refresh_leads(ids uuid[]) RETURNS void LANGUAGE plpgsql AS $$
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
        SELECT e.lead_id, e.to_stage_id, e.to_status, e.changed_at,
               lead(e.changed_at) OVER (PARTITION BY e.lead_id ORDER BY e.changed_at, e.id) AS left_at
        FROM lead_status_events e JOIN lead_rows l ON l.id = e.lead_id AND l.organization_id = e.organization_id
    ), per_lead AS (
        SELECT e.lead_id, max(analytics_funnel_rank(e.to_status)) AS furthest,
               min(e.changed_at) FILTER (WHERE e.to_status IN ('converted', 'customer')) AS won_at
        FROM events e GROUP BY e.lead_id
    ), deal_wins AS (
        SELECT d.lead_id, min(d.closed_at) AS won_at
        FROM deals d JOIN lead_rows l ON l.id = d.lead_id AND l.organization_id = d.organization_id
        WHERE d.status = 'won' GROUP BY d.lead_id
    ), facts AS (
        INSERT INTO analytics_lead_facts (lead_id, organization_id, day, slot, furthest, acquired_at, campaign_id,
                                          channel, won_at)
        SELECT l.id, l.organization_id, l.day, l.slot, p.furthest, t.occurred_at, t.campaign_id, t.channel,
               least(p.won_at, w.won_at)
        FROM lead_rows l
        LEFT JOIN per_lead p ON p.lead_id = l.id
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

-- Which leads a statement touched, from its transition tables. Leads: the lead itself (only when what the
-- facts read changed); the others: lead_id, old and new (a merge moving rows changes both leads).
CREATE FUNCTION analytics_rollup_on_insert() RETURNS trigger LANGUAGE plpgsql AS $$
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

CREATE FUNCTION analytics_rollup_on_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'leads' THEN
        PERFORM analytics_refresh_leads(ARRAY(SELECT o.id FROM old_rows o));
    ELSE
        PERFORM analytics_refresh_leads(ARRAY(SELECT DISTINCT o.lead_id FROM old_rows o WHERE o.lead_id IS NOT NULL));
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION analytics_rollup_on_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'leads' THEN
        PERFORM analytics_refresh_leads(ARRAY(
            SELECT n.id FROM new_rows n JOIN old_rows o ON o.id = n.id
            WHERE (n.created_at, n.is_test, n.organization_id) IS DISTINCT FROM (o.created_at, o.is_test, o.organization_id)));
    ELSIF TG_TABLE_NAME = 'lead_touches' THEN
        PERFORM analytics_refresh_leads(ARRAY(
            SELECT unnest(ARRAY[n.lead_id, o.lead_id]) FROM new_rows n JOIN old_rows o ON o.id = n.id
            WHERE (n.is_first OR o.is_first)
              AND (n.lead_id, n.is_first, n.occurred_at, n.campaign_id, n.channel, n.organization_id)
                  IS DISTINCT FROM (o.lead_id, o.is_first, o.occurred_at, o.campaign_id, o.channel, o.organization_id)));
    ELSIF TG_TABLE_NAME = 'deals' THEN
        PERFORM analytics_refresh_leads(ARRAY(
            SELECT DISTINCT x FROM (
                SELECT unnest(ARRAY[n.lead_id, o.lead_id]) AS x FROM new_rows n JOIN old_rows o ON o.id = n.id
                WHERE (n.status = 'won' OR o.status = 'won')
                  AND (n.lead_id, n.status, n.closed_at) IS DISTINCT FROM (o.lead_id, o.status, o.closed_at)) c
            WHERE x IS NOT NULL));
    ELSE
        PERFORM analytics_refresh_leads(ARRAY(
            SELECT unnest(ARRAY[n.lead_id, o.lead_id]) FROM new_rows n JOIN old_rows o ON o.id = n.id
            WHERE (n.lead_id, n.to_status, n.to_stage_id, n.changed_at, n.organization_id)
                  IS DISTINCT FROM (o.lead_id, o.to_status, o.to_stage_id, o.changed_at, o.organization_id)));
    END IF;
    RETURN NULL;
END
$$;

-- The organization's days move with its timezone: its facts are recomputed in the new one.
CREATE FUNCTION analytics_rollup_on_timezone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM analytics_refresh_leads(ARRAY(
        SELECT l.id FROM new_rows n JOIN old_rows o ON o.id = n.id JOIN leads l ON l.organization_id = n.id
        WHERE n.timezone IS DISTINCT FROM o.timezone));
    RETURN NULL;
END
$$;
"""

SOURCES = ("leads", "lead_status_events", "lead_touches", "deals")


def _triggers() -> str:
    statements = []
    for table in SOURCES:
        statements += [
            f"CREATE TRIGGER analytics_rollup_insert AFTER INSERT ON {table} REFERENCING NEW TABLE AS new_rows "
            "FOR EACH STATEMENT EXECUTE FUNCTION analytics_rollup_on_insert();",
            f"CREATE TRIGGER analytics_rollup_update AFTER UPDATE ON {table} "
            "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows "
            "FOR EACH STATEMENT EXECUTE FUNCTION analytics_rollup_on_update();",
            f"CREATE TRIGGER analytics_rollup_delete AFTER DELETE ON {table} REFERENCING OLD TABLE AS old_rows "
            "FOR EACH STATEMENT EXECUTE FUNCTION analytics_rollup_on_delete();",
        ]
    statements.append(
        "CREATE TRIGGER analytics_rollup_timezone AFTER UPDATE ON organizations "
        "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows "
        "FOR EACH STATEMENT EXECUTE FUNCTION analytics_rollup_on_timezone();"
    )
    return "\n".join(statements)


def upgrade() -> None:
    op.execute(TABLES)
    op.execute(FUNCTIONS)
    op.execute(_triggers())
    # The rows already there: every real lead's facts, computed once.
    op.execute("SELECT analytics_refresh_leads(ARRAY(SELECT id FROM leads WHERE NOT is_test))")


def downgrade() -> None:
    for table in SOURCES:
        for kind in ("insert", "update", "delete"):
            op.execute(f"DROP TRIGGER IF EXISTS analytics_rollup_{kind} ON {table}")
    op.execute("DROP TRIGGER IF EXISTS analytics_rollup_timezone ON organizations")
    for function in (
        "analytics_rollup_on_timezone()",
        "analytics_rollup_on_update()",
        "analytics_rollup_on_delete()",
        "analytics_rollup_on_insert()",
        "analytics_refresh_leads(uuid[])",
        "analytics_funnel_rank(text)",
        "analytics_zone(text)",
    ):
        op.execute(f"DROP FUNCTION IF EXISTS {function}")
    for table in (
        "analytics_daily_acquired",
        "analytics_daily_stages",
        "analytics_daily_funnel",
        "analytics_lead_stage_facts",
        "analytics_lead_facts",
    ):
        op.execute(f"DROP TABLE IF EXISTS {table}")
