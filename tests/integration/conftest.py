"""Integration fixtures: every test runs inside moto's `mock_aws`, against the session's PostgreSQL database.

AWS resources a test needs (the event bus, queues, a rule) are made by the fixture that names them, so a
test that does not ask for the bus really has no bus: that is how publish failures are tested.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from moto import mock_aws

from tests.support.aws import EVENT_BUS, Queue, make_event_bus, make_queue, route_bus_to_queue
from tests.support.database import create_database, drop_database, engine_for, throwaway_database_name
from tests.support.events import lambda_context

LIFECYCLE_QUEUE = "leadcrm-task-lifecycle"
INGESTION_QUEUE = "leadcrm-ingestion"
GRAPH_FETCH_QUEUE = "leadcrm-graph-fetch"
META_EVENTS_QUEUE = "leadcrm-meta-events"
META_APP_SECRET = "test-meta-app-secret"
META_VERIFY_TOKEN = "test-meta-verify-token"


def _settings_changed() -> None:
    from leadcrm.platform.adapters.aws import reset_clients
    from leadcrm.platform.config import get_settings

    get_settings.cache_clear()
    reset_clients()


@pytest.fixture(autouse=True)
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """moto for every integration test: nothing leaves the machine, whatever the code under test calls."""
    monkeypatch.setenv("EVENT_BUS_NAME", EVENT_BUS)
    monkeypatch.setenv("EVENT_SOURCE", "leadcrm")
    _settings_changed()
    with mock_aws():
        yield
    _settings_changed()


@pytest.fixture
def ctx() -> Any:
    return lambda_context()


@pytest.fixture
def event_bus() -> str:
    """The domain event bus exists (without it, publishing after commit fails)."""
    return make_event_bus(EVENT_BUS)


@pytest.fixture
def lifecycle_queue(event_bus: str) -> Queue:
    """The task_lifecycle queue, fed by a rule on the bus for everything LeadCRM and the platform publish."""
    queue = make_queue(LIFECYCLE_QUEUE)
    route_bus_to_queue(event_bus, queue)
    return queue


@pytest.fixture
def ingestion_queue(monkeypatch: pytest.MonkeyPatch) -> Queue:
    queue = make_queue(INGESTION_QUEUE)
    monkeypatch.setenv("INGESTION_QUEUE_URL", queue.url)
    _settings_changed()
    return queue


@pytest.fixture
def graph_fetch_queue(monkeypatch: pytest.MonkeyPatch) -> Queue:
    """The queue of leadgen webhooks graph_fetch consumes; GRAPH_FETCH_QUEUE_URL names it."""
    queue = make_queue(GRAPH_FETCH_QUEUE)
    monkeypatch.setenv("GRAPH_FETCH_QUEUE_URL", queue.url)
    return queue


@pytest.fixture
def meta_events_queue(monkeypatch: pytest.MonkeyPatch) -> Queue:
    """The queue of CRM events task_lifecycle hands to meta_events; META_EVENTS_QUEUE_URL names it."""
    queue = make_queue(META_EVENTS_QUEUE)
    monkeypatch.setenv("META_EVENTS_QUEUE_URL", queue.url)
    return queue


@pytest.fixture
def meta_secrets(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, str]]:
    """The webhook receiver's secrets from the environment, re-read by this test and forgotten after it."""
    from webhooks import secrets

    monkeypatch.delenv("META_SECRET_ARN", raising=False)
    monkeypatch.setenv("META_APP_SECRET", META_APP_SECRET)
    monkeypatch.setenv("META_VERIFY_TOKEN", META_VERIFY_TOKEN)
    secrets.forget()
    yield META_APP_SECRET, META_VERIFY_TOKEN
    secrets.forget()


@pytest.fixture
def scratch_database_url(postgres_server_url: str) -> Iterator[str]:
    """An empty database of its own on the same server, for tests that rebuild a whole schema."""
    name = throwaway_database_name()
    url = create_database(postgres_server_url, name)
    yield url
    drop_database(postgres_server_url, name)


@pytest.fixture
def private_engine(database_url: str):
    """Connections of the test's own, outside the product's one-connection pool."""
    engine = engine_for(database_url)
    yield engine
    engine.dispose()
