"""Public capture (G1): `POST /leads/organization/{orgId}`, no authentication."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

router = APIGatewayHttpRouter()
