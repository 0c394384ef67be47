"""leadcrm.platform.errors: each error class has its HTTP status and renders the one error shape."""

from __future__ import annotations

import pytest

from leadcrm.platform.errors import AppError, BadRequest, Conflict, Forbidden, NotFound, Unauthenticated, Unprocessable


@pytest.mark.parametrize(
    ("error_class", "status", "code"),
    [
        (AppError, 400, "BAD_REQUEST"),
        (BadRequest, 400, "BAD_REQUEST"),
        (Unauthenticated, 401, "UNAUTHENTICATED"),
        (Forbidden, 403, "FORBIDDEN"),
        (NotFound, 404, "NOT_FOUND"),
        (Conflict, 409, "CONFLICT"),
        (Unprocessable, 422, "UNPROCESSABLE"),
    ],
)
def test_each_error_class_has_its_status_and_default_code(error_class, status, code):
    error = error_class("Something.")
    assert error.status == status
    assert error.body() == {"error": {"code": code, "message": "Something."}}


def test_a_specific_code_replaces_the_default_one():
    assert NotFound("Lead not found.", code="LEAD_NOT_FOUND").body()["error"]["code"] == "LEAD_NOT_FOUND"


def test_a_specific_code_does_not_change_the_class_default():
    NotFound("Lead not found.", code="LEAD_NOT_FOUND")
    assert NotFound("Other.").code == "NOT_FOUND"


def test_extra_fields_sit_beside_code_and_message():
    body = Conflict("Already a lead.", code="LEAD_EXISTS", existingLeadId="abc").body()
    assert body == {"error": {"code": "LEAD_EXISTS", "message": "Already a lead.", "existingLeadId": "abc"}}


def test_the_message_is_also_the_exception_text():
    assert str(Forbidden("No.")) == "No."
