"""Sends mail through SES v2 `SendEmail` (the spec's Resend).

The client is created on first use (leadcrm.platform.adapters.aws), so importing this module costs nothing. The
sender is `MAIL_FROM` (a verified SES identity in AWS); the local default is only for the local stack and
tests, where moto stands in for SES.

Two shapes: `send_email` (plain text, SES builds the MIME) for the staff digest, and `send_mime` for
conversation mail, which needs headers SES's simple content cannot carry (Reply-To per thread,
In-Reply-To/References, List-Unsubscribe): the message is built with the standard library and sent raw.

Every send names the configuration set `SES_CONFIGURATION_SET` (infra sets it on every function that may
send): its event destination publishes what becomes of each mail (delivery, bounce, complaint, reject,
delay) to EventBridge, which conversations.delivery consumes. `tags` become SES message tags, which SES
echoes in each of those events (`mail.tags`): how an event finds its mail even when the SES message id was
never recorded (conversations.rules.delivery.MailRef).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from email.headerregistry import Address
from email.message import EmailMessage
from email.utils import format_datetime, formataddr, parseaddr
from typing import Any

from leadcrm.platform import clock
from leadcrm.platform.adapters.aws import client

DEFAULT_MAIL_FROM = "LeadCRM <no-reply@mail.leadcrm.local>"


def mail_from() -> str:
    return os.environ.get("MAIL_FROM") or DEFAULT_MAIL_FROM


def configuration_set() -> str | None:
    """The SES configuration set every send names (`SES_CONFIGURATION_SET`); unset only outside AWS."""
    return os.environ.get("SES_CONFIGURATION_SET") or None


def sending_options(tags: Mapping[str, str] | None = None) -> dict[str, Any]:
    """SendEmail's ConfigurationSetName and EmailTags, as every send passes them."""
    options: dict[str, Any] = {}
    name = configuration_set()
    if name:
        options["ConfigurationSetName"] = name
    if tags:
        options["EmailTags"] = [{"Name": key, "Value": value} for key, value in tags.items()]
    return options


def send_email(
    to_address: str,
    subject: str,
    text: str,
    *,
    reply_to: str | None = None,
    tags: Mapping[str, str] | None = None,
) -> str:
    """One plain-text mail to one recipient; the SES message id. Errors (botocore) are the caller's to handle.
    `reply_to`: where the recipient's answer goes (a ticket's mails name the organization's support address)."""
    extra = {"ReplyToAddresses": [reply_to]} if reply_to else {}
    response = client("sesv2").send_email(
        FromEmailAddress=mail_from(),
        Destination={"ToAddresses": [to_address]},
        **extra,
        **sending_options(tags),
        Content={
            "Simple": {
                "Subject": {"Data": subject, "Charset": "UTF-8"},
                "Body": {"Text": {"Data": text, "Charset": "UTF-8"}},
            }
        },
    )
    return str(response["MessageId"])


@dataclass(frozen=True)
class OutboundMail:
    to_address: str
    subject: str
    text: str
    reply_to: str | None = None
    sender_name: str | None = None  # shown before MAIL_FROM's address (the organization's name)
    headers: Mapping[str, str] = field(default_factory=dict)  # In-Reply-To, References, List-Unsubscribe, …
    tags: Mapping[str, str] = field(default_factory=dict)  # SES message tags, echoed in its events


def build_mime(mail: OutboundMail) -> bytes:
    """The RFC 5322 message: UTF-8 text, headers encoded by the standard library (RFC 2047 where needed)."""
    message = EmailMessage()
    name, address = parseaddr(mail_from())
    message["From"] = formataddr((mail.sender_name or name, address)) if (mail.sender_name or name) else address
    message["To"] = Address(addr_spec=mail.to_address)
    message["Subject"] = mail.subject
    message["Date"] = format_datetime(clock.now())  # the clock's day, as every stamp
    if mail.reply_to:
        message["Reply-To"] = mail.reply_to
    for header, value in mail.headers.items():
        message[header] = value
    # Quoted-printable keeps the message 7-bit, as SES recommends for raw mail with non-ASCII text.
    message.set_content(mail.text, charset="utf-8", cte="quoted-printable")
    return message.as_bytes()


def send_mime(mail: OutboundMail) -> str:
    """One raw message to one recipient; the SES message id. Errors (botocore) are the caller's to handle."""
    response = client("sesv2").send_email(
        FromEmailAddress=parseaddr(mail_from())[1],
        Destination={"ToAddresses": [mail.to_address]},
        Content={"Raw": {"Data": build_mime(mail)}},
        **sending_options(mail.tags),
    )
    return str(response["MessageId"])
