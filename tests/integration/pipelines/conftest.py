"""Fixtures of the pipelines API tests."""

from __future__ import annotations

import pytest

from tests.support.factories import make_caller


@pytest.fixture
def with_event_bus(event_bus):
    """Creating leads (for the STAGE_HAS_LEADS tests) publishes after commit; here the bus exists."""


@pytest.fixture
def owner():
    return make_caller(role="owner")
