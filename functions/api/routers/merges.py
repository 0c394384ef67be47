"""Duplicate merge, undo and pseudonymized erasure (issue 10)."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

router = APIGatewayHttpRouter()
