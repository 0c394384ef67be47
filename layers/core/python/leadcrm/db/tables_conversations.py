"""Conversations, messages, the consent ledger and bulk email (issue 7)."""

from __future__ import annotations
