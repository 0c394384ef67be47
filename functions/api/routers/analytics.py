"""Lead analytics, funnel and response metrics: `…/leads/analytics` (issue 9)."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

router = APIGatewayHttpRouter()
