"""Session-wide test setup: a throwaway PostgreSQL database with the migrations applied, and AWS made safe.

The migrations run once per run, into a template; each process (each pytest-xdist worker of `make test`,
or the only process of a serial run) gets copies of it (tests/support/worker_databases.py):
- DATABASE_URL set: the template is a database on that server, and each process's database
  `leadcrm_test_<hex>` a copy of it there; all are dropped at the end.
- otherwise: the template is a private cluster started from the machine's PostgreSQL binaries
  (infra/local/postgres.py) in a temporary directory; each process starts a copy of it on a port of its own
  (the fault tests restart it), stopped and removed at the end.

AWS: fake credentials, a fixed region, and no AWS_ENDPOINT_URL, so moto's `mock_aws` intercepts every call
and nothing can reach a real account or a local moto server by accident.
"""

from __future__ import annotations

import os
import random
import signal
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.support.database import drop_database, throwaway_database_name
from tests.support.local_stack import local_clock, local_stack, local_stack_database  # noqa: F401 - shared fixtures
from tests.support.worker_databases import (
    RUN_DIR,
    RUN_DIR_KEY,
    Template,
    cleanup_run,
    clone_database,
    make_run_dir,
    remove_worker_cluster,
    run_dir_of,
    start_worker_cluster,
    template,
)

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


# -- the same tests in every xdist worker ----------------------------------------------------------------
# Some modules parametrize with uuid.uuid4() values made as they are imported, and their test ids show them:
# each worker would then collect differently named tests, and xdist refuses such a run. While a test module
# is collected, uuid4() draws from a generator seeded with the module's node id (the same unknown ids in every
# process and every run); at any other time it is the real uuid4.

_real_uuid4 = uuid.uuid4
_collecting: list[random.Random] = []


def _uuid4() -> uuid.UUID:
    if _collecting:
        return uuid.UUID(int=_collecting[-1].getrandbits(128), version=4)
    return _real_uuid4()


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[None]:
    if not isinstance(collector, pytest.Module):
        return (yield)
    _collecting.append(random.Random(collector.nodeid))
    uuid.uuid4 = _uuid4
    try:
        return (yield)
    finally:
        _collecting.pop()
        if not _collecting:
            uuid.uuid4 = _real_uuid4


# -- xdist scheduling -------------------------------------------------------------------------------------
# `make test` hands whole modules to the workers (--dist loadfile --no-loadscope-reorder: a module's fixtures
# are built once and its tests run in their order, on one worker). The modules that take minutes are handed
# out first, so that no worker is left alone with one of them at the end; the rest keep their order.
SLOW_MODULES = (
    "test_api_fuzz.py",
    "test_authorization_matrix.py",
    "test_api_stateful_fuzz.py",
    "test_replays.py",
    "test_deal_flows.py",
)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if hasattr(config, "workerinput"):  # every worker sorts alike: xdist requires the same collection
        rank = {name: position for position, name in enumerate(SLOW_MODULES)}
        items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


# -- PostgreSQL -----------------------------------------------------------------------------------------
# One migrated template per run; each process (each pytest-xdist worker, or the only one) has a cluster or
# databases of its own copied from it (tests/support/worker_databases.py).

WORKER = os.environ.get("PYTEST_XDIST_WORKER", "main")


class _HandTheRunDirectoryToWorkers:
    """xdist controller side: every worker is told where the run's template lives."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir

    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[RUN_DIR_KEY] = str(self.run_dir)


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):  # an xdist worker: the controller made the run's directory
        return
    config.stash[RUN_DIR] = make_run_dir()
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_HandTheRunDirectoryToWorkers(config.stash[RUN_DIR]))
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        # A terminated run ends like an interrupted one: pytest_unconfigure still stops the clusters.
        signal.signal(signal.SIGTERM, _interrupt)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_unconfigure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput") and RUN_DIR in config.stash:  # after every worker finished
        if signal.getsignal(signal.SIGTERM) is _interrupt:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the cleanup short
        cleanup_run(config.stash[RUN_DIR])


@pytest.fixture(scope="session")
def database_template(request: pytest.FixtureRequest) -> Template:
    """The run's migrated template (a stopped cluster, or a database on the DATABASE_URL server)."""
    return template(run_dir_of(request.config))


@pytest.fixture(scope="session")
def private_postgres(request: pytest.FixtureRequest, database_template: Template) -> Iterator[LocalPostgres | None]:
    """This process's own cluster, a copy of the template cluster (None when DATABASE_URL names the caller's
    server); the fault tests restart it."""
    if database_template.cluster_root is None:
        yield None
        return
    run_dir = run_dir_of(request.config)
    cluster = start_worker_cluster(run_dir, database_template, WORKER)
    try:
        yield cluster
    finally:
        remove_worker_cluster(run_dir, cluster, WORKER)


@pytest.fixture(scope="session")
def postgres_server_url(private_postgres: LocalPostgres | None) -> str:
    """A URL on a PostgreSQL server the tests may create databases on (the caller's, or a private one)."""
    return private_postgres.url if private_postgres is not None else os.environ["DATABASE_URL"]


@contextmanager
def _database_in_use(url: str) -> Iterator[None]:
    """DATABASE_URL points at `url` (the product's engine and settings are rebuilt) until the block ends."""
    from leadcrm.platform.config import get_settings
    from leadcrm.platform.db.engine import dispose_engine

    previous = os.environ.get("DATABASE_URL")
    os.environ["DATABASE_URL"] = url
    get_settings.cache_clear()
    dispose_engine()
    try:
        yield
    finally:
        dispose_engine()
        if previous is None:
            os.environ.pop("DATABASE_URL", None)
        else:
            os.environ["DATABASE_URL"] = previous
        get_settings.cache_clear()


@pytest.fixture(scope="session")
def session_database_url(
    postgres_server_url: str, database_template: Template, fake_aws_environment: dict[str, str | None]
) -> Iterator[str]:
    """This process's test database, a copy of the migrated template; DATABASE_URL points at it."""
    name = throwaway_database_name()
    url = clone_database(postgres_server_url, name, database_template)
    try:
        with _database_in_use(url):
            yield url
    finally:
        drop_database(postgres_server_url, name)


# Each module of the integration and reliability suites runs on a database of its own, a copy of the template
# (~0.1 s): what a module finds in the database then does not depend on which modules ran before it in the
# same process, which under xdist changes from run to run. Tests that read every organization's rows (the
# outbox relay publishes all that is waiting) and PostgreSQL's plans (table statistics) see their module's
# rows only, and an organization's cascading delete does not read through every other module's rows (the
# plans modules' teardown took minutes in a shared database).
OWN_DATABASE_SUITES = {"integration", "reliability"}
TESTS = Path(__file__).resolve().parent


def _has_a_database_of_its_own(module_path: Path) -> bool:
    return module_path.is_relative_to(TESTS) and bool(
        OWN_DATABASE_SUITES.intersection(module_path.relative_to(TESTS).parts[:-1])
    )


@pytest.fixture(scope="module", autouse=True)
def database_url(
    request: pytest.FixtureRequest, postgres_server_url: str, database_template: Template
) -> Iterator[str]:
    """The test database, migrated to head; DATABASE_URL points at it (the module's own, or the session's)."""
    if not _has_a_database_of_its_own(request.path):
        yield request.getfixturevalue("session_database_url")
        return
    name = throwaway_database_name()
    url = clone_database(postgres_server_url, name, database_template)
    try:
        with _database_in_use(url):
            yield url
    finally:
        drop_database(postgres_server_url, name)
