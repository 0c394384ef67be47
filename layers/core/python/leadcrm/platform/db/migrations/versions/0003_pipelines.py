"""pipelines: the default pipeline is never archived, and stage positions are never negative

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_check_constraint(
        op.f("ck_pipelines_default_not_archived"), "pipelines", "NOT (is_default AND archived_at IS NOT NULL)"
    )
    op.create_check_constraint(op.f("ck_pipeline_stages_position_not_negative"), "pipeline_stages", "position >= 0")


def downgrade() -> None:
    op.drop_constraint(op.f("ck_pipeline_stages_position_not_negative"), "pipeline_stages", type_="check")
    op.drop_constraint(op.f("ck_pipelines_default_not_archived"), "pipelines", type_="check")
