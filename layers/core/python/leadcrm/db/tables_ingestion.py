"""Integration connections (Meta Lead Ads, WhatsApp Cloud), lead attribution and CSV import jobs (issue 6)."""

from __future__ import annotations
