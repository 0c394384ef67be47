"""Helpdesk tickets: configuration, SLA, routing, mail, surveys, reports and the sweep."""
