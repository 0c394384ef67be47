"""What conversations does when an event arrives: SES's email sending events (EventBridge detail-types
`Email Sent`, `Email Delivered`, `Email Bounced`, `Email Complaint Received`, `Email Rejected`, `Email
Delivery Delayed`; source `aws.ses`), applied by conversations.delivery."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection

from leadcrm.conversations.delivery import apply_ses_event
from leadcrm.conversations.rules.delivery import DETAIL_TYPES

SES_DETAIL_TYPES = tuple(DETAIL_TYPES)


def on_ses_event(conn: Connection, detail: dict[str, Any]) -> bool:
    """One SES event record: the mail's send and delivery status, suppression, the bulk email's bounce rate."""
    return apply_ses_event(conn, detail)
