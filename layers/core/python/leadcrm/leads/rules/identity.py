"""Who a person is, for writes nobody confirms (spec "Automated writes match on a person, not a field").

Self-signup, a released join and a course purchase each write to "the buyer's / the member's lead" without a
person looking at it, so they must not match on a bare email OR phone: a family shares one number, a parent
signs a child up with their own email. The rules here, all pure:

- `canonical_email`: trimmed, lower case. Deliberately conservative: dots and `+tags` are kept, because
  whether `dana.cohen@x` and `danacohen@x` reach the same inbox is the mail provider's business, and a false
  "same person" writes to a stranger's lead.
- `normalize_phone`: E.164 via `phonenumbers`, read in the organization's region when it has no `+` (its
  country, else its timezone's: `directory.rules.phone_region`); `national_significant_number` and
  `national_part_of_international` are the digits every spelling of a number shares (lead search).
- `last_seven_digits`: the SQL prefilter key, so rows typed by hand ("050-1234567") or imported without a
  country code are still candidates; the exact comparison happens here, on E.164.
- `names_agree`: every word of the shorter name is in the longer one; across Hebrew and Latin scripts the
  first names agree when they start with a matching letter (`HEBREW_TO_LATIN_INITIALS`). A nickname does not.
- `is_same_lead_person`: equal email is conclusive; equal phone counts only when the names agree (or the lead
  has no name) and nobody else in the organization with a different name answers to that number.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import phonenumbers

# `phonenumbers` (~15 ms and a few MB of metadata) is imported by the functions that read a number, not
# with this module: most requests that import the leads rules never parse a phone.

_NOT_A_DIGIT = re.compile(r"[^0-9]")
# Marks that sit inside one written word and must not split it: apostrophes (O'Brien), the Hebrew geresh and
# gershayim (ג׳ורג׳, which is how "George" is spelled), and typographic quotes used in their place.
_IN_WORD_MARKS = re.compile("['\u2019\u02bc\u05f3\u05f4\"]")
# A word is a run of letters; digits, hyphens and punctuation separate words ("Dana-Cohen" = "Dana Cohen").
_WORD = re.compile(r"[^\W\d_]+")

# The Latin letters a name written in Hebrew can start with when the same person writes it in Latin letters.
# Transliteration is not one-to-one, so each Hebrew letter lists every initial in common use for Israeli
# names; the rule only compares first letters, so a generous row costs little and a missing one loses a
# real match. The silent letters alef and ayin open vowel-initial names.
HEBREW_TO_LATIN_INITIALS: dict[str, frozenset[str]] = {
    "א": frozenset("aeiou"),  # Avi, Eli, Itay, Omer, Uri
    "ב": frozenset("bv"),  # Benny, Vered (bet without dagesh is V)
    "ג": frozenset("gj"),  # Gal, Jacky (ג׳)
    "ד": frozenset("d"),  # Dor, Dana
    "ה": frozenset("h"),  # Hila, Hadas
    "ו": frozenset("vw"),  # Vika, Wolf
    "ז": frozenset("zj"),  # Ziv, Jeannette (ז׳)
    "ח": frozenset("hck"),  # Haim, Chaim, Khen
    "ט": frozenset("t"),  # Tal
    "י": frozenset("yji"),  # Yoni, Jonathan, Itzik
    "כ": frozenset("kc"),  # Kobi, Carmel
    "ך": frozenset("kc"),
    "ל": frozenset("l"),  # Lior
    "מ": frozenset("m"),  # Moran
    "ם": frozenset("m"),
    "נ": frozenset("n"),  # Noa
    "ן": frozenset("n"),
    "ס": frozenset("sc"),  # Sivan, Celine
    "ע": frozenset("aeiou"),  # Amit, Eran, Idan, Omri, Uzi
    "פ": frozenset("pf"),  # Peleg, Fanny
    "ף": frozenset("pf"),
    "צ": frozenset("tzsc"),  # Tzvi, Zvi, Tsahi, Ciporah; צ׳ is Ch (Charlie)
    "ץ": frozenset("tzsc"),
    "ק": frozenset("kcq"),  # Keren, Carmit, Qassem
    "ר": frozenset("r"),  # Roni
    "ש": frozenset("s"),  # Shira, Sarah
    "ת": frozenset("t"),  # Tamar
}


@dataclass(frozen=True, slots=True)
class PersonKey:
    """What identifies a person for matching: canonical email, E.164 phone, display name (any may be None).

    Build it with `person_key(...)` so the email and phone are already canonical."""

    email: str | None
    phone_e164: str | None
    name: str | None


def person_key(email: str | None, phone: str | None, name: str | None, *, default_region: str | None) -> PersonKey:
    """A `PersonKey` from raw values as stored (any formatting), normalized the way the rules compare them."""
    cleaned_name = (name or "").strip() or None
    return PersonKey(canonical_email(email), normalize_phone(phone, default_region), cleaned_name)


def canonical_email(email: str | None) -> str | None:
    """The email as identity compares it: trimmed and lower-cased; None for a missing or blank one."""
    if email is None:
        return None
    cleaned = email.strip().lower()
    return cleaned or None


def normalize_phone(phone: str | None, default_region: str | None) -> str | None:
    """The phone in E.164 ("+972501234567"), or None when it is missing, unparseable or not a number.

    A number without "+" is read in `default_region` (the organization's ISO country, e.g. "IL"). Rows imported
    with the country code but without the "+" ("972501234567"), or with the "00" international prefix
    ("00972501234567", dialled from most countries), are tried once more as international.
    """
    import phonenumbers

    parsed = parse_phone(phone, default_region)
    if parsed is None:
        return None
    return phonenumbers.format_number(parsed, phonenumbers.PhoneNumberFormat.E164)


def national_significant_number(phone: str | None, default_region: str | None) -> str | None:
    """The digits of the number without country code or trunk prefix ("+972 50-123-4567", "050-1234567" in
    IL and "00972501234567" are all "501234567"): what every spelling of it has in its digits."""
    import phonenumbers

    parsed = parse_phone(phone, default_region)
    return phonenumbers.national_significant_number(parsed) if parsed is not None else None


def national_part_of_international(phone: str) -> str | None:
    """The digits after the country code of a number written internationally ("+972 50-12" -> "5012",
    "0044 20…" -> "20…"), even an incomplete one; None when it is not written with "+" or "00", or starts
    with no country code. Country codes are prefix-free, so at most one of 1 to 3 leading digits is one."""
    import phonenumbers

    text = phone.strip()
    digits = _NOT_A_DIGIT.sub("", text)
    if not text.startswith("+"):
        if not digits.startswith("00"):
            return None
        digits = digits[2:]
    for length in (1, 2, 3):
        if int(digits[:length] or 0) in phonenumbers.COUNTRY_CODE_TO_REGION_CODE:
            return digits[length:].lstrip("0") or None
    return None


def parse_phone(phone: str | None, default_region: str | None) -> phonenumbers.PhoneNumber | None:
    """The number `phone` is (see `normalize_phone`), or None."""
    import phonenumbers

    if phone is None or not phone.strip():
        return None
    region = default_region.upper() if default_region else None
    parsed = _valid_number(phone, region)
    if phone.strip().startswith("+"):
        return parsed
    digits = _NOT_A_DIGIT.sub("", phone)
    if parsed is None and digits:
        parsed = _valid_number("+" + digits, None)
    if digits.startswith("00") and (parsed is None or not phonenumbers.is_valid_number(parsed)):
        # "00" is the international prefix of most of the world, but not of every region (Japan dials 010):
        # a number written from elsewhere is still that number, unless the region reads it as a real one.
        parsed = _valid_number("+" + digits[2:], None) or parsed
    return parsed


def _valid_number(text: str, region: str | None) -> phonenumbers.PhoneNumber | None:
    import phonenumbers

    try:
        parsed = phonenumbers.parse(text, region)
    except phonenumbers.NumberParseException:
        return None
    return parsed if phonenumbers.is_valid_number(parsed) or _shaped_like_a_number_of(parsed) else None


def _shaped_like_a_number_of(parsed: phonenumbers.PhoneNumber) -> bool:
    """A possible length and the country's general number shape, in a range the metadata may not list.

    `is_valid_number` also checks that the range is allocated, and the library's metadata trails the
    carriers: "050-1234567", the spec's own example, is refused by it. Rejecting a real member's number costs
    a missed match; the general shape still refuses garbage ("0501234567" read as a US number, 12-digit runs).
    """
    import phonenumbers

    if phonenumbers.is_possible_number_with_reason(parsed) != phonenumbers.ValidationResult.IS_POSSIBLE:
        return False
    region = phonenumbers.region_code_for_country_code(parsed.country_code)
    metadata = phonenumbers.PhoneMetadata.metadata_for_region_or_calling_code(parsed.country_code, region)
    if metadata is None or metadata.general_desc is None or metadata.general_desc.national_number_pattern is None:
        return False
    national = phonenumbers.national_significant_number(parsed)
    return re.fullmatch(metadata.general_desc.national_number_pattern, national) is not None


def last_seven_digits(phone: str | None) -> str | None:
    """The last seven digits of a phone however it was typed: the key `leads.phone_last7` is indexed on.

    Seven digits survive every way a number is written (with or without the trunk zero or country code).
    None when the phone has fewer than seven digits: such a key would prefilter on almost nothing.
    """
    if phone is None:
        return None
    digits = _NOT_A_DIGIT.sub("", phone)
    return digits[-7:] if len(digits) >= 7 else None


def name_words(name: str | None) -> list[str]:
    """The words of a name as compared: case-folded, accents and Hebrew vowel points dropped."""
    if not name:
        return []
    decomposed = unicodedata.normalize("NFKD", _IN_WORD_MARKS.sub("", name))
    without_marks = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return [word.casefold() for word in _WORD.findall(without_marks)]


def names_agree(a: str | None, b: str | None) -> bool:
    """Whether two names can be the same person's (spec "namesAgree").

    - Every word of the shorter name is in the longer one ("Dana" / "Dana Cohen"; order and case ignored).
    - Across scripts (one first name in Hebrew, the other in Latin letters), the first names agree when they
      start with a matching letter ("דור וידר" / "Dor Vider"): see `HEBREW_TO_LATIN_INITIALS`.
    - A nickname in the same script does not agree ("יוני" / "יהונתן", "Dima" / "Dmitry").
    - A missing or empty name agrees with nothing: what an absent name means is the caller's decision.
    """
    words_a, words_b = name_words(a), name_words(b)
    if not words_a or not words_b:
        return False
    shorter, longer = sorted((words_a, words_b), key=len)
    if set(shorter) <= set(longer):
        return True
    return _initials_match_across_scripts(words_a[0], words_b[0])


def _initials_match_across_scripts(first_a: str, first_b: str) -> bool:
    hebrew, latin = (first_a, first_b) if _is_hebrew(first_a[0]) else (first_b, first_a)
    if not _is_hebrew(hebrew[0]) or not _is_latin(latin[0]):
        return False
    return latin[0] in HEBREW_TO_LATIN_INITIALS.get(hebrew[0], frozenset())


def _is_hebrew(letter: str) -> bool:
    return "\u05d0" <= letter <= "\u05ea"


def _is_latin(letter: str) -> bool:
    return "a" <= letter <= "z"


def is_same_lead_person(person: PersonKey, lead: PersonKey, others_on_phone: Sequence[PersonKey]) -> bool:
    """Whether an automated write about `person` may land on `lead` (spec "isSameLeadPerson").

    `others_on_phone` are the other people of the organization (other leads and account users, neither this
    person nor this lead) who answer to the same phone; only their names matter.

    - Equal canonical email is conclusive.
    - Equal phone counts only when the names agree, or the lead has no name; and even then not when someone
      else in the organization, named differently from the person, answers to that number: the number is
      shared (a family phone), so the phone says nothing about who this is.
    """
    if person.email is not None and person.email == lead.email:
        return True
    if person.phone_e164 is None or person.phone_e164 != lead.phone_e164:
        return False
    lead_unnamed = not name_words(lead.name)
    if not lead_unnamed and not names_agree(person.name, lead.name):
        return False
    return not any(_is_someone_else(person, other) for other in others_on_phone)


def _is_someone_else(person: PersonKey, other: PersonKey) -> bool:
    # An unnamed row proves nothing about a second person; a named one whose name disagrees does.
    if other.phone_e164 != person.phone_e164 or not name_words(other.name):
        return False
    return not names_agree(person.name, other.name)
