"""capture, campaigns, tags: the campaign picker's index (live hooks of an organization by name)

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_lead_campaigns_org_name",
        "lead_campaigns",
        ["organization_id", "name", "id"],
        postgresql_where=sa.text("archived_at IS NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_lead_campaigns_org_name", table_name="lead_campaigns")
