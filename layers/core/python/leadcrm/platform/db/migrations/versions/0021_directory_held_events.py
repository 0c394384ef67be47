"""directory sync: platform events held until what they wait for arrives.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-02

`directory_held_events` keeps, per held thing, the newest version of an event that cannot be applied yet: a
membership before its user or organization (or known only by its deletion), an organization's deletion before
its creation, a user's email or subject still held by another user, a self-signup before its membership is
active. It is applied, in the arriving event's transaction, when the missing row arrives (directory.held).
No foreign keys: what a held row names may not exist yet.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "directory_held_events",
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("subject_id", sa.Uuid(), nullable=False),
        sa.Column("organization_id", sa.Uuid()),
        sa.Column("user_id", sa.Uuid()),
        sa.Column("waiting_for", sa.Text(), nullable=False),
        sa.Column("detail_type", sa.Text(), nullable=False),
        sa.Column("detail", JSONB()),
        sa.Column("version", sa.DateTime(timezone=True)),
        sa.Column("deleted_at", sa.DateTime(timezone=True)),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
        sa.PrimaryKeyConstraint("kind", "subject_id", name=op.f("pk_directory_held_events")),
        sa.CheckConstraint(
            "kind IN ('membership', 'organization', 'user', 'membership.self_signup')",
            name=op.f("ck_directory_held_events_kind"),
        ),
        sa.CheckConstraint(
            "waiting_for IN ('organization', 'user', 'creation', 'live_membership', 'email', 'auth_subject', "
            "'membership')",
            name=op.f("ck_directory_held_events_waiting_for"),
        ),
    )
    op.create_index("ix_directory_held_events_organization_id", "directory_held_events", ["organization_id"])
    op.create_index("ix_directory_held_events_user_id", "directory_held_events", ["user_id"])


def downgrade() -> None:
    op.drop_table("directory_held_events")
