"""Errors the HTTP layer turns into ``{"error": ..., "detail": ...}`` responses."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """A failure the caller can act on: a status code, a stable code word, and why.

    ``extra`` carries further fields for the JSON body, such as the current entries
    of a file that is over its cap, so the model can consolidate them.
    """

    def __init__(
        self, status: int, error: str, detail: str, extra: dict[str, Any] | None = None
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.error = error
        self.detail = detail
        self.extra = extra or {}

    def to_json(self) -> dict[str, Any]:
        return {"error": self.error, "detail": self.detail, **self.extra}


def json_type(value: object) -> str:
    """How a model or client would name a JSON value's type in an error message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "a whole number"
    if isinstance(value, float):
        return f"a fraction ({value!r})" if not value.is_integer() else "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"
