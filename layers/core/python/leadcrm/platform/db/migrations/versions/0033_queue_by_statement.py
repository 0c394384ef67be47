"""A bulk write pays one row for the rollup queue, and no check per history row for its actor (issue 23).

Revision ID: 0033
Revises: 0032
Create Date: 2026-12-05

Measured on a 10,000-lead bulk move of the full bench (1M leads): beyond its UPDATE, the move paid 55 ms to
queue its leads for the rollups (one row and one index entry per lead in `analytics_pending_leads`) and
123 ms for the foreign keys of its history rows' actor (10,000 status events and 10,000 timeline entries,
each probing `users` and share-locking the actor's row, the same row 20,000 times). Now:

- The rollup triggers queue one row per statement and organization: `analytics_pending_batches`, the lead
  ids as an array (a lead may be in several batches; a fold refreshes it once). Writers never wait for a fold
  (they only insert new rows), and a fold takes whole batches oldest first, splitting one larger than what it
  has room for. `analytics_pending_leads` (0032, never released) is folded into batches and dropped.
- `lead_status_events.actor_user_id` and `lead_activity_events.actor_user_id` keep their meaning without a
  per-row check: the actor is always the caller's own user (resolved from its membership) or none, and users
  are never deleted (staff leave by their membership; the user row stays so every history keeps naming
  them). That invariant was implicit; a trigger on `users` now refuses a DELETE, the one write that could
  break it, instead of every history row paying to re-check it.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from alembic import op

revision = "0033"
down_revision = "0032"
branch_labels = None
depends_on = None

FOLD_BATCH = 2000  # leads refreshed per statement of a fold

TABLE = """
CREATE TABLE analytics_pending_batches (
    organization_id uuid NOT NULL,
    id bigint GENERATED ALWAYS AS IDENTITY,
    lead_ids uuid[] NOT NULL,
    queued_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT pk_analytics_pending_batches PRIMARY KEY (organization_id, id)
);
INSERT INTO analytics_pending_batches (organization_id, lead_ids)
SELECT organization_id, array_agg(lead_id) FROM analytics_pending_leads GROUP BY organization_id;
DROP TABLE analytics_pending_leads;
"""

QUEUE = "INSERT INTO analytics_pending_batches (organization_id, lead_ids)"

# The (organization, lead) pairs of a statement's rows whose listed columns changed (0032's EXCEPT, either
# version meeting `where`), one batch per organization.
CHANGED_NEW = "(SELECT {cols} FROM new_rows EXCEPT SELECT {cols} FROM old_rows)"
CHANGED_OLD = "(SELECT {cols} FROM old_rows EXCEPT SELECT {cols} FROM new_rows)"


def _batches(pairs: str) -> str:
    """One queue row per organization of the (organization_id, lead_id) rows `pairs` yields."""
    return f"{QUEUE} SELECT p.organization_id, array_agg(DISTINCT p.lead_id) FROM ({pairs}) p GROUP BY 1"


def _changed(cols: str, where: str = "true") -> str:
    return _batches(
        f"SELECT organization_id, lead_id FROM {CHANGED_NEW.format(cols=cols)} c WHERE {where} "
        f"UNION ALL SELECT organization_id, lead_id FROM {CHANGED_OLD.format(cols=cols)} c WHERE {where}"
    )


ON_INSERT = f"""
CREATE OR REPLACE FUNCTION analytics_rollup_on_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'leads' THEN
        {_batches("SELECT n.organization_id, n.id AS lead_id FROM new_rows n WHERE NOT n.is_test")};
    ELSIF TG_TABLE_NAME = 'lead_touches' THEN
        {_batches("SELECT n.organization_id, n.lead_id FROM new_rows n WHERE n.is_first")};
    ELSIF TG_TABLE_NAME = 'deals' THEN
        {_batches("SELECT n.organization_id, n.lead_id FROM new_rows n WHERE n.status = 'won' AND n.lead_id IS NOT NULL")};
    ELSE
        {_batches("SELECT n.organization_id, n.lead_id FROM new_rows n")};
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
        {_batches("SELECT c.organization_id, c.id AS lead_id FROM " + CHANGED_NEW.format(cols="id, created_at, is_test, organization_id") + " c")};
    ELSIF TG_TABLE_NAME = 'lead_touches' THEN
        {_changed("id, lead_id, is_first, occurred_at, campaign_id, channel, organization_id", "c.is_first")};
    ELSIF TG_TABLE_NAME = 'deals' THEN
        {_changed("id, lead_id, status, closed_at, organization_id", "c.status = 'won' AND c.lead_id IS NOT NULL")};
    ELSE
        {_changed("id, lead_id, to_status, to_stage_id, changed_at, organization_id")};
    END IF;
    RETURN NULL;
END
$$;
"""

ON_DELETE = f"""
CREATE OR REPLACE FUNCTION analytics_rollup_on_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'leads' THEN
        {_batches("SELECT o.organization_id, o.id AS lead_id FROM old_rows o")};
    ELSE
        {_batches("SELECT o.organization_id, o.lead_id FROM old_rows o WHERE o.lead_id IS NOT NULL")};
    END IF;
    RETURN NULL;
END
$$;
"""

ON_TIMEZONE = f"""
CREATE OR REPLACE FUNCTION analytics_rollup_on_timezone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    {
    _batches(
        "SELECT l.organization_id, l.id AS lead_id FROM leads l WHERE NOT l.is_test AND l.organization_id IN ("
        "SELECT c.id FROM (SELECT id, timezone FROM new_rows EXCEPT SELECT id, timezone FROM old_rows) c)"
    )
};
    RETURN NULL;
END
$$;
"""

# Whole batches, oldest first, gathered up to FOLD_BATCH leads a refresh; a batch larger than the room left
# gives its first ids and keeps the rest. Writers only insert batches, so they never wait for a fold; folds of
# one organization wait for each other on its lock.
FOLD = f"""
CREATE OR REPLACE FUNCTION analytics_fold_pending(org uuid, max_leads integer) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    batch record;
    ids uuid[];
    room integer;
    folded integer := 0;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM analytics_pending_batches WHERE organization_id = org) THEN
        RETURN 0;
    END IF;
    PERFORM analytics_lock_organization(org);
    WHILE folded < max_leads LOOP
        room := least({FOLD_BATCH}, max_leads - folded);
        ids := '{{}}';
        FOR batch IN
            SELECT b.id, b.lead_ids FROM analytics_pending_batches b WHERE b.organization_id = org
            ORDER BY b.id LIMIT {FOLD_BATCH}
        LOOP
            IF cardinality(ids) > 0 AND cardinality(ids) + cardinality(batch.lead_ids) > room THEN
                EXIT;
            END IF;
            IF cardinality(batch.lead_ids) > room THEN
                UPDATE analytics_pending_batches SET lead_ids = batch.lead_ids[room + 1:]
                WHERE organization_id = org AND id = batch.id;
                ids := batch.lead_ids[1:room];
                EXIT;
            END IF;
            DELETE FROM analytics_pending_batches WHERE organization_id = org AND id = batch.id;
            ids := ids || batch.lead_ids;
        END LOOP;
        EXIT WHEN cardinality(ids) = 0;
        ids := ARRAY(SELECT DISTINCT unnest(ids));
        PERFORM analytics_refresh_leads(ids);
        folded := folded + cardinality(ids);
    END LOOP;
    RETURN folded;
END
$$;
"""

ACTORS = """
ALTER TABLE lead_status_events DROP CONSTRAINT fk_lead_status_events_actor_user_id_users;
ALTER TABLE lead_activity_events DROP CONSTRAINT fk_lead_activity_events_actor_user_id_users;
CREATE FUNCTION users_are_kept() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'users are never deleted: histories name them (remove the membership instead)'
        USING ERRCODE = 'restrict_violation';
END
$$;
CREATE TRIGGER users_are_kept BEFORE DELETE ON users FOR EACH STATEMENT EXECUTE FUNCTION users_are_kept();
"""


def upgrade() -> None:
    op.execute(TABLE)
    for function in (ON_INSERT, ON_UPDATE, ON_DELETE, ON_TIMEZONE, FOLD):
        op.execute(function)
    op.execute(ACTORS)


def downgrade() -> None:
    op.execute("DROP TRIGGER users_are_kept ON users")
    op.execute("DROP FUNCTION users_are_kept()")
    for table in ("lead_status_events", "lead_activity_events"):
        op.execute(
            f"ALTER TABLE {table} ADD CONSTRAINT fk_{table}_actor_user_id_users FOREIGN KEY (actor_user_id) "
            "REFERENCES users (id) ON DELETE SET NULL"
        )
    previous = _revision_0032()
    op.execute(previous.TABLE)
    op.execute(
        "INSERT INTO analytics_pending_leads (organization_id, lead_id) "
        "SELECT DISTINCT organization_id, unnest(lead_ids) FROM analytics_pending_batches ON CONFLICT DO NOTHING"
    )
    for function in (previous.FOLD, previous.ON_INSERT, previous.ON_UPDATE, previous.ON_DELETE, previous.ON_TIMEZONE):
        op.execute(function.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION"))
    op.execute("DROP TABLE analytics_pending_batches")


def _revision_0032() -> ModuleType:
    path = Path(__file__).with_name("0032_rollups_by_consumer.py")
    spec = importlib.util.spec_from_file_location("rollups_by_consumer_0032", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
