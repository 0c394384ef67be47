"""directory sync: the platform's organization, user and membership events are applied in updatedAt order.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-01

- `platform_updated_at` on organizations, users and memberships: the updatedAt of the newest platform event
  applied, so an older one arriving late changes nothing.
- `organizations.deleted_at`: organization.deleted is a tombstone (nobody is admitted; no older event revives it).
- `organizations.settings_changed_at`: when each shared setting last changed, from the platform or the
  settings route; the older change never overwrites the newer.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "organizations",
        sa.Column("settings_changed_at", JSONB, nullable=False, server_default=sa.text("'{}'::jsonb")),
    )
    op.add_column("organizations", sa.Column("platform_updated_at", sa.DateTime(timezone=True)))
    op.add_column("organizations", sa.Column("deleted_at", sa.DateTime(timezone=True)))
    op.add_column("users", sa.Column("platform_updated_at", sa.DateTime(timezone=True)))
    op.add_column("memberships", sa.Column("platform_updated_at", sa.DateTime(timezone=True)))


def downgrade() -> None:
    op.drop_column("memberships", "platform_updated_at")
    op.drop_column("users", "platform_updated_at")
    op.drop_column("organizations", "deleted_at")
    op.drop_column("organizations", "platform_updated_at")
    op.drop_column("organizations", "settings_changed_at")
