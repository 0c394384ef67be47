"""Deals: pipelines, transitions, forecast, people, rotting and owner departure."""
