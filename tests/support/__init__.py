"""Helpers shared by the unit, integration and e2e suites: real AWS event shapes and data factories."""
