"""Pipelines and their stages (staff): `/organizations/{orgId}/pipelines`."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

router = APIGatewayHttpRouter()
