"""Reading real clients' mail (tests/fixtures/email): charsets, transfer encodings, HTML-only bodies, quoted
history and signatures stripped, SES verdicts."""

from __future__ import annotations

from pathlib import Path

import pytest

from leadcrm.conversations.rules.inbound_email import html_to_text, parse_inbound, strip_reply

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "email"
ADDRESS = "contact+0190f0a811117222833394445555666a.abcdefghijklmnop@mail.leadcrm.local"


def _mail(name: str):
    return parse_inbound((FIXTURES / name).read_bytes().replace(b"{{REPLY_TO}}", ADDRESS.encode()))


def test_gmail_multipart_quoted_printable_keeps_only_the_new_text():
    mail = _mail("gmail_reply_multipart_qp.eml")
    assert mail.reply == "Hi Noa,\n\nThursday at 18:00 works for me — see you then!"
    assert "wrote:" not in mail.reply and "Dana Cohen" not in mail.reply
    assert mail.message_id == "<CAJx9pZk1V7u+gmail-reply-0001@mail.gmail.com>"
    assert mail.in_reply_to and mail.in_reply_to.endswith("amazonses.com>")


def test_outlook_base64_drops_the_from_sent_block_and_the_signature():
    mail = _mail("outlook_reply_base64.eml")
    assert mail.reply == (
        "Hello,\n\nCould we move the trial to next Monday? My daughter has a school event on Thursday."
    )


def test_apple_mail_drops_sent_from_my_iphone_and_the_quote():
    assert _mail("apple_mail_reply_plain.eml").reply == "Yes please, what should I bring?"


def test_windows_1255_hebrew_is_decoded_with_its_header_and_gmails_hebrew_quote_header_is_cut():
    mail = _mail("hebrew_windows_1255_qp.eml")
    assert mail.subject == "תגובה: שיעור ניסיון"
    assert mail.reply.startswith("שלום נועה,\nאשמח להגיע לשיעור ניסיון ביום חמישי.")
    assert "בתאריך" not in mail.reply and ">" not in mail.reply


def test_iso_8859_1_eight_bit_text_is_decoded():
    mail = _mail("latin1_8bit_multipart.eml")
    assert mail.reply.startswith("Olá! Não posso na quinta, mas sábado às 10h seria ótimo.")
    assert mail.subject == "Re: Aula experimental"
    assert mail.from_address == "jose.muller@example.pt"


def test_an_html_only_mail_becomes_text_without_its_quoted_history():
    mail = _mail("html_only.eml")
    assert mail.reply == "Hi! Is the Saturday class still available?\n\n— Avi"


def test_recipients_are_read_from_to_and_lowercased():
    assert _mail("gmail_reply_multipart_qp.eml").recipients == (ADDRESS,)


@pytest.mark.parametrize(("name", "reason"), [("spam_verdict_fail.eml", "spam"), ("virus_verdict_fail.eml", "virus")])
def test_ses_verdicts_mark_a_mail_to_drop(name, reason):
    assert _mail(name).dropped_reason == reason


def test_a_passing_verdict_is_not_dropped():
    assert _mail("gmail_reply_multipart_qp.eml").dropped_reason is None


def test_a_mail_that_is_all_quote_keeps_its_text_rather_than_nothing():
    assert strip_reply("> only a quote") == "> only a quote"


def test_an_unknown_charset_is_read_with_replacement_characters_not_dropped():
    raw = (
        b"From: a@example.com\r\nTo: " + ADDRESS.encode() + b"\r\nMessage-ID: <x@example.com>\r\n"
        b"Content-Type: text/plain; charset=x-unknown-charset\r\n\r\nHello th\xe9re\r\n"
    )
    assert parse_inbound(raw).reply.startswith("Hello th")


def test_script_and_style_never_reach_the_text():
    assert html_to_text("<style>p{}</style><script>alert(1)</script><p>Hi</p>").strip() == "Hi"
