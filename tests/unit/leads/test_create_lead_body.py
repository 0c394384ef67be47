"""api.schemas.CreateLeadBody: camelCase JSON, unknown fields refused, someone to contact."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from api.schemas import CreateLeadBody, LeadSource


def test_is_test_is_read_from_its_camel_case_name():
    assert CreateLeadBody.model_validate({"name": "Ada", "isTest": True}).is_test is True


def test_the_snake_case_name_is_accepted_too():
    assert CreateLeadBody.model_validate({"name": "Ada", "is_test": True}).is_test is True


def test_an_unknown_field_is_rejected():
    with pytest.raises(ValidationError) as raised:
        CreateLeadBody.model_validate({"name": "Ada", "favouriteColour": "blue"})
    assert raised.value.errors()[0]["type"] == "extra_forbidden"


@pytest.mark.parametrize("contact", [{"name": "Ada"}, {"email": "ada@example.com"}, {"phone": "+44 20 7946 0958"}])
def test_any_one_of_name_email_or_phone_is_enough(contact):
    CreateLeadBody.model_validate(contact)


def test_a_body_without_name_email_or_phone_is_rejected():
    with pytest.raises(ValidationError):
        CreateLeadBody.model_validate({"note": "called about prices", "locale": "en"})


def test_a_name_of_only_spaces_does_not_count_as_someone_to_contact():
    with pytest.raises(ValidationError):
        CreateLeadBody.model_validate({"name": "   "})


def test_an_empty_body_is_rejected():
    with pytest.raises(ValidationError):
        CreateLeadBody.model_validate({})


@pytest.mark.parametrize("email", ["not-an-email", "ada@", "@example.com", "ada example@example.com"])
def test_a_malformed_email_is_rejected(email):
    with pytest.raises(ValidationError):
        CreateLeadBody.model_validate({"email": email})


@pytest.mark.parametrize("phone", ["+44 20 7946 0958", "(020) 7946-0958", "020.7946.0958", "07946095800"])
def test_phones_with_digits_plus_brackets_dashes_dots_and_spaces_are_accepted(phone):
    assert CreateLeadBody.model_validate({"phone": phone}).phone == phone


@pytest.mark.parametrize("phone", ["call me", "+44 20 7946 0958 ext", "12", "<script>", "1" * 33])
def test_a_phone_with_letters_or_the_wrong_length_is_rejected(phone):
    with pytest.raises(ValidationError):
        CreateLeadBody.model_validate({"phone": phone})


def test_the_source_defaults_to_manual():
    assert CreateLeadBody.model_validate({"name": "Ada"}).source is LeadSource.MANUAL


def test_an_unknown_source_is_rejected():
    with pytest.raises(ValidationError):
        CreateLeadBody.model_validate({"name": "Ada", "source": "carrier-pigeon"})


def test_an_empty_name_is_rejected():
    with pytest.raises(ValidationError):
        CreateLeadBody.model_validate({"name": "", "email": "ada@example.com"})
