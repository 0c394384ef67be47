"""ingestion.rules.csv_import: the CSV stream, the columns, the rows and who a row duplicates."""

from __future__ import annotations

import csv
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from leadcrm.ingestion.rules.csv_import import (
    Columns,
    ImportFileError,
    PeopleIndex,
    decoded_lines,
    parse_row,
    person_keys,
    resolve_columns,
)
from leadcrm.leads.rules.intake import same_phone


def _rows(*chunks: bytes) -> list[list[str]]:
    return list(csv.reader(decoded_lines(iter(chunks))))


# --- the stream ------------------------------------------------------------------------------------------


def test_lines_are_decoded_across_chunk_boundaries_even_inside_a_character():
    data = "name\nJosé\n".encode()
    split = data.index("é".encode()) + 1  # between the two bytes of é
    assert _rows(data[:split], data[split:]) == [["name"], ["José"]]


def test_the_byte_order_mark_excel_writes_is_dropped():
    assert _rows(b"\xef\xbb\xbfName\r\nAda\r\n") == [["Name"], ["Ada"]]


def test_a_quoted_field_may_span_lines_and_chunks():
    assert _rows(b'name,note\nAda,"line one\n', b'line two"\n') == [["name", "note"], ["Ada", "line one\nline two"]]


def test_a_last_line_without_a_newline_is_kept():
    assert _rows(b"name\nAda") == [["name"], ["Ada"]]


def test_lines_are_produced_as_chunks_arrive_not_after_the_whole_file():
    pulled = []

    def chunks():
        for i in range(100):
            pulled.append(i)
            yield f"row{i}\n".encode()

    lines = decoded_lines(chunks())
    assert next(lines) == "row0\n"
    assert len(pulled) == 1


def test_bytes_that_are_not_utf8_are_a_file_error():
    with pytest.raises(ImportFileError) as error:
        list(decoded_lines(iter([b"name\n\xe9\n"])))
    assert error.value.code == "INVALID_ENCODING"


# --- columns ---------------------------------------------------------------------------------------------


def test_a_mapping_names_headers_without_case_or_surrounding_blanks():
    columns = resolve_columns(["Vorname", " E-Mail "], {"first_name": "vorname", "email": "e-mail"})
    assert columns.indexes == {"first_name": 0, "email": 1}


def test_a_mapped_header_the_file_lacks_is_a_file_error():
    with pytest.raises(ImportFileError) as error:
        resolve_columns(["Name"], {"email": "Email"})
    assert error.value.code == "MAPPED_COLUMN_MISSING"


def test_without_a_mapping_common_headers_are_recognised():
    columns = resolve_columns(["Full Name", "E-mail Address", "Mobile", "Notes", "Other"], None)
    assert columns.indexes == {"name": 0, "email": 1, "phone": 2, "note": 3}


def test_without_a_mapping_a_file_with_no_contact_column_is_a_file_error():
    with pytest.raises(ImportFileError) as error:
        resolve_columns(["Notes", "Other"], None)
    assert error.value.code == "NO_CONTACT_COLUMNS"


# --- rows ------------------------------------------------------------------------------------------------

COLUMNS = Columns({"name": 0, "first_name": 1, "last_name": 2, "email": 3, "phone": 4, "note": 5, "locale": 6})


def _row(name="", first="", last="", email="", phone="", note="", locale=""):
    return parse_row(7, [name, first, last, email, phone, note, locale], COLUMNS)


def test_a_row_with_a_name_is_a_lead():
    row = _row(name=" Ada ", email="ada@example.com", note="hi", locale="en")
    assert (row.row_number, row.valid, row.name, row.email, row.note, row.locale) == (
        7,
        True,
        "Ada",
        "ada@example.com",
        "hi",
        "en",
    )


def test_first_and_last_name_make_the_name():
    assert _row(first="Ada", last="Lovelace").name == "Ada Lovelace"


def test_a_row_naming_nobody_is_invalid():
    assert _row(note="just a note").errors == [{"field": "row", "code": "missing_contact"}]


def test_every_bad_field_is_reported():
    assert _row(name="Ada", email="nope", phone="call me", locale="x").errors == [
        {"field": "email", "code": "invalid_email"},
        {"field": "phone", "code": "invalid_phone"},
        {"field": "locale", "code": "invalid_locale"},
    ]


def test_a_phone_needs_three_digits():
    assert not _row(phone="12").valid
    assert _row(phone="+972 (50) 123-4567").valid


def test_a_name_over_200_characters_is_invalid():
    assert _row(name="A" * 201).errors == [{"field": "name", "code": "too_long"}]


def test_a_row_with_a_nul_character_is_invalid():
    assert _row(name="A\x00da").errors == [{"field": "row", "code": "invalid_characters"}]


def test_a_short_row_reads_missing_cells_as_empty():
    assert parse_row(1, ["Ada"], COLUMNS).name == "Ada"


# --- who a row duplicates --------------------------------------------------------------------------------


def test_the_same_email_in_another_case_is_the_same_person():
    people, lead = PeopleIndex(None), uuid.uuid4()
    people.add(lead, person_keys("Ada@Example.com", None))
    assert people.match(person_keys("ada@example.COM", None)) == lead


def test_the_same_phone_however_typed_is_the_same_person():
    people, lead = PeopleIndex("IL"), uuid.uuid4()
    people.add(lead, person_keys(None, "+972 50-123-4567"))
    assert people.match(person_keys(None, "050 1234567")) == lead


def test_a_different_number_sharing_the_last_seven_digits_is_not():
    people = PeopleIndex("IL")
    people.add(uuid.uuid4(), person_keys(None, "+972 50-123-4567"))
    assert people.match(person_keys(None, "+972 52-123-4567")) is None


@given(phone=st.from_regex(r"\A[0-9+()\-\s.]{0,12}[0-9][0-9+()\-\s.]{0,12}\Z"))
@settings(max_examples=200, deadline=None)
def test_a_phone_typed_exactly_as_a_known_one_is_the_same_person_as_dedup_says(phone):
    people, lead = PeopleIndex("IL"), uuid.uuid4()
    people.add(lead, person_keys(None, phone))
    # The import's shortcut (the same text) agrees with dedup's rule for every text with a digit.
    assert (people.match(person_keys(None, phone)) == lead) == same_phone(phone, phone, "IL")


def test_the_first_person_added_wins():
    people, first = PeopleIndex(None), uuid.uuid4()
    people.add(first, person_keys("a@example.com", None))
    people.add(uuid.uuid4(), person_keys("a@example.com", None))
    assert people.match(person_keys("a@example.com", None)) == first
