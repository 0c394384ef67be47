"""Session-wide test setup: a throwaway PostgreSQL database with the migrations applied, and AWS made safe.

- DATABASE_URL set: a fresh database `leadcrm_test_<hex>` is created on that server and dropped at the end.
- otherwise: a private cluster is started from the machine's PostgreSQL binaries (infra/local/postgres.py)
  in a temporary directory, and stopped and removed at the end.

AWS: fake credentials, a fixed region, and no AWS_ENDPOINT_URL, so moto's `mock_aws` intercepts every call
and nothing can reach a real account or a local moto server by accident.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support.database import create_database, drop_database, throwaway_database_name
from tests.support.local_stack import local_stack, local_stack_database  # noqa: F401 - shared fixtures

if TYPE_CHECKING:
    from infra.local.postgres import LocalPostgres

FAKE_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SECURITY_TOKEN": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "eu-west-1",
    "AWS_REGION": "eu-west-1",
}


def _clear_cached_configuration() -> None:
    from leadcrm.platform.adapters.aws import reset_clients
    from leadcrm.platform.config import get_settings

    reset_clients()
    get_settings.cache_clear()


# What the session changed in the environment, as it was before (None: it was not set). A suite that must
# reach a real endpoint (the e2e tests driving the local stack) can read AWS_ENDPOINT_URL back from here.
ORIGINAL_AWS_ENVIRONMENT: dict[str, str | None] = {}


@pytest.fixture(scope="session", autouse=True)
def fake_aws_environment() -> Iterator[dict[str, str | None]]:
    """Fake credentials and region; no endpoint override or profile. Yields the values it replaced."""
    with pytest.MonkeyPatch.context() as mp:
        for name, value in FAKE_AWS_ENV.items():
            ORIGINAL_AWS_ENVIRONMENT[name] = os.environ.get(name)
            mp.setenv(name, value)
        for name in list(os.environ):
            if name.startswith("AWS_ENDPOINT_URL") or name in {"AWS_PROFILE", "AWS_DEFAULT_PROFILE"}:
                ORIGINAL_AWS_ENVIRONMENT[name] = os.environ[name]
                mp.delenv(name)
        _clear_cached_configuration()
        yield dict(ORIGINAL_AWS_ENVIRONMENT)
    _clear_cached_configuration()


@pytest.fixture(autouse=True)
def _forget_aws_clients_and_settings() -> Iterator[None]:
    """Clients made inside one test's mock must not leak into the next; env changes take effect per test."""
    yield
    _clear_cached_configuration()


# -- PostgreSQL -----------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def private_postgres() -> Iterator[LocalPostgres | None]:
    """The private cluster the tests started (None when DATABASE_URL names the caller's server); the fault
    tests restart it."""
    if os.environ.get("DATABASE_URL"):
        yield None
        return
    from infra.local.postgres import LocalPostgres

    root = Path(tempfile.mkdtemp(prefix="leadcrm-pg-"))
    cluster = LocalPostgres(root, durable=False)
    try:
        cluster.start()
        yield cluster
    finally:
        try:
            cluster.stop()
        finally:
            shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server_url(private_postgres: LocalPostgres | None) -> str:
    """A URL on a PostgreSQL server the tests may create databases on (the caller's, or a private one)."""
    return private_postgres.url if private_postgres is not None else os.environ["DATABASE_URL"]


@pytest.fixture(scope="session", autouse=True)
def database_url(postgres_server_url: str, fake_aws_environment: dict[str, str | None]) -> Iterator[str]:
    """The test database, migrated to head; DATABASE_URL points at it for the whole session."""
    from leadcrm.platform.config import get_settings
    from leadcrm.platform.db.engine import dispose_engine
    from leadcrm.platform.db.migrate import upgrade

    name = throwaway_database_name()
    url = create_database(postgres_server_url, name)
    previous = os.environ.get("DATABASE_URL")
    os.environ["DATABASE_URL"] = url
    get_settings.cache_clear()
    dispose_engine()
    try:
        upgrade()
        yield url
    finally:
        dispose_engine()
        if previous is None:
            os.environ.pop("DATABASE_URL", None)
        else:
            os.environ["DATABASE_URL"] = previous
        get_settings.cache_clear()
        drop_database(postgres_server_url, name)
