"""The e2e tests drive the local stack; its fixtures (`local_stack`) live in tests/conftest.py, shared with
the reliability suite. The client types are re-exported for the tests' type hints."""

from tests.support.local_stack import HttpReply, LocalStackClient

__all__ = ["HttpReply", "LocalStackClient"]
