"""The benchmark's own PostgreSQL: BENCH_DATABASE_URL when set, else a private cluster under .local/bench-pg.

The private cluster is tuned a little for a million rows (memory, WAL size); the planner settings stay at
their defaults so the plans are the ones the tests assert. One database per scale, so the quick and the
full seed live side by side and are each seeded once.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from leadcrm.platform.db.engine import pg8000_url

CLUSTER_DIR = Path(".local/bench-pg")
# Memory and WAL for bulk seeding; nothing here changes the planner's choices.
CLUSTER_SETTINGS = {
    "shared_buffers": "2GB",
    "work_mem": "16MB",
    "maintenance_work_mem": "512MB",
    "max_wal_size": "8GB",
    "effective_cache_size": "4GB",
}


def admin_engine(url: str) -> Engine:
    return create_engine(pg8000_url(url), poolclass=NullPool, isolation_level="AUTOCOMMIT")


@contextmanager
def bench_database(scale_name: str, log=print) -> Iterator[str]:
    """Yields the URL of the bench database; stops the private cluster afterwards if this run started it."""
    given = os.environ.get("BENCH_DATABASE_URL")
    if given:
        log(f"database: BENCH_DATABASE_URL ({make_url(given).render_as_string(hide_password=True)})")
        yield given
        return
    from infra.local.postgres import LocalPostgres

    cluster = LocalPostgres(CLUSTER_DIR, durable=False)
    was_running = (cluster.data / "postmaster.pid").exists()
    server_url = cluster.start()
    if _tune(server_url):
        log("database: applying memory settings (restart)")
        cluster.stop()
        server_url = cluster.start()
    name = f"leadcrm_bench_{scale_name}"
    _create_database(server_url, name)
    log(f"database: private cluster {CLUSTER_DIR} (port {cluster.port}), database {name}")
    try:
        yield make_url(server_url).set(database=name).render_as_string(hide_password=False)
    finally:
        if not was_running and not os.environ.get("BENCH_KEEP_RUNNING"):
            cluster.stop()


def _tune(server_url: str) -> bool:
    """ALTER SYSTEM the settings that differ; True when a restart is needed for them."""
    engine = admin_engine(server_url)
    try:
        with engine.connect() as conn:
            changed: list[str] = []
            for name, value in CLUSTER_SETTINGS.items():
                current = conn.execute(text("SELECT current_setting(:n)"), {"n": name}).scalar_one()
                wanted = conn.execute(text("SELECT pg_size_pretty(pg_size_bytes(:v))"), {"v": value}).scalar_one()
                current_pretty = conn.execute(
                    text("SELECT pg_size_pretty(pg_size_bytes(:v))"), {"v": current}
                ).scalar_one()
                if current_pretty != wanted:
                    conn.execute(text(f"ALTER SYSTEM SET {name} = '{value}'"))
                    changed.append(name)
            if not changed:
                return False
            conn.execute(text("SELECT pg_reload_conf()"))
            # pending_restart is only set once the reload has been processed, which pg_reload_conf does not wait
            # for (reading it at once missed shared_buffers, and the bench ran on 128 MB): a changed setting
            # PostgreSQL reads at start only needs the restart whatever pending_restart says yet.
            return bool(
                conn.execute(
                    text("SELECT count(*) FROM pg_settings WHERE name = ANY(:names) AND context = 'postmaster'"),
                    {"names": changed},
                ).scalar_one()
            )
    finally:
        engine.dispose()


def _create_database(server_url: str, name: str) -> None:
    engine = admin_engine(server_url)
    try:
        with engine.connect() as conn:
            if not conn.execute(text("SELECT 1 FROM pg_database WHERE datname = :d"), {"d": name}).first():
                conn.execute(text(f'CREATE DATABASE "{name}"'))
    finally:
        engine.dispose()


def fresh_sibling_database(url: str, name: str) -> str:
    """The URL of database `name` on the server of `url`, made anew (a scenario's own database, holding only
    what this run writes: leads of earlier runs would change what the run measures)."""
    server = make_url(url).set(database="postgres").render_as_string(hide_password=False)
    engine = admin_engine(server)
    try:
        with engine.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        engine.dispose()
    _create_database(server, name)
    return make_url(url).set(database=name).render_as_string(hide_password=False)
