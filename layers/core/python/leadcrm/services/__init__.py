"""Use cases: each runs one unit of work and appends the outbox events it causes."""
