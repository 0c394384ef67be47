"""Deals, deal pipelines, forecast and owner departure (issue 11)."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

router = APIGatewayHttpRouter()
