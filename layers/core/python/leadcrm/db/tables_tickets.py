"""Helpdesk tickets, routing rules, SLA policies and calendars (issue 12)."""

from __future__ import annotations
