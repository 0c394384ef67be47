"""Errors a service raises on purpose; the API turns each into the one JSON error shape.

`{"error": {"code": "...", "message": "...", ...extra}}` with the HTTP status below.
"""

from __future__ import annotations

from typing import Any


class AppError(Exception):
    status: int = 400
    code: str = "BAD_REQUEST"

    def __init__(self, message: str, *, code: str | None = None, **extra: Any) -> None:
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        self.extra = extra

    def body(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, **self.extra}}


class BadRequest(AppError):
    status, code = 400, "BAD_REQUEST"


class Unauthenticated(AppError):
    status, code = 401, "UNAUTHENTICATED"


class Forbidden(AppError):
    status, code = 403, "FORBIDDEN"


class NotFound(AppError):
    status, code = 404, "NOT_FOUND"


class Conflict(AppError):
    status, code = 409, "CONFLICT"


class Unprocessable(AppError):
    status, code = 422, "UNPROCESSABLE"
