"""The reliability suite runs where the integration tests run (moto for AWS, the session's PostgreSQL), and
drives the local stack for the fuzzing; the AWS fixtures are the integration suite's own."""

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
