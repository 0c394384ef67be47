"""Deals, deal pipelines and owner departure (issue 11)."""

from __future__ import annotations
