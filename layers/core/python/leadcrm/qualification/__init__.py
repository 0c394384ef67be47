"""Qualification: enrichment, scoring, merges and pseudonymization."""
