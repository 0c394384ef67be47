"""Identity rules (spec "Automated writes match on a person, not a field", "Managed members"): canonical
email, E.164 phones in the organization's region, the last-seven-digits prefilter, namesAgree and
isSameLeadPerson. Table-driven: the spec's own examples first, then our own."""

from __future__ import annotations

import pytest

from leadcrm.leads.rules.identity import (
    HEBREW_TO_LATIN_INITIALS,
    PersonKey,
    canonical_email,
    is_same_lead_person,
    last_seven_digits,
    name_words,
    names_agree,
    normalize_phone,
    person_key,
)

# -- canonical email ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Dana@Example.com", "dana@example.com"),
        ("  dana@example.com\t", "dana@example.com"),
        ("DANA.COHEN@GMAIL.COM", "dana.cohen@gmail.com"),  # dots kept: conservative
        ("dana+studio@gmail.com", "dana+studio@gmail.com"),  # plus tags kept: conservative
        ("", None),
        ("   ", None),
        (None, None),
    ],
)
def test_canonical_email(raw, expected):
    assert canonical_email(raw) == expected


# -- phones ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "region", "expected"),
    [
        # Israel: hand-typed national forms, with and without the trunk zero, and international forms.
        ("050-1234567", "IL", "+972501234567"),  # the spec's hand-typed example
        ("0501234567", "IL", "+972501234567"),
        ("050 123 4567", "IL", "+972501234567"),
        ("(050) 123-4567", "IL", "+972501234567"),
        ("+972501234567", "IL", "+972501234567"),
        ("+972-50-123-4567", "IL", "+972501234567"),
        ("+972 (0)50 123 4567", "IL", "+972501234567"),
        ("00972501234567", "IL", "+972501234567"),  # the international prefix dialled from Israel
        ("972501234567", "IL", "+972501234567"),  # imported with the country code but no "+"
        ("050-111-2233", "IL", "+972501112233"),
        ("03-1234567", "IL", "+97231234567"),  # a Tel Aviv landline
        ("il", "IL", None),
        # A "+" number is read as written, whatever the organization's region.
        ("+972501234567", "US", "+972501234567"),
        ("+972501234567", "GB", "+972501234567"),
        ("+972501234567", None, "+972501234567"),
        ("+1 202 555 0123", "IL", "+12025550123"),
        # United States.
        ("(202) 555-0123", "US", "+12025550123"),
        ("202-555-0123", "US", "+12025550123"),
        ("1 202 555 0123", "US", "+12025550123"),
        ("0501234567", "US", None),  # not a US number
        # United Kingdom.
        ("020 7946 0958", "GB", "+442079460958"),
        ("07700 900123", "GB", "+447700900123"),
        ("+44 7700 900123", "IL", "+447700900123"),
        ("us", "us", None),
        # The region is case-insensitive.
        ("0501234567", "il", "+972501234567"),
        # Garbage and missing numbers.
        ("050-1234567", None, None),  # no "+" and no region: whose number is it?
        ("12345", "IL", None),  # too short
        ("050123456789012", "IL", None),  # too long
        ("call me maybe", "IL", None),
        ("+", "IL", None),
        ("", "IL", None),
        ("   ", "IL", None),
        (None, "IL", None),
        ("0501234567", "XX", None),  # an unknown region
    ],
)
def test_normalize_phone(raw, region, expected):
    assert normalize_phone(raw, region) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("050-1234567", "1234567"),
        ("+972501234567", "1234567"),
        ("+972 (0)50 123 4567", "1234567"),
        ("1234567", "1234567"),
        ("123456", None),  # fewer than seven digits prefilter on nothing useful
        ("no digits", None),
        (None, None),
    ],
)
def test_last_seven_digits(raw, expected):
    assert last_seven_digits(raw) == expected


def test_every_way_of_typing_a_number_keeps_the_same_last_seven_digits():
    typed = ["050-1234567", "0501234567", "+972501234567", "972-50-1234567", "00972 50 123 4567"]
    assert {last_seven_digits(t) for t in typed} == {"1234567"}


# -- names agree -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "agree"),
    [
        # The spec's examples.
        ("Dana", "Dana Cohen", True),
        ("דור וידר", "Dor Vider", True),
        ("יוני", "יהונתן", False),
        # Word containment: order, case, spacing, punctuation and accents do not matter.
        ("Dana Cohen", "Dana", True),
        ("cohen dana", "Dana Cohen", True),
        ("DANA  COHEN", "dana cohen", True),
        ("Dana-Cohen", "Dana Cohen", True),
        ("José", "Jose Garcia", True),
        ("O'Brien", "Sean OBrien", True),
        ("Dana Cohen Levi", "Dana Levi", True),
        ("Dana Cohen", "Dana Levi", False),  # each has a word the other lacks
        ("Dan", "Dana", False),  # a word is a whole word, not a prefix
        ("Dima", "Dmitry", False),  # a nickname in one script does not agree
        ("דנה כהן", "דנה", True),
        ("דָּנָה", "דנה", True),  # vowel points ignored
        # Across Hebrew and Latin: the first names' first letters (HEBREW_TO_LATIN_INITIALS).
        ("דנה", "Dana", True),
        ("Dana Cohen", "דנה כהן", True),
        ("ויקה", "Vika", True),
        ("בני", "Benny", True),
        ("בני", "Vered", True),  # bet is B or V: the table is generous by design
        ("חיים", "Chaim", True),
        ("חיים", "Haim", True),
        ("אבי", "Avi", True),
        ("עומר", "Omer", True),
        ("יונתן", "Jonathan", True),
        ("יוני", "Yoni", True),
        ("צבי", "Tzvi", True),
        ("צבי", "Zvi", True),
        ("ג׳ורג׳", "George", True),  # geresh does not split the word
        ("שירה", "Shira", True),
        ("פבל", "Fabel", True),
        ("קרן", "Keren", True),
        ("דור", "Tor", False),
        ("דור וידר", "Vider Dor", False),  # only FIRST names are compared across scripts
        ("Dana", "רונית", False),
        # Missing names agree with nothing: the caller decides what an absent name means.
        (None, "Dana", False),
        ("Dana", None, False),
        ("", "", False),
        ("  ", "Dana", False),
        ("123", "Dana", False),
    ],
)
def test_names_agree(a, b, agree):
    assert names_agree(a, b) is agree
    assert names_agree(b, a) is agree  # symmetric


def test_name_words_drops_digits_punctuation_and_case():
    assert name_words("  Dana-Cohen 2nd ") == ["dana", "cohen", "nd"]


def test_every_hebrew_letter_has_latin_initials():
    letters = [chr(c) for c in range(ord("א"), ord("ת") + 1)]
    assert set(letters) <= set(HEBREW_TO_LATIN_INITIALS)
    assert all(
        initials and initials <= set("abcdefghijklmnopqrstuvwxyz") for initials in HEBREW_TO_LATIN_INITIALS.values()
    )


# -- is the same lead person -------------------------------------------------------------------------------

PHONE = "+972501234567"


def person(email=None, phone=None, name=None) -> PersonKey:
    return PersonKey(email=email, phone_e164=phone, name=name)


@pytest.mark.parametrize(
    ("who", "lead", "others", "same"),
    [
        # Equal canonical email is conclusive, whatever the names and phones say.
        (person("dana@example.com", None, "Dana"), person("dana@example.com", None, "Yossi"), [], True),
        (
            person("dana@example.com", PHONE, "Dana"),
            person("dana@example.com", "+972529999999", "Someone"),
            [person(None, PHONE, "Yossi")],
            True,
        ),
        # Different emails and no shared phone: not the same person.
        (person("dana@example.com", PHONE, "Dana"), person("other@example.com", None, "Dana"), [], False),
        # A shared phone with agreeing names ("Dana" / "Dana Cohen").
        (person(None, PHONE, "Dana Cohen"), person(None, PHONE, "Dana"), [], True),
        (person("dana@example.com", PHONE, "Dana"), person("old@example.com", PHONE, "Dana Cohen"), [], True),
        # Across scripts: "Dor Vider" signs up, the lead was typed in Hebrew.
        (person(None, PHONE, "Dor Vider"), person(None, PHONE, "דור וידר"), [], True),
        # A nickname does not agree: the phone alone proves nothing.
        (person(None, PHONE, "יהונתן"), person(None, PHONE, "יוני"), [], False),
        # Names that disagree on a shared phone: another person (a parent, a spouse).
        (person(None, PHONE, "Yossi Cohen"), person(None, PHONE, "Dana Cohen"), [], False),
        # The lead has no name: the phone counts...
        (person(None, PHONE, "Dana"), person(None, PHONE, None), [], True),
        (person(None, PHONE, "Dana"), person(None, PHONE, "  "), [], True),
        # ...unless a second, differently-named person in the organization answers to the number.
        (person(None, PHONE, "Dana"), person(None, PHONE, None), [person(None, PHONE, "Yossi")], False),
        # Family phone: Dana's lead, Dana signs up, but Yossi also answers to the number.
        (person(None, PHONE, "Dana"), person(None, PHONE, "Dana"), [person(None, PHONE, "Yossi")], False),
        # Someone else on the number who agrees with the person's name is no second person.
        (person(None, PHONE, "Dana Cohen"), person(None, PHONE, None), [person(None, PHONE, "Dana")], True),
        # An unnamed other row proves nothing about a second person.
        (person(None, PHONE, "Dana"), person(None, PHONE, "Dana"), [person(None, PHONE, None)], True),
        # Others on another number do not matter.
        (person(None, PHONE, "Dana"), person(None, PHONE, "Dana"), [person(None, "+972529999999", "Yossi")], True),
        # The person has no name: a named lead cannot agree, an unnamed one can.
        (person(None, PHONE, None), person(None, PHONE, "Dana"), [], False),
        (person(None, PHONE, None), person(None, PHONE, None), [], True),
        (person(None, PHONE, None), person(None, PHONE, None), [person(None, PHONE, "Yossi")], False),
        # No phone, no email: nothing to match on.
        (person(None, None, "Dana"), person(None, None, "Dana"), [], False),
        (person(None, None, None), person(None, None, None), [], False),
        # Missing emails are never "equal".
        (person(None, PHONE, "Dana"), person(None, "+972529999999", "Dana"), [], False),
    ],
)
def test_is_same_lead_person(who, lead, others, same):
    assert is_same_lead_person(who, lead, others) is same


def test_person_key_normalizes_what_it_is_given():
    key = person_key(" Dana@Example.com ", "050-1234567", "  Dana Cohen ", default_region="IL")
    assert key == PersonKey(email="dana@example.com", phone_e164="+972501234567", name="Dana Cohen")


def test_hand_typed_rows_match_through_person_key():
    signup = person_key(None, "+972501234567", "Dana Cohen", default_region="IL")
    imported = person_key(None, "050-1234567", "Dana", default_region="IL")
    assert is_same_lead_person(signup, imported, [])


def test_a_phone_unparseable_for_the_region_never_matches():
    signup = person_key(None, "+972501234567", "Dana", default_region=None)
    lead = person_key(None, "050-1234567", "Dana", default_region=None)  # no region: no E.164
    assert lead.phone_e164 is None
    assert not is_same_lead_person(signup, lead, [])
