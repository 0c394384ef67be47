"""The reliability suite runs where the integration tests run (moto for AWS, the session's PostgreSQL), and
drives the local stack for the fuzzing; the AWS fixtures are the integration suite's own."""

import pytest

from tests.integration.conftest import (  # noqa: F401 - fixtures shared with the integration suite
    aws,
    ctx,
    event_bus,
    graph_fetch_queue,
    ingestion_queue,
    lifecycle_queue,
    meta_events_queue,
    meta_secrets,
    private_engine,
)


@pytest.fixture
def route_stack(event_bus, ingestion_queue, graph_fetch_queue, monkeypatch):  # noqa: F811 - imported above
    """What the routes use, as the stack provides it: the bus (events after commit), the ingestion queue (an
    import's start), the graph-fetch queue (a WhatsApp send or templates sync), the imports bucket (its
    upload URL), a verified sender (conversation mail) and the pseudonymization key."""
    from leadcrm.leads import pseudonym_tokens
    from tests.integration.conftest import _settings_changed
    from tests.support.conversations_helpers import verify_sender
    from tests.support.ingestion_helpers import make_imports_bucket

    make_imports_bucket(monkeypatch)
    monkeypatch.delenv("PSEUDONYM_SECRET_ARN", raising=False)
    monkeypatch.setenv("PSEUDONYM_KEY", "matrix-pseudonym-key")
    _settings_changed()
    pseudonym_tokens.forget()
    verify_sender()


@pytest.fixture(scope="module")
def shared_route_stack():
    """route_stack once for a whole module, inside one moto: for the tables of cells (the authorization
    matrix) that call every route many times and change nothing AWS keeps between them. A module that takes
    it overrides `aws` with `module_aws` below, so no cell starts a moto of its own."""
    from moto import mock_aws

    from leadcrm.leads import pseudonym_tokens
    from tests.integration.conftest import GRAPH_FETCH_QUEUE, INGESTION_QUEUE, _settings_changed
    from tests.support.aws import EVENT_BUS, make_event_bus, make_queue
    from tests.support.conversations_helpers import verify_sender
    from tests.support.ingestion_helpers import make_imports_bucket

    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("EVENT_BUS_NAME", EVENT_BUS)
        monkeypatch.setenv("EVENT_SOURCE", "leadcrm")
        monkeypatch.delenv("PSEUDONYM_SECRET_ARN", raising=False)
        monkeypatch.setenv("PSEUDONYM_KEY", "matrix-pseudonym-key")
        _settings_changed()
        with mock_aws():
            make_event_bus(EVENT_BUS)
            monkeypatch.setenv("INGESTION_QUEUE_URL", make_queue(INGESTION_QUEUE).url)
            monkeypatch.setenv("GRAPH_FETCH_QUEUE_URL", make_queue(GRAPH_FETCH_QUEUE).url)
            make_imports_bucket(monkeypatch)
            _settings_changed()
            pseudonym_tokens.forget()
            verify_sender()
            yield
        _settings_changed()
