"""Alembic environment: runs on the engine the caller hands over (leadcrm.platform.db.migrate), online only."""

from __future__ import annotations

from alembic import context
from sqlalchemy import text

from leadcrm.platform.db.engine import get_engine
from leadcrm.platform.db.schema import all_tables

# Concurrent deploys (or test workers) must not migrate at once.
MIGRATION_LOCK = 7_364_112


def run_migrations_online() -> None:
    engine = context.config.attributes.get("engine") or get_engine()
    with engine.connect() as connection:
        connection.execute(text("SELECT pg_advisory_lock(:k)"), {"k": MIGRATION_LOCK})
        try:
            context.configure(connection=connection, target_metadata=all_tables(), compare_type=True)
            with context.begin_transaction():
                context.run_migrations()
            connection.commit()
        finally:
            connection.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": MIGRATION_LOCK})
            connection.commit()


run_migrations_online()
