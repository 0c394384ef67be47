"""Integration connections (owner/admin): Meta Lead Ads and WhatsApp Cloud (issue 6)."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

router = APIGatewayHttpRouter()
