"""Attribution: touch log, source correction, campaign spend and CAC (issue 9)."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

router = APIGatewayHttpRouter()
