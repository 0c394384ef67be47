"""Reading an inbound mail without I/O: raw RFC 5322 bytes in, what a conversation needs out (spec G10).

- MIME is parsed by the standard library with `policy.default`: headers are decoded (RFC 2047), and each
  part's body is decoded by its transfer encoding (quoted-printable, base64) and its declared charset
  (windows-1255, iso-8859-1, …). A part whose charset Python does not know is decoded as UTF-8 with
  replacement characters rather than dropped.
- The body is the text/plain alternative when there is one, else the text/html one turned into text
  (quoted `<blockquote>`s and Gmail/Outlook quote containers left out).
- Quoted history and signatures are stripped by `mail-parser-reply` (maintained, headers of Gmail,
  Outlook and Apple Mail in many languages), after a cut at Hebrew "wrote:" headers it does not know.
- SES's receipt verdicts (`X-SES-Spam-Verdict`, `X-SES-Virus-Verdict`) mark a message to drop.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from email import policy
from email.headerregistry import Address
from email.message import EmailMessage, Message
from email.parser import BytesParser
from email.utils import getaddresses
from html import unescape
from html.parser import HTMLParser

from mailparser_reply import EmailReplyParser

# Headers that may name the address the mail was delivered to (To and Cc for replies; the others when a
# relay or a forwarding rule rewrote them).
RECIPIENT_HEADERS = ("To", "Cc", "Delivered-To", "X-Original-To", "X-Forwarded-To", "Envelope-To")
REPLY_LANGUAGES = ["en", "de", "fr", "es", "it", "nl"]
MAX_BODY_LENGTH = 50_000
MAX_SUBJECT_LENGTH = 500


@dataclass(frozen=True)
class InboundEmail:
    message_id: str | None
    from_address: str | None
    recipients: tuple[str, ...]
    subject: str | None
    in_reply_to: str | None
    references: tuple[str, ...]
    text: str  # the whole body as text
    reply: str  # the new part: quoted history and signature stripped
    spam: bool
    virus: bool

    @property
    def dropped_reason(self) -> str | None:
        if self.virus:
            return "virus"
        if self.spam:
            return "spam"
        return None


def parse_inbound(raw: bytes) -> InboundEmail:
    message = BytesParser(policy=policy.default).parsebytes(raw)
    assert isinstance(message, EmailMessage)
    text = _body_text(message)[:MAX_BODY_LENGTH]
    subject = _header(message, "Subject")
    return InboundEmail(
        message_id=_header(message, "Message-ID"),
        from_address=_from_address(message),
        recipients=_recipients(message),
        subject=subject[:MAX_SUBJECT_LENGTH] if subject else None,
        in_reply_to=_header(message, "In-Reply-To"),
        references=tuple((_header(message, "References") or "").split()),
        text=text,
        reply=strip_reply(text),
        spam=_verdict_failed(message, "X-SES-Spam-Verdict"),
        virus=_verdict_failed(message, "X-SES-Virus-Verdict"),
    )


def _header(message: Message, name: str) -> str | None:
    try:
        value = message.get(name)
    except (ValueError, IndexError):  # a header the registry cannot parse is treated as absent
        return None
    if value is None:
        return None
    cleaned = " ".join(str(value).split())
    return cleaned or None


def _verdict_failed(message: Message, name: str) -> bool:
    """SES writes PASS, FAIL, GRAY or PROCESSING_FAILED; only FAIL drops the message."""
    return (_header(message, name) or "").upper() == "FAIL"


def _from_address(message: Message) -> str | None:
    found = _addresses(message, ("From",))
    return found[0] if found else None


def _recipients(message: Message) -> tuple[str, ...]:
    return tuple(dict.fromkeys(_addresses(message, RECIPIENT_HEADERS)))


def _addresses(message: Message, names: tuple[str, ...]) -> list[str]:
    values: list[str] = []
    for name in names:
        try:
            headers = message.get_all(name) or []
        except (ValueError, IndexError):
            continue
        for header in headers:
            addresses = getattr(header, "addresses", None)
            if addresses is not None:
                values.extend(a.addr_spec for a in addresses if isinstance(a, Address) and a.addr_spec)
            else:
                values.extend(addr for _, addr in getaddresses([str(header)]) if addr)
    return [v.strip().lower() for v in values if "@" in v]


# -- the body -------------------------------------------------------------------------------------------


def _body_text(message: EmailMessage) -> str:
    plain = message.get_body(preferencelist=("plain",))
    if plain is not None:
        return _normalize(_part_text(plain))
    html = message.get_body(preferencelist=("html",))
    if html is not None:
        return _normalize(html_to_text(_part_text(html)))
    return ""


def _part_text(part: Message) -> str:
    try:
        content = part.get_content()  # type: ignore[attr-defined]
    except (LookupError, UnicodeError):  # an unknown or lying charset: keep what can be read
        payload = part.get_payload(decode=True) or b""
        return payload.decode("utf-8", errors="replace") if isinstance(payload, bytes) else str(payload)
    return content if isinstance(content, str) else content.decode("utf-8", errors="replace")


def _normalize(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    return re.sub(r"\n{3,}", "\n\n", text).strip()


_BLOCK_TAGS = frozenset({"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "table", "ul", "ol"})
_SKIPPED_TAGS = frozenset({"script", "style", "head", "title", "blockquote"})
# Containers mail clients put quoted history in.
_QUOTE_CLASSES = ("gmail_quote", "yahoo_quoted", "moz-cite-prefix")
_QUOTE_IDS = ("appendonsend", "divrplyfwdmsg")


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip_depth = 0
        self._stack: list[bool] = []  # per open element: whether it started a skipped region

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        classes = (attributes.get("class") or "").split()
        skipped = (
            tag in _SKIPPED_TAGS
            or any(c in _QUOTE_CLASSES for c in classes)
            or (attributes.get("id") or "").lower() in _QUOTE_IDS
        )
        if tag in ("br", "img", "hr", "meta", "link", "input"):  # void elements never close
            if tag == "br" and not self._skip_depth:
                self.parts.append("\n")
            return
        self._stack.append(skipped)
        if skipped:
            self._skip_depth += 1
        elif tag in _BLOCK_TAGS and not self._skip_depth:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("br", "img", "hr", "meta", "link", "input") or not self._stack:
            return
        if self._stack.pop():
            self._skip_depth -= 1
        elif tag in _BLOCK_TAGS and not self._skip_depth:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skip_depth:
            self.parts.append(data)


def html_to_text(html: str) -> str:
    extractor = _TextExtractor()
    extractor.feed(html)
    extractor.close()
    text = unescape("".join(extractor.parts)).replace("\xa0", " ")
    lines = [" ".join(line.split()) for line in text.split("\n")]
    return "\n".join(lines)


# -- quoted history and signatures ----------------------------------------------------------------------

# Gmail's Hebrew reply header: "בתאריך יום א׳, 29 בנוב׳ 2026 ב-10:00 מאת Dana <dana@…>:" (with bidi marks),
# and Outlook's "מאת:" block; the library knows neither.
_HEBREW_HEADERS = re.compile(r"^[\u200e\u200f\u202a-\u202e\s]*(?:בתאריך .+|מאת:.*)$", re.MULTILINE)
_QUOTED_BLOCK = re.compile(r"^(?:>.*(?:\n|$))+", re.MULTILINE)


def strip_reply(text: str) -> str:
    """The newest part of a reply; the whole text when stripping would leave nothing."""
    if not text:
        return ""
    cut = text
    hebrew = _HEBREW_HEADERS.search(cut)
    if hebrew:
        cut = cut[: hebrew.start()]
    reply = EmailReplyParser(languages=REPLY_LANGUAGES).read(cut)
    newest = reply.replies[0].body if reply.replies else cut
    newest = _QUOTED_BLOCK.sub("", newest)
    newest = _normalize(newest)
    return newest or text
