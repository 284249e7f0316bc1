"""The operator models' operations, declared once: the lead's HTTP routes check
requests with them."""

from __future__ import annotations

from sidecar import ops
from sidecar.errors import ApiError
from sidecar.operators import identity, model


def _id(value: object, name: str) -> str:
    text = ops.string_value(value, name)
    if not text or len(text) > 256:
        raise ApiError(400, f"bad_{name}", f"'{name}' is required: 1 to 256 characters")
    identity.check_id(name, text)
    return text


def _fields(raw: object, name: str) -> dict[str, str]:
    if not isinstance(raw, dict) or len(raw) > model.MAX_FIELDS:
        raise ApiError(
            400,
            "bad_fields",
            f"'fields' must be an object of at most "
            f'{model.MAX_FIELDS} fields, e.g. {{"timezone": "Europe/Lisbon"}}',
        )
    out = {}
    for field, value in raw.items():
        if not model.FIELD_NAME.fullmatch(field):
            raise ApiError(
                400,
                "bad_fields",
                f"field name {field[:50]!r} must be lowercase "
                "letters, digits and '_', starting with a letter",
            )
        if (
            not isinstance(value, str)
            or not value.strip()
            or "\n" in value
            or (len(value) > model.MAX_VALUE_CHARS)
        ):
            raise ApiError(
                400,
                "bad_fields",
                f"'{field}' must be one line of text, 1 to {model.MAX_VALUE_CHARS} characters",
            )
        out[field] = " ".join(value.split())
    return out


def _seconds(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ApiError(400, "bad_session_seconds", "'session_seconds' must be a number >= 0")
    return float(value)


def _who() -> dict[str, ops.Field]:
    return {name: ops.Field({"type": "string"}, _id, required=True)
            for name in ("user_id", "workspace_id")}  # fmt: skip


UPDATE = ops.Op.of(
    "POST /memory/operator",
    **_who(),
    fields=ops.Field({"type": "object"}, _fields, {}),
    messages=ops.whole(0, 10**9, 0),
    session_seconds=ops.Field({"type": "number", "minimum": 0}, _seconds, 0),
    distill=ops.flag(False),
)
OPT_OUT = ops.Op.of("POST /memory/operator/opt-out", **_who())
