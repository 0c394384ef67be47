"""Fixed-window throttling of public endpoints, counted in PostgreSQL (`rate_limit_counters`).

Every Lambda instance sees the same counters, so the limit holds however far the function scales out. A
counter is one row per (bucket, one-minute window), bumped by one upsert; windows that started over an hour
ago are deleted by the scheduled `retention_cleanup` job (RETENTION).
"""

from __future__ import annotations

import logging
import os
import uuid
from datetime import datetime, timedelta

from sqlalchemy.dialects.postgresql import insert as pg_insert

from leadcrm.leads.rules.intake import over_limit, rate_window_start, retry_after_seconds
from leadcrm.leads.tables import rate_limit_counters
from leadcrm.platform import clock as platform_clock
from leadcrm.platform.db.uow import UnitOfWork
from leadcrm.platform.errors import AppError
from leadcrm.platform.retention import Retention

logger = logging.getLogger(__name__)

CAPTURE_LIMIT_PER_IP_ENV = "CAPTURE_LIMIT_PER_IP_PER_MINUTE"
CAPTURE_LIMIT_PER_ORG_ENV = "CAPTURE_LIMIT_PER_ORG_PER_MINUTE"
DEFAULT_CAPTURE_LIMIT_PER_IP = 10
DEFAULT_CAPTURE_LIMIT_PER_ORG = 300
COUNTERS_KEPT_FOR = timedelta(hours=1)
RETENTION = Retention(
    rate_limit_counters,
    rate_limit_counters.c.window_start,
    COUNTERS_KEPT_FOR,
    "a counter only matters during its one-minute window",
)


def clock() -> datetime:
    """The time throttling reads: the platform's clock (tests replace it to stay inside one window)."""
    return platform_clock.now()


class RateLimited(AppError):
    """429 RATE_LIMITED; the API adds `Retry-After: <retry_after_seconds>`."""

    status, code = 429, "RATE_LIMITED"

    def __init__(self, retry_after_seconds: int) -> None:
        super().__init__("Too many submissions; try again later.", retryAfterSeconds=retry_after_seconds)
        self.retry_after_seconds = retry_after_seconds


def _limit_from_env(name: str, default: int) -> int:
    raw = os.environ.get(name)
    try:
        value = int(raw) if raw else default
    except ValueError:
        logger.warning("ignoring a limit that is not a whole number", extra={"setting": name})
        return default
    return value if value > 0 else default


def count_capture(source_ip: str | None, organization_id: uuid.UUID | None) -> None:
    """Count one public capture for its client IP and its organization; RateLimited over either limit.

    Runs in its own short transaction, committed before the capture's own work starts, so a refused request
    has written nothing but its count. The buckets are bumped by one statement in a fixed (sorted) order,
    so concurrent requests lock the same rows in the same order.
    """
    limits: dict[str, int] = {}
    if source_ip:
        limits[f"capture:ip:{source_ip[:64]}"] = _limit_from_env(CAPTURE_LIMIT_PER_IP_ENV, DEFAULT_CAPTURE_LIMIT_PER_IP)
    if organization_id is not None:
        limits[f"capture:org:{organization_id}"] = _limit_from_env(
            CAPTURE_LIMIT_PER_ORG_ENV, DEFAULT_CAPTURE_LIMIT_PER_ORG
        )
    now = clock()
    window_start = rate_window_start(now)
    if not limits:
        return
    upsert = pg_insert(rate_limit_counters).values(
        [{"bucket": bucket, "window_start": window_start, "hits": 1} for bucket in sorted(limits)]
    )
    with UnitOfWork() as uow:
        counts = uow.connection.execute(
            upsert.on_conflict_do_update(
                index_elements=["bucket", "window_start"], set_={"hits": rate_limit_counters.c.hits + 1}
            ).returning(rate_limit_counters.c.bucket, rate_limit_counters.c.hits)
        ).all()
        uow.commit()
    refused = [bucket for bucket, hits in counts if over_limit(hits, limits[bucket])]
    if refused:
        logger.info("public capture throttled", extra={"buckets": [b.split(":")[1] for b in refused]})
        raise RateLimited(retry_after_seconds(window_start, now))
