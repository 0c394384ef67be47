"""A lead's consent ledger per channel (issue 7)."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

router = APIGatewayHttpRouter()
