"""Converting and linking leads to members (owner/admin), and link candidates (staff)."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

router = APIGatewayHttpRouter()
