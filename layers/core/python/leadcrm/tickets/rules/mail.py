"""Tickets and email, the pure parts: the support address, ticket references in subjects, what a customer's
reply to a resolved ticket says, and the mails a ticket sends.

Support address (one per organization): ``support+<token>@<inbound domain>``. The token is random (12
lowercase base32 characters, stored in `ticket_settings.support_token`), so an address names its
organization without exposing the organization id, and an owner can rotate it when it attracts spam. The
inbound-email ingestion (conversations) hands every recipient to `parse_support_address`; a token it finds
is looked up by `tickets.email.organization_for_support_address`.

Replies find their ticket by `In-Reply-To` (our outgoing mails' SES Message-ID, `<provider id@…>`, or an
earlier inbound message of the ticket), else by the ``[#<number>]`` reference every ticket mail carries in
its subject (only from the ticket's own requester address, so a stranger cannot reopen a ticket by typing
a number).

Requester address: what a mail's From gave, made an address a ticket's mail can go to (`requester_address`).
Mail whose From is no address once cleaned (`\x00@example.com` leaves `@example.com`) still opens its ticket:
the organization received the request and keeps it (spec, lead intake: durable receipt, the original message
kept; "notification fails: keep the record and surface the failure"). The ticket has no requester address,
and each mail it would send is recorded as skipped, "no address to write to", for staff to see.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from email.utils import parseaddr
from enum import StrEnum

SUPPORT_LOCAL_PART = "support"
TOKEN_ALPHABET = "abcdefghijklmnopqrstuvwxyz234567"
TOKEN_LENGTH = 12
_TOKEN = re.compile(rf"^[{TOKEN_ALPHABET}]{{{TOKEN_LENGTH}}}$")
_REFERENCE = re.compile(r"\[#(\d{1,12})\]")
_MESSAGE_ID = re.compile(r"<?\s*([^<>@\s]+)@([^<>\s]+?)\s*>?$")


def new_support_token() -> str:
    return "".join(secrets.choice(TOKEN_ALPHABET) for _ in range(TOKEN_LENGTH))


def support_address(token: str, inbound_domain: str) -> str:
    return f"{SUPPORT_LOCAL_PART}+{token}@{inbound_domain}"


def parse_support_address(address: str, inbound_domain: str | None = None) -> str | None:
    """The token of a support address (display names and case ignored), None for any other address.
    With `inbound_domain`, an address at another domain is not ours."""
    _, bare = parseaddr(address)
    local, at, domain = bare.strip().lower().rpartition("@")
    if not at or not local:
        return None
    if inbound_domain is not None and domain != inbound_domain.lower():
        return None
    prefix, plus, token = local.partition("+")
    if prefix != SUPPORT_LOCAL_PART or not plus or _TOKEN.match(token) is None:
        return None
    return token


def requester_address(sender: str | None) -> str | None:
    """The sender's address as a ticket keeps it (lowercase), or None when there is none to write to. NULs,
    other control characters and spaces are removed first (no mail system puts them in an address, and
    PostgreSQL text cannot hold a NUL); what is left must be an email address by its syntax, at a domain
    mail can reach: any name but the special-use ones (localhost, .local, .invalid, …), .test allowed (RFC
    6761: for testing, as the stacks' own mail is). No DNS lookup: the mail just arrived from it."""
    # imported here: email_validator builds its tables on import (~17 ms); only inbound mail needs it
    from email_validator import EmailNotValidError, validate_email

    cleaned = "".join(ch for ch in sender or "" if ch.isprintable() and not ch.isspace())
    if not cleaned:
        return None
    try:
        validate_email(cleaned, check_deliverability=False, globally_deliverable=False, test_environment=True)
    except EmailNotValidError:
        return None
    return cleaned.lower()


def subject_reference(subject: str) -> int | None:
    """The ticket number in a subject's ``[#1042]``, None without one."""
    match = _REFERENCE.search(subject or "")
    return int(match.group(1)) if match else None


def message_id_key(header: str | None) -> str | None:
    """The part of a Message-ID before the '@', which is what SES answers as the message id of a mail it sent
    (SES sets the Message-ID header to ``<id@region.amazonses.com>``, whatever the sender asked for)."""
    if not header:
        return None
    match = _MESSAGE_ID.search(header.strip().split()[0])
    return match.group(1) if match else None


class ReplyMeaning(StrEnum):
    CONFIRMED = "confirmed"
    PERSISTS = "persists"


_NEGATIVE = re.compile(
    r"(?<!\w)(not|still|no longer works|again|persists?|persisting|broken|doesn'?t|isn'?t|didn'?t|"
    r"won'?t|can'?t|cannot|hasn'?t|haven'?t|same (problem|issue|error)|nope)(?!\w)",
    re.IGNORECASE,
)
_POLITE_NO = re.compile(r"(?<!\w)no (problem|worries|issues? (any ?more|now))(?!\w)", re.IGNORECASE)
_BARE_NO = re.compile(r"^\s*no\b", re.IGNORECASE)
_POSITIVE = re.compile(
    r"(?<!\w)(yes|yep|yeah|resolved|solved|fixed|works|working|confirm(ed)?|all good|thanks?|thank you|"
    r"perfect|great|sorted)(?!\w)",
    re.IGNORECASE,
)


def new_text(text: str) -> str:
    """The reply's own words: quoted lines ('>') and everything from an "On … wrote:" line on dropped.
    (Ingestion already strips quoted history with its parser; this keeps the classifier safe without it.)"""
    kept = []
    for line in (text or "").splitlines():
        stripped = line.strip()
        if stripped.startswith(">"):
            continue
        if re.match(r"^On .+wrote:$", stripped) or stripped.startswith("-----Original Message-----"):
            break
        kept.append(line)
    return "\n".join(kept).strip()


def reply_meaning(text: str) -> ReplyMeaning:
    """What a customer's reply to "is it resolved?" says. It confirms only when it says so (yes, fixed,
    works, thanks, …) and nothing in it says otherwise (not, still, again, broken, …); anything else, an
    unclear reply included, means the issue persists: the ticket reopens and a person reads the reply, which
    is cheaper than closing a ticket whose customer still has the problem."""
    words = _POLITE_NO.sub(" ", new_text(text))
    if _NEGATIVE.search(words) or _BARE_NO.match(words):
        return ReplyMeaning.PERSISTS
    if _POSITIVE.search(words):
        return ReplyMeaning.CONFIRMED
    return ReplyMeaning.PERSISTS


def reopen_reason(text: str, *, limit: int = 500) -> str:
    """The reopen reason a reply gives: its own words, shortened."""
    words = " ".join(new_text(text).split())
    return (
        (words[: limit - 1] + "…") if len(words) > limit else (words or "The customer replied that the issue persists.")
    )


class MailKind(StrEnum):
    RESOLUTION_CONFIRMATION = "resolution_confirmation"
    SATISFACTION_SURVEY = "satisfaction_survey"


@dataclass(frozen=True)
class Mail:
    subject: str
    text: str


def _short(subject: str, limit: int = 120) -> str:
    subject = " ".join((subject or "").split())
    return subject if len(subject) <= limit else subject[: limit - 1] + "…"


def compose_confirmation(
    number: int, subject: str, resolution: str, organization_name: str, auto_close_hours: int
) -> Mail:
    days = auto_close_hours / 24
    window = f"{auto_close_hours} hours" if auto_close_hours % 24 else f"{int(days)} day{'s' if days != 1 else ''}"
    return Mail(
        subject=f"[#{number}] Resolved: {_short(subject)}",
        text=(
            f'Hello,\n\nWe believe your request #{number} "{_short(subject)}" is resolved:\n\n{resolution}\n\n'
            f'If it is, reply "yes" (or simply do nothing: we close the request in {window}).\n'
            "If the problem persists, reply and tell us what still happens; we reopen the request.\n\n"
            f"{organization_name}\n"
        ),
    )


def compose_survey(number: int, subject: str, organization_name: str, link: str) -> Mail:
    return Mail(
        subject=f"[#{number}] How did we do?",
        text=(
            f'Hello,\n\nYour request #{number} "{_short(subject)}" is closed.\n\n'
            f"How satisfied are you with the help you got, from 1 to 5? Tell us here:\n{link}\n\n"
            f"Thank you,\n{organization_name}\n"
        ),
    )
