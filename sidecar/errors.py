"""Errors the HTTP layer turns into ``{"error": ..., "detail": ...}`` responses."""

from __future__ import annotations

import unicodedata
from typing import Any

MAX_LABEL_CHARS = 128  # session_id, source, agent_id
# Controls, format characters (bidi overrides and isolates, zero-width marks), surrogates
# and line or paragraph separators: none has a place in a label.
_UNSEEN = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


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

    @classmethod
    def from_json(
        cls, status: int, body: dict[str, Any], code: str = "http_error", where: str = ""
    ) -> ApiError:
        """The error an HTTP answer's ``{"error", "detail", ...}`` body describes (the
        daemon's, to the stdio proxy; the lead's, to a member), ``where`` before its detail."""
        extra = {k: v for k, v in body.items() if k not in ("error", "detail")}
        detail = str(body.get("detail", f"HTTP {status}"))
        return cls(status, str(body.get("error", code)), f"{where}{detail}", extra)


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


def check_label(value: str | None, name: str, where: str = "") -> str | None:
    """``value`` if it is a fit label (a ``session_id`` or ``source``), else a 400 naming
    the field. Labels show in logs, prompts and files people read, and a bidi control in
    one makes it read as something it is not; one check for every way a label comes in."""
    if value is not None and (
        not 1 <= len(value) <= MAX_LABEL_CHARS
        # isprintable() is false for every category in _UNSEEN: most labels pass at C speed
        or (not value.isprintable() and any(unicodedata.category(c) in _UNSEEN for c in value))
    ):
        raise ApiError(
            400,
            f"bad_{name}",
            f"{where}'{name}' must be 1 to {MAX_LABEL_CHARS} printable characters, "
            "without control, bidi or other invisible characters",
        )
    return value
