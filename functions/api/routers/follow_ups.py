"""A lead's follow-up and touches (staff): /organizations/{orgId}/leads/{leadId}/follow-up, …/touches."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

router = APIGatewayHttpRouter()
