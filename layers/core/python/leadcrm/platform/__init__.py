"""What every capability shares: configuration, ids, errors, the engine and unit of work, the outbox, idempotency,
keyset cursors, migrations and the AWS adapters. Imports no capability.
"""
