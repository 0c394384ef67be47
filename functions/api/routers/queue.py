"""The work queue (staff): GET /organizations/{orgId}/leads/queue."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

router = APIGatewayHttpRouter()
