"""ingestion.rules.csv_import.is_import_email: the import's email check, which remembers its verdict on each
domain, answers exactly what `is_email` answers for any address."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from leadcrm.ingestion.rules.csv_import import is_import_email
from leadcrm.ingestion.rules.meta import is_email

_LOCAL_CHARS = st.sampled_from(list("abcXYZ019._!#$%&'*+-/=?^`{|}~\"@ (),:;<>[\\]é\u00a0"))
_DOMAIN_CHARS = st.sampled_from(list("abcxnXN019.-_é\u3002\uff0e"))
_TLDS = st.sampled_from(["com", "co.uk", "test", "local", "localhost", "invalid", "onion", "arpa", "123", "x", ""])


@st.composite
def addresses(draw: st.DrawFn) -> str:
    local = draw(st.text(_LOCAL_CHARS, max_size=70))
    domain = draw(st.text(_DOMAIN_CHARS, max_size=70))
    tld = draw(_TLDS)
    return f"{local}@{domain}.{tld}" if tld else f"{local}@{domain}"


@settings(max_examples=400, deadline=None)
@given(addresses())
def test_an_import_email_is_valid_exactly_when_is_email_says_so(address: str) -> None:
    assert is_import_email(address) == is_email(address)


@settings(max_examples=200, deadline=None)
@given(st.emails() | st.text(max_size=80))
def test_any_generated_email_or_text_gets_the_same_verdict(address: str) -> None:
    assert is_import_email(address) == is_email(address)


def test_long_addresses_with_a_known_domain_are_checked_whole() -> None:
    assert is_import_email("a@example.com")
    assert not is_import_email(f"{'a' * 250}@example.com")
    assert not is_import_email("a..b@example.com")
    assert not is_import_email("a@mail.test")
