"""graph_fetch: an index on lead_attributions(lead_id).

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-29

Erasing a lead cascades to its attributions; the foreign key's lookup is by `lead_id` alone, which the
(organization_id, lead_id) index cannot serve without scanning it. The graph-fetch stage itself (Graph read
outside the VPC) needs no schema change: a connection's secret is now named after its account, and the
database still stores only the secret's ARN.
"""

from __future__ import annotations

from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_lead_attributions_lead", "lead_attributions", ["lead_id"])


def downgrade() -> None:
    op.drop_index("ix_lead_attributions_lead", table_name="lead_attributions")
