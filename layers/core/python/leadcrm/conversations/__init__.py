"""Talking to leads: threads, sending, inbound mail, the consent ledger and bulk email."""
