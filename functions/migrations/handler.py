"""Applies the database migrations; invoked by the deploy-time trigger before any traffic function updates.

CloudFormation runs it (through a CDK trigger) on every deploy that changes the migrations, the core
layer or this function, after the database and proxy exist and before the api, ingestion and
task_lifecycle functions are created or updated. Alembic's upgrade is idempotent, so a re-run applies
nothing. An exception fails the invocation, which fails and rolls back the deploy: new code never
runs against an old schema.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger

from leadcrm.platform.telemetry import instrumented

logger = Logger(service="leadcrm")  # the parent of the core's `leadcrm.*` loggers (platform.telemetry)


@instrumented()
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, str]:
    from leadcrm.platform.db.migrate import upgrade

    upgrade()
    logger.info("migrations applied")
    return {"status": "migrated"}
