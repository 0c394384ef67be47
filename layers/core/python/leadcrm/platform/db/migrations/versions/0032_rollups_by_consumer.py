"""Analytics rollups folded by a consumer: a writer only queues the leads it touched (issue 23).

Revision ID: 0032
Revises: 0031
Create Date: 2026-12-05

Until now the statement triggers of 0023/0025/0031 kept the rollups in every writer's transaction. That was
the largest cost a bulk write paid besides its own rows: 150 ms of a 5,000-lead bulk move's 790 ms (its bare
UPDATE: 300 ms), and most of what a CSV chunk or an SQS batch of leads spent beyond its inserts. Now:

- the same triggers (same tables, same "which leads did this statement touch" rules) insert those leads into
  `analytics_pending_leads` (organization, lead: one index; a lead already queued costs an index probe);
- `analytics_fold_pending(org, max_leads)` folds them (analytics.rollup_queue calls it): under the
  organization's advisory lock, it takes batches of the organization's queued leads (deleting them) and
  refreshes them with `analytics_refresh_leads`, the function the triggers called and the rebuild calls, so the
  rollups stay equal to a rebuild;
- the `analytics_fold` job folds every organization's queue each minute, and a report folds its own
  organization's queue (up to a bound) before it reads, so a report never shows less than what was committed
  before it was asked for.

A queued lead is deleted in the fold's transaction and re-queued by any writer that touches it afterwards (its
insert waits for the fold's commit), so nothing a fold did not see is lost.

Expand-only: one new table; the trigger functions are replaced (the refresh function is kept).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from alembic import op

revision = "0032"
down_revision = "0031"
branch_labels = None
depends_on = None

TABLE = """
CREATE TABLE analytics_pending_leads (
    organization_id uuid NOT NULL,
    lead_id uuid NOT NULL,
    queued_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT pk_analytics_pending_leads PRIMARY KEY (organization_id, lead_id)
);
"""

QUEUE = "INSERT INTO analytics_pending_leads (organization_id, lead_id)"
FOLD_BATCH = 2000  # leads refreshed per statement of a fold

# Every fold and rebuild of an organization's rollups holds this lock: their additive upserts of the same daily
# rows, taken in different orders by two of them at once, would otherwise deadlock.
LOCK = """
CREATE FUNCTION analytics_lock_organization(org uuid) RETURNS void LANGUAGE sql AS $$
    SELECT pg_advisory_xact_lock(hashtextextended('analytics-rollups:' || org::text, 0))
$$;
"""

# One round trip for a report: nothing (one index probe) when the organization has nothing queued.
FOLD = f"""
CREATE FUNCTION analytics_fold_pending(org uuid, max_leads integer) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    ids uuid[];
    folded integer := 0;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM analytics_pending_leads WHERE organization_id = org) THEN
        RETURN 0;
    END IF;
    PERFORM analytics_lock_organization(org);
    WHILE folded < max_leads LOOP
        WITH taken AS (
            DELETE FROM analytics_pending_leads p
            USING (SELECT q.lead_id FROM analytics_pending_leads q WHERE q.organization_id = org
                   ORDER BY q.lead_id LIMIT least({FOLD_BATCH}, max_leads - folded) FOR UPDATE SKIP LOCKED) t
            WHERE p.organization_id = org AND p.lead_id = t.lead_id
            RETURNING p.lead_id
        )
        SELECT array_agg(lead_id) INTO ids FROM taken;
        EXIT WHEN ids IS NULL;
        PERFORM analytics_refresh_leads(ids);
        folded := folded + cardinality(ids);
    END LOOP;
    RETURN folded;
END
$$;
"""

# The rows of a statement whose listed columns changed, old and new version apart: EXCEPT compares whole rows
# (NULLs equal) by hashing or sorting, which no plan kept from a one-row call makes quadratic (0031).
CHANGED_NEW = "(SELECT {cols} FROM new_rows EXCEPT SELECT {cols} FROM old_rows)"
CHANGED_OLD = "(SELECT {cols} FROM old_rows EXCEPT SELECT {cols} FROM new_rows)"


def _changed(cols: str, where: str = "true") -> str:
    """The (organization, lead) pairs of the rows whose `cols` changed, in either version that meets `where`."""
    return (
        f"SELECT organization_id, lead_id FROM {CHANGED_NEW.format(cols=cols)} c WHERE {where}\n"
        f"            UNION\n"
        f"            SELECT organization_id, lead_id FROM {CHANGED_OLD.format(cols=cols)} c WHERE {where}"
    )


ON_INSERT = f"""
CREATE OR REPLACE FUNCTION analytics_rollup_on_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'leads' THEN
        {QUEUE} SELECT n.organization_id, n.id FROM new_rows n WHERE NOT n.is_test
        ON CONFLICT DO NOTHING;
    ELSIF TG_TABLE_NAME = 'lead_touches' THEN
        {QUEUE} SELECT DISTINCT n.organization_id, n.lead_id FROM new_rows n WHERE n.is_first
        ON CONFLICT DO NOTHING;
    ELSIF TG_TABLE_NAME = 'deals' THEN
        {QUEUE} SELECT DISTINCT n.organization_id, n.lead_id FROM new_rows n
        WHERE n.status = 'won' AND n.lead_id IS NOT NULL
        ON CONFLICT DO NOTHING;
    ELSE
        {QUEUE} SELECT DISTINCT n.organization_id, n.lead_id FROM new_rows n
        ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END
$$;
"""

ON_UPDATE = f"""
CREATE OR REPLACE FUNCTION analytics_rollup_on_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'leads' THEN
        -- Only what the facts read of the lead itself: its day (created_at), test flag and organization.
        {QUEUE} SELECT c.organization_id, c.id FROM {CHANGED_NEW.format(cols="id, created_at, is_test, organization_id")} c
        ON CONFLICT DO NOTHING;
    ELSIF TG_TABLE_NAME = 'lead_touches' THEN
        {QUEUE} {_changed("id, lead_id, is_first, occurred_at, campaign_id, channel, organization_id", "c.is_first")}
        ON CONFLICT DO NOTHING;
    ELSIF TG_TABLE_NAME = 'deals' THEN
        {QUEUE} {_changed("id, lead_id, status, closed_at, organization_id", "c.status = 'won' AND c.lead_id IS NOT NULL")}
        ON CONFLICT DO NOTHING;
    ELSE
        {QUEUE} {_changed("id, lead_id, to_status, to_stage_id, changed_at, organization_id")}
        ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END
$$;
"""

ON_DELETE = f"""
CREATE OR REPLACE FUNCTION analytics_rollup_on_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'leads' THEN
        {QUEUE} SELECT o.organization_id, o.id FROM old_rows o
        ON CONFLICT DO NOTHING;
    ELSE
        {QUEUE} SELECT DISTINCT o.organization_id, o.lead_id FROM old_rows o WHERE o.lead_id IS NOT NULL
        ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END
$$;
"""

# The organization's days move with its timezone: all its leads are refreshed in the new one.
ON_TIMEZONE = f"""
CREATE OR REPLACE FUNCTION analytics_rollup_on_timezone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    {QUEUE} SELECT l.organization_id, l.id FROM leads l
    WHERE NOT l.is_test AND l.organization_id IN (
        SELECT c.id FROM (SELECT id, timezone FROM new_rows EXCEPT SELECT id, timezone FROM old_rows) c)
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;
"""


def upgrade() -> None:
    op.execute(TABLE)
    for function in (LOCK, FOLD, ON_INSERT, ON_UPDATE, ON_DELETE, ON_TIMEZONE):
        op.execute(function)


def downgrade() -> None:
    # What is queued is folded first: the triggers of 0031 expect the rollups to be right.
    op.execute("SELECT analytics_refresh_leads(ARRAY(SELECT lead_id FROM analytics_pending_leads))")
    previous = _revision("0031_rollup_insert_by_key.py", "rollup_insert_by_key_0031")
    op.execute(previous.on_insert())
    op.execute(previous.on_update())
    functions: str = _revision("0023_analytics_rollups.py", "analytics_rollups_0023").FUNCTIONS
    for name, end_marker in (
        ("analytics_rollup_on_delete", "CREATE FUNCTION analytics_rollup_on_update"),
        ("analytics_rollup_on_timezone", None),
    ):
        start = functions.index(f"CREATE FUNCTION {name}")
        end = functions.index(end_marker) if end_marker else len(functions)
        op.execute("CREATE OR REPLACE" + functions[start + len("CREATE") : end])
    op.execute("DROP FUNCTION analytics_fold_pending(uuid, integer)")
    op.execute("DROP FUNCTION analytics_lock_organization(uuid)")
    op.execute("DROP TABLE analytics_pending_leads")


def _revision(filename: str, name: str) -> ModuleType:
    path = Path(__file__).with_name(filename)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
