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
    meta_secrets,
    private_engine,
)


@pytest.fixture
def route_stack(event_bus, ingestion_queue, monkeypatch):  # noqa: F811 - the fixtures imported above
    """What the routes use, as the stack provides it: the bus (events after commit), the ingestion queue (an
    import's start), the imports bucket (its upload URL), a verified sender (conversation mail) and the
    pseudonymization key."""
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
