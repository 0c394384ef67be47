"""Settings read from the environment once per process.

Every function reads the same names; infra sets them in AWS and the local stack sets them on one machine.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache


@dataclass(frozen=True)
class DatabaseSettings:
    url: str | None
    auth_mode: str  # "url" | "secret" | "iam"
    host: str | None
    port: int
    name: str
    user: str | None
    secret_arn: str | None
    pool_size: int
    ssl: bool


@dataclass(frozen=True)
class Settings:
    database: DatabaseSettings
    event_bus_name: str
    event_source: str
    ingestion_queue_url: str | None
    region: str


@cache
def get_settings() -> Settings:
    env = os.environ
    url = env.get("DATABASE_URL") or None
    return Settings(
        database=DatabaseSettings(
            url=url,
            auth_mode="url" if url else env.get("DB_AUTH_MODE", "secret"),
            host=env.get("DB_HOST"),
            port=int(env.get("DB_PORT", "5432")),
            name=env.get("DB_NAME", "leadcrm"),
            user=env.get("DB_USER"),
            secret_arn=env.get("DB_SECRET_ARN"),
            pool_size=int(env.get("DB_POOL_SIZE", "1")),
            ssl=env.get("DB_SSL", "true" if not url else "false").lower() == "true",
        ),
        event_bus_name=env.get("EVENT_BUS_NAME", "leadcrm-events"),
        event_source=env.get("EVENT_SOURCE", "leadcrm"),
        ingestion_queue_url=env.get("INGESTION_QUEUE_URL"),
        region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "eu-west-1",
    )
