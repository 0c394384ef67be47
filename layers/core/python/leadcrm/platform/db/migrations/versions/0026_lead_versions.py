"""Lead versions: an integer every write to a lead, its placements or its follow-up bumps (issue 26).

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-05

The Sales workspace sends the version it read with a person's write and gets 409 LEAD_VERSION_CONFLICT when
someone wrote the lead since (leadcrm.leads.versions). PostgreSQL keeps the count, so no write can forget it:
- a BEFORE UPDATE trigger on leads bumps `version` once per transaction (`version_xact` remembers the
  transaction that bumped it last): a use case that writes the row twice in its unit of work (a touch and its
  score, a result's touch and its stage move) is still one version, one change for the screen;
- statement triggers on lead_pipeline_placements touch the lead rows they name (which fires the bump), since
  adding, moving or removing a secondary placement does not write the lead itself. A deleted lead's
  placements (an erasure's cascade) touch nothing: the row is gone.
The follow-up lives on the lead row (next_action_*), so its writes bump through the first trigger.
Timeline entries and status events get `group_xact`, the transaction that wrote them: one operation's
entries are one timeline group (the timeline shows it as `group`).

Expand-only: two columns (the version defaults to 1 for every lead there), one function per table, triggers.
"""

from __future__ import annotations

from alembic import op

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None

COLUMNS = """
ALTER TABLE leads
    ADD COLUMN version integer NOT NULL DEFAULT 1,
    ADD COLUMN version_xact bigint;
-- A lead written again in the transaction that created it (its score, its intake task) stays at version 1.
ALTER TABLE leads ALTER COLUMN version_xact SET DEFAULT txid_current();
-- A timeline group: the entries one transaction wrote (one operation: a result's touch, follow-up and move).
-- Added without a default first, so the history there stays ungrouped (NULL), then defaulted for new rows.
ALTER TABLE lead_activity_events ADD COLUMN group_xact bigint;
ALTER TABLE lead_activity_events ALTER COLUMN group_xact SET DEFAULT txid_current();
ALTER TABLE lead_status_events ADD COLUMN group_xact bigint;
ALTER TABLE lead_status_events ALTER COLUMN group_xact SET DEFAULT txid_current();
"""

FUNCTIONS = """
CREATE FUNCTION leads_bump_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- Nobody sets the version by hand: it is the count of the transactions that wrote the lead.
    IF OLD.version_xact IS NOT DISTINCT FROM txid_current() THEN
        NEW.version := OLD.version;
    ELSE
        NEW.version := OLD.version + 1;
    END IF;
    NEW.version_xact := txid_current();
    RETURN NEW;
END
$$;

CREATE FUNCTION lead_placements_bump_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        UPDATE leads SET version_xact = version_xact WHERE id IN (SELECT DISTINCT lead_id FROM old_rows);
    ELSE
        UPDATE leads SET version_xact = version_xact WHERE id IN (SELECT DISTINCT lead_id FROM new_rows);
    END IF;
    RETURN NULL;
END
$$;
"""

TRIGGERS = """
CREATE TRIGGER leads_version BEFORE UPDATE ON leads FOR EACH ROW EXECUTE FUNCTION leads_bump_version();
CREATE TRIGGER lead_placements_version_insert AFTER INSERT ON lead_pipeline_placements
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION lead_placements_bump_version();
CREATE TRIGGER lead_placements_version_update AFTER UPDATE ON lead_pipeline_placements
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION lead_placements_bump_version();
CREATE TRIGGER lead_placements_version_delete AFTER DELETE ON lead_pipeline_placements
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION lead_placements_bump_version();
"""


def upgrade() -> None:
    op.execute(COLUMNS)
    op.execute(FUNCTIONS)
    op.execute(TRIGGERS)


def downgrade() -> None:
    for name in ("insert", "update", "delete"):
        op.execute(f"DROP TRIGGER IF EXISTS lead_placements_version_{name} ON lead_pipeline_placements")
    op.execute("DROP TRIGGER IF EXISTS leads_version ON leads")
    op.execute("DROP FUNCTION IF EXISTS lead_placements_bump_version()")
    op.execute("DROP FUNCTION IF EXISTS leads_bump_version()")
    op.execute("ALTER TABLE lead_activity_events DROP COLUMN IF EXISTS group_xact")
    op.execute("ALTER TABLE lead_status_events DROP COLUMN IF EXISTS group_xact")
    op.execute("ALTER TABLE leads DROP COLUMN IF EXISTS version_xact, DROP COLUMN IF EXISTS version")
