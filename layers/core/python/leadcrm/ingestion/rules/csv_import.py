"""Rules of the CSV lead import, without I/O (spec "Not an entry point, on purpose").

- The file is read as a stream: `decoded_lines` turns byte chunks into lines for the csv reader, holding at
  most one chunk and one line at a time.
- Columns are found by the mapping the caller gave (lead field -> header), else by common header names.
- A row is valid when it names someone (a name, an email or a phone) and what it gives is well formed; an
  invalid row is reported with every reason, field by field, never with the values (they are PII).
- Duplicates (of a lead, or of an earlier row of the same file) are skipped and reported: an import is not
  a returning-lead entry point, so re-importing an old export never reopens a closed lead.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache

from leadcrm.ingestion.rules.meta import MAX_NAME_LENGTH, MAX_NOTE_LENGTH, is_email
from leadcrm.leads.rules.identity import last_seven_digits
from leadcrm.leads.rules.intake import normalized_email, phone_digits, same_phone

# The lead fields a column can map onto.
FIELDS = ("name", "first_name", "last_name", "email", "phone", "note", "locale")
# Header names recognised without a mapping (compared lower-cased, with spaces, dashes and underscores removed).
DEFAULT_HEADERS: dict[str, tuple[str, ...]] = {
    "name": ("name", "fullname", "contactname"),
    "first_name": ("firstname", "givenname"),
    "last_name": ("lastname", "surname", "familyname"),
    "email": ("email", "emailaddress", "mail"),
    "phone": ("phone", "phonenumber", "mobile", "mobilephone", "telephone", "tel", "cell"),
    "note": ("note", "notes", "message", "comment", "comments"),
    "locale": ("locale", "language"),
}
_PHONE = re.compile(r"^[0-9+()\-\s.]+$")
_NOT_A_DIGIT = re.compile(r"[^0-9]")
MIN_PHONE_DIGITS = 3
MAX_PHONE_LENGTH = 32
MAX_LOCALE_LENGTH = 16
IMPORT_COMPLETED = "lead_import.completed"  # the domain event of a finished job (counts, ids only)


class ImportFileError(Exception):
    """The file as a whole cannot be imported (no header, a mapped column missing, not UTF-8, not CSV)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def decoded_lines(chunks: Iterable[bytes]) -> Iterator[str]:
    """UTF-8 text lines (a BOM, as Excel writes one, is dropped), each with its line ending, for csv.reader.

    Split on '\\n' only: a quoted field may hold a bare '\\r' or other line separators, which the csv reader
    must see inside the field."""
    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    pending = ""
    try:
        for chunk in chunks:
            pending += decoder.decode(chunk)
            start = 0
            while (end := pending.find("\n", start)) != -1:
                yield pending[start : end + 1]
                start = end + 1
            pending = pending[start:]
        pending += decoder.decode(b"", final=True)
    except UnicodeDecodeError as error:
        raise ImportFileError("INVALID_ENCODING", "The file is not UTF-8 text.") from error
    if pending:
        yield pending


def _header_key(header: str) -> str:
    return re.sub(r"[\s_\-]", "", header.strip().lower())


@dataclass(frozen=True)
class Columns:
    """Which column (0-based) holds each lead field."""

    indexes: dict[str, int]

    def value(self, cells: list[str], name: str) -> str | None:
        index = self.indexes.get(name)
        if index is None or index >= len(cells):
            return None
        return cells[index].strip() or None


def resolve_columns(header: list[str], mapping: Mapping[str, str] | None) -> Columns:
    """The columns for the given mapping (field -> header, compared without case or surrounding blanks);
    without a mapping, the recognised header names. A mapped header the file does not have is an error."""
    by_key: dict[str, int] = {}
    for index, title in enumerate(header):
        by_key.setdefault(_header_key(title), index)
    if mapping:
        indexes = {}
        for name, title in mapping.items():
            found = by_key.get(_header_key(title))
            if found is None:
                raise ImportFileError("MAPPED_COLUMN_MISSING", f"The file has no column {title!r} (mapped to {name}).")
            indexes[name] = found
        return Columns(indexes)
    indexes = {}
    for name, aliases in DEFAULT_HEADERS.items():
        for alias in aliases:
            if alias in by_key:
                indexes[name] = by_key[alias]
                break
    if not ({"name", "first_name", "last_name", "email", "phone"} & indexes.keys()):
        raise ImportFileError(
            "NO_CONTACT_COLUMNS", "No column is recognised as a name, email or phone; send a column mapping."
        )
    return Columns(indexes)


@dataclass(frozen=True)
class ImportRow:
    """A data row: the lead it makes, or why it cannot make one. `cells` keep what the file said (the
    receipt of the lead it makes)."""

    row_number: int
    name: str | None = None
    email: str | None = None
    phone: str | None = None
    note: str | None = None
    locale: str | None = None
    errors: list[dict[str, str]] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return not self.errors


def parse_row(row_number: int, cells: list[str], columns: Columns) -> ImportRow:
    """One data row (row 1 is the first row after the header) as a lead, or its errors, field by field."""
    errors: list[dict[str, str]] = []
    if any("\x00" in cell for cell in cells):
        return ImportRow(row_number, errors=[{"field": "row", "code": "invalid_characters"}])
    name = columns.value(cells, "name")
    if name is None:
        parts = [columns.value(cells, "first_name"), columns.value(cells, "last_name")]
        name = " ".join(p for p in parts if p) or None
    email = columns.value(cells, "email")
    phone = columns.value(cells, "phone")
    note = columns.value(cells, "note")
    locale = columns.value(cells, "locale")
    if name is not None and len(name) > MAX_NAME_LENGTH:
        errors.append({"field": "name", "code": "too_long"})
    if email is not None and not is_import_email(email):
        errors.append({"field": "email", "code": "invalid_email"})
    if phone is not None and not _valid_phone(phone):
        errors.append({"field": "phone", "code": "invalid_phone"})
    if note is not None and len(note) > MAX_NOTE_LENGTH:
        errors.append({"field": "note", "code": "too_long"})
    if locale is not None and not (2 <= len(locale) <= MAX_LOCALE_LENGTH):
        errors.append({"field": "locale", "code": "invalid_locale"})
    if name is None and email is None and phone is None:
        errors.append({"field": "row", "code": "missing_contact"})
    if errors:
        return ImportRow(row_number, errors=errors)
    return ImportRow(row_number, name=name, email=email, phone=phone, note=note, locale=locale)


# email_validator's plain ASCII forms (RFC 5322 dot-atom before the @, an RFC 952 hostname after it), and its
# limit on a whole address in bytes.
_ATEXT = r"a-zA-Z0-9_!#$%&'*+\-/=?^`{|}~"
_PLAIN_LOCAL = re.compile(f"[{_ATEXT}]+(?:\\.[{_ATEXT}]+)*\\Z")
_HOSTNAME_LABEL = r"(?:(?:[a-zA-Z0-9][a-zA-Z0-9\-]*)?[a-zA-Z0-9])"
_PLAIN_DOMAIN = re.compile(_HOSTNAME_LABEL + r"(?:\." + _HOSTNAME_LABEL + r")*\Z")
MAX_EMAIL_LENGTH = 254
_KNOWN_DOMAINS = 4096


def is_import_email(value: str) -> bool:
    """`is_email`, with its verdict on the part after the @ remembered per domain: an import's addresses
    share a few domains, and the domain is most of email_validator's work (~0.2 ms an address). Only a plain
    ASCII address takes the shortcut: its domain is judged alone the same way, as it normalizes to itself
    (lower case) and nothing of the local part bears on it but the length, checked here."""
    local, at, domain = value.rpartition("@")
    if at and len(value) <= MAX_EMAIL_LENGTH and _PLAIN_LOCAL.match(local) and _PLAIN_DOMAIN.match(domain):
        return _valid_email_domain(domain)
    return is_email(value)


@lru_cache(maxsize=_KNOWN_DOMAINS)
def _valid_email_domain(domain: str) -> bool:
    return is_email(f"x@{domain}")


def _valid_phone(phone: str) -> bool:
    digits = _NOT_A_DIGIT.sub("", phone)
    return len(phone) <= MAX_PHONE_LENGTH and bool(_PHONE.match(phone)) and len(digits) >= MIN_PHONE_DIGITS


@dataclass(frozen=True)
class PersonKeys:
    """What dedup compares of a person, worked out once: the normalized email, the phone as typed and its
    lookup key (made in the import's read-ahead thread, off the chunk's transaction)."""

    email_key: str | None
    phone: str | None
    phone_key: str | None


def person_keys(email: str | None, phone: str | None) -> PersonKeys:
    return PersonKeys(normalized_email(email), phone, phone_lookup_key(phone) if phone is not None else None)


class PeopleIndex:
    """Who a chunk's rows may duplicate: the organization's matching leads (oldest first), then the rows of
    the file already accepted. Matching is dedup's: the same email (case-insensitive), or the same phone
    however it was typed (E.164 in the organization's region)."""

    def __init__(self, region: str | None) -> None:
        self._region = region
        self._by_email: dict[str, object] = {}
        self._by_phone: dict[str, list[tuple[str, object]]] = {}

    def add(self, lead_id: object, person: PersonKeys) -> None:
        if person.email_key is not None:
            self._by_email.setdefault(person.email_key, lead_id)
        if person.phone is not None and person.phone_key is not None:
            self._by_phone.setdefault(person.phone_key, []).append((person.phone, lead_id))

    def match(self, person: PersonKeys) -> object | None:
        if person.email_key is not None and person.email_key in self._by_email:
            return self._by_email[person.email_key]
        phone = person.phone
        if phone is not None and person.phone_key is not None:
            for known, lead_id in self._by_phone.get(person.phone_key, ()):
                # The same text is the same number (it has digits: it has a lookup key), without phonenumbers'
                # parse of both (~0.1 ms): a re-imported file's phones are mostly the leads' own text.
                if phone == known or same_phone(phone, known, self._region):
                    return lead_id
        return None


def phone_lookup_key(phone: str | None) -> str | None:
    """The prefilter dedup uses: the last seven digits, or all of them for a shorter number."""
    return last_seven_digits(phone) or phone_digits(phone)
