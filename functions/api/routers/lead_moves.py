"""Moving leads (staff): stage/status, secondary pipelines, set-primary, bulk moves, ownership, archive."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

router = APIGatewayHttpRouter()
