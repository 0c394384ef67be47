"""Pipelines and their stages: the default pipeline, stage lookups and editing."""
