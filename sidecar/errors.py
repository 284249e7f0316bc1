"""Errors the HTTP layer turns into ``{"error": ..., "detail": ...}`` responses."""

from __future__ import annotations


class ApiError(Exception):
    """A failure the caller can act on: a status code, a stable code word, and why."""

    def __init__(self, status: int, error: str, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.error = error
        self.detail = detail

    def to_json(self) -> dict[str, str]:
        return {"error": self.error, "detail": self.detail}
