"""Outbound webhooks: organizations subscribe HTTPS endpoints to LeadCRM's events (issue 25).

Reads events only: the bus's events become delivery rows (`fanout`), which are signed in the VPC and sent by
the webhook_delivery function outside it; its results come back on the bus (`deliveries`).
"""
