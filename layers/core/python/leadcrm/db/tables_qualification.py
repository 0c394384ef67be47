"""Enrichment, scoring models, qualification and lead merges (issue 10)."""

from __future__ import annotations
