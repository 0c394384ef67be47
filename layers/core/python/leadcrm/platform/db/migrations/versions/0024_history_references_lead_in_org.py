"""A lead's status events and timeline entries reference the lead within its organization.

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-02

- leads gets UNIQUE (organization_id, id) (it replaces the plain index ix_leads_org_id on the same columns).
- ix_leads_org_phone_digits goes: nothing reads phone_digits through it (search matches '%digits%', which a
  B-tree cannot serve, through the trigram index; dedup and identity match its last seven digits, through
  ix_leads_org_phone_last7), and every lead write and every non-HOT update (a stage move) paid for it.
- lead_status_events and lead_activity_events reference leads by (organization_id, lead_id) instead of two
  foreign keys, one to leads(id) and one to organizations(id). One check per row instead of two (a bulk
  move of 10,000 leads writes 20,000 such rows), and a stronger one: a history row of another organization's
  lead can no longer be written. Deleting an organization still removes them, through its leads.

The new keys are added NOT VALID, then validated, so the scan does not block writes; the unique index can be
built CONCURRENTLY by hand beforehand (the migration then finds it).
"""

from __future__ import annotations

from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None

HISTORY_TABLES = ("lead_status_events", "lead_activity_events")


def upgrade() -> None:
    # IF NOT EXISTS: on a large table, build it by hand first with CREATE UNIQUE INDEX CONCURRENTLY (the
    # migrations run in one transaction, where CONCURRENTLY cannot).
    op.execute("CREATE UNIQUE INDEX IF NOT EXISTS uq_leads_organization_id_id ON leads (organization_id, id)")
    op.execute(
        "ALTER TABLE leads ADD CONSTRAINT uq_leads_organization_id_id UNIQUE USING INDEX uq_leads_organization_id_id"
    )
    op.execute("DROP INDEX ix_leads_org_id")
    op.execute("DROP INDEX ix_leads_org_phone_digits")
    for table in HISTORY_TABLES:
        op.execute(
            f"ALTER TABLE {table} ADD CONSTRAINT fk_{table}_organization_id_leads FOREIGN KEY (organization_id, lead_id) "
            "REFERENCES leads (organization_id, id) ON DELETE CASCADE NOT VALID"
        )
        op.execute(f"ALTER TABLE {table} VALIDATE CONSTRAINT fk_{table}_organization_id_leads")
        op.execute(f"ALTER TABLE {table} DROP CONSTRAINT fk_{table}_lead_id_leads")
        op.execute(f"ALTER TABLE {table} DROP CONSTRAINT fk_{table}_organization_id_organizations")


def downgrade() -> None:
    for table in HISTORY_TABLES:
        op.execute(
            f"ALTER TABLE {table} ADD CONSTRAINT fk_{table}_organization_id_organizations FOREIGN KEY (organization_id) "
            "REFERENCES organizations (id) ON DELETE CASCADE"
        )
        op.execute(
            f"ALTER TABLE {table} ADD CONSTRAINT fk_{table}_lead_id_leads FOREIGN KEY (lead_id) "
            "REFERENCES leads (id) ON DELETE CASCADE"
        )
        op.execute(f"ALTER TABLE {table} DROP CONSTRAINT fk_{table}_organization_id_leads")
    op.execute("CREATE INDEX ix_leads_org_phone_digits ON leads (organization_id, phone_digits)")
    op.execute("CREATE INDEX ix_leads_org_id ON leads (organization_id, id)")
    op.execute("ALTER TABLE leads DROP CONSTRAINT uq_leads_organization_id_id")
