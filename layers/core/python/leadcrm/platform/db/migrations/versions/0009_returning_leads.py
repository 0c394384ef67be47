"""returning leads: when and how a closed lead came back, paused leads, unanswered calls in a row

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-29

Every column is nullable or has a constant default, so adding them is a catalog change (PostgreSQL 11+):
no table rewrite, the ACCESS EXCLUSIVE lock is held only for an instant. The CHECK constraints are added
NOT VALID and validated afterwards, which scans the table under a lock that lets reads and writes go on.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

STAGE_CATEGORIES = (
    "new",
    "contacted",
    "callback",
    "trial_booked",
    "no_show",
    "converted",
    "customer",
    "lost",
    "frozen",
)
RETURN_VIAS = ("public_capture", "staff_create", "meta", "whatsapp", "join_released", "staff_reopen")


def _one_of(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


CHECKS = {
    "ck_leads_returned_from_status": _one_of("returned_from_status", STAGE_CATEGORIES),
    "ck_leads_returned_via": _one_of("returned_via", RETURN_VIAS),
    "ck_leads_return_count_not_negative": "return_count >= 0",
    "ck_leads_consecutive_no_answer_count_not_negative": "consecutive_no_answer_count >= 0",
}


def upgrade() -> None:
    op.add_column("leads", sa.Column("returned_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("leads", sa.Column("returned_from_status", sa.Text(), nullable=True))
    op.add_column("leads", sa.Column("returned_via", sa.Text(), nullable=True))
    op.add_column("leads", sa.Column("return_count", sa.Integer(), server_default=sa.text("0"), nullable=False))
    op.add_column("leads", sa.Column("paused_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column(
        "leads", sa.Column("consecutive_no_answer_count", sa.Integer(), server_default=sa.text("0"), nullable=False)
    )
    for name, condition in CHECKS.items():
        op.execute(f"ALTER TABLE leads ADD CONSTRAINT {name} CHECK ({condition}) NOT VALID")
        op.execute(f"ALTER TABLE leads VALIDATE CONSTRAINT {name}")
    op.create_index(
        "ix_leads_org_returned_at",
        "leads",
        ["organization_id", "returned_at"],
        postgresql_where=sa.text("returned_at IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_leads_org_returned_at", table_name="leads", postgresql_where=sa.text("returned_at IS NOT NULL"))
    for name in CHECKS:
        op.drop_constraint(op.f(name), "leads", type_="check")
    for column in (
        "consecutive_no_answer_count",
        "paused_at",
        "return_count",
        "returned_via",
        "returned_from_status",
        "returned_at",
    ):
        op.drop_column("leads", column)
