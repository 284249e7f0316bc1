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
