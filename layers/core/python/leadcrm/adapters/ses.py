"""Sends mail through SES v2 `SendEmail` (the spec's Resend).

The client is created on first use (leadcrm.adapters.aws), so importing this module costs nothing. The
sender is `MAIL_FROM` (a verified SES identity in AWS); the local default is only for the local stack and
tests, where moto stands in for SES.
"""

from __future__ import annotations

import os

from leadcrm.adapters.aws import client

DEFAULT_MAIL_FROM = "LeadCRM <no-reply@mail.leadcrm.local>"


def mail_from() -> str:
    return os.environ.get("MAIL_FROM") or DEFAULT_MAIL_FROM


def send_email(to_address: str, subject: str, text: str, *, reply_to: str | None = None) -> str:
    """One plain-text mail to one recipient; the SES message id. Errors (botocore) are the caller's to handle.
    `reply_to`: where the recipient's answer goes (a ticket's mails name the organization's support address)."""
    extra = {"ReplyToAddresses": [reply_to]} if reply_to else {}
    response = client("sesv2").send_email(
        FromEmailAddress=mail_from(),
        Destination={"ToAddresses": [to_address]},
        **extra,
        Content={
            "Simple": {
                "Subject": {"Data": subject, "Charset": "UTF-8"},
                "Body": {"Text": {"Data": text, "Charset": "UTF-8"}},
            }
        },
    )
    return str(response["MessageId"])
