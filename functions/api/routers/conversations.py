"""Conversations (staff): threads, messages, send email, internal notes, read and assign (issue 7)."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

router = APIGatewayHttpRouter()
