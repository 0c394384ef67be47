"""Helpdesk tickets, routing rules, SLA policies and reports (issue 12)."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

router = APIGatewayHttpRouter()
