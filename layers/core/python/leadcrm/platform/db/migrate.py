"""Applies the Alembic migrations: `python -m leadcrm.platform.db.migrate` (or upgrade() from a deploy trigger)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine

from leadcrm.platform.db.engine import get_engine

MIGRATIONS = Path(__file__).with_name("migrations")


def alembic_config(engine: Engine) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["engine"] = engine
    return config


def upgrade(engine: Engine | None = None, revision: str = "head") -> None:
    command.upgrade(alembic_config(engine or get_engine()), revision)


if __name__ == "__main__":
    upgrade()
