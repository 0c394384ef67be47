"""CSV lead import jobs: `POST /organizations/{orgId}/leads/import` and its progress and report (issue 6)."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

router = APIGatewayHttpRouter()
