"""The lead's model for members that have none (``--embedder lead``): ``POST /v1/embeddings``
on the crew address, in OpenAI's wire format so any such client can use it.

Each member (by its address: the crew token is shared, so it names no member) may have
one indexing batch and a few queries in flight; past that it gets ``429`` with
``Retry-After``, so one member catching up on a large tree cannot queue batches ahead of
the lead's own indexing and queries, or of the other members.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

from aiohttp import web

from sidecar.api.http import SERVICE
from sidecar.errors import ApiError
from sidecar.retrieval.embedders.base import MAX_INPUTS
from sidecar.retrieval.embeddings import MEMBER_BATCH
from sidecar.web import json_body

MAX_INPUT_CHARS = 8192  # a chunk with its headings is a few hundred; more is not a chunk
ENCODINGS = ("float", "base64")  # base64: each row's little-endian float32 bytes
MEMBER_BATCHES = 1  # indexing batches one member may have in flight
MEMBER_QUERIES = 4  # queries (a few texts) one member may have in flight
RETRY_AFTER_S = 1  # whole seconds, as the header wants; a batch takes about that
# The largest body a query (MEMBER_BATCH texts) can be: every character escaped, one
# outside the BMP as a surrogate pair (12 bytes), and room for the other fields. A longer
# body is a batch, refused before it is read when the member's batch slot is taken.
QUERY_BODY_BYTES = MEMBER_BATCH * MAX_INPUT_CHARS * 12 + 4096


class MemberLimits:
    """Requests in flight per member and kind (``query`` or ``batch``)."""

    def __init__(self) -> None:
        self.in_flight: Counter[tuple[str, str]] = Counter()

    @staticmethod
    def kind(texts: int) -> tuple[str, int]:
        return ("query", MEMBER_QUERIES) if texts <= MEMBER_BATCH else ("batch", MEMBER_BATCHES)

    def full(self, member: str, content_length: int | None) -> int | None:
        """Before the body is read: a text count standing for a kind this member has no
        slot left for, when the request cannot be anything else; else None."""
        batch_full = self.in_flight[(member, "batch")] >= MEMBER_BATCHES
        if content_length is not None and content_length > QUERY_BODY_BYTES:
            return MEMBER_BATCH + 1 if batch_full else None  # only a batch is this long
        query_full = self.in_flight[(member, "query")] >= MEMBER_QUERIES
        return 1 if batch_full and query_full else None

    @contextlib.contextmanager
    def admit(self, member: str, texts: int) -> Iterator[bool]:
        """Yields whether the request may go on (it holds its slot until the block ends)."""
        kind, bound = self.kind(texts)
        key = (member, kind)
        if self.in_flight[key] >= bound:
            yield False
            return
        self.in_flight[key] += 1
        try:
            yield True
        finally:
            self.in_flight[key] -= 1
            if not self.in_flight[key]:
                del self.in_flight[key]


def busy(texts: int) -> ApiError:
    """429, with ``Retry-After`` (the error middleware sets it from ``retry_after``)."""
    kind, bound = MemberLimits.kind(texts)
    return ApiError(429, "member_busy", f"this member already has {bound} {kind} request(s) "
                    f"in flight on the lead; retry after {RETRY_AFTER_S} s (its searches "
                    "stay sparse meanwhile)", {"retry_after": RETRY_AFTER_S})  # fmt: skip


LIMITS = web.AppKey("member_limits", MemberLimits)


def embed_inputs(body: dict[str, Any]) -> tuple[list[str], str]:
    """The texts of an OpenAI-style embeddings request and the encoding asked for; a 400
    naming what is wrong."""
    model, texts = body.get("model", ""), body.get("input")
    if not isinstance(model, str):
        raise ApiError(400, "invalid_model", "'model' must be a string (the lead embeds "
                       "with its own model whatever it names)")  # fmt: skip
    encoding = body.get("encoding_format")
    encoding = "float" if encoding is None else encoding  # absent or null; "" is no encoding
    if not isinstance(encoding, str) or encoding not in ENCODINGS:
        detail = "'encoding_format' must be 'float' (the default) or 'base64' (each vector's "
        raise ApiError(400, "invalid_encoding_format", detail + "little-endian float32 bytes)")
    texts = [texts] if isinstance(texts, str) else texts
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        raise ApiError(400, "invalid_input", "'input' must be a text or a non-empty list of texts")
    if len(texts) > MAX_INPUTS:
        raise ApiError(400, "too_many_inputs", f"'input' holds {len(texts)} texts; send at "
                       f"most {MAX_INPUTS} per request")  # fmt: skip
    longest = max(len(t) for t in texts)
    if longest > MAX_INPUT_CHARS:
        raise ApiError(400, "input_too_long", f"a text of {longest} characters; send at most "
                       f"{MAX_INPUT_CHARS} per text")  # fmt: skip
    return texts, encoding


async def embeddings(request: web.Request) -> web.Response:
    """``model`` in the answer is the lead's model id, which the member's vectors carry."""
    member, limits = request.remote or "", request.app[LIMITS]
    if (texts_of_kind := limits.full(member, request.content_length)) is not None:
        raise busy(texts_of_kind)  # the body (up to 4 MiB) is not even read
    texts, encoding = embed_inputs(await json_body(request))
    with limits.admit(member, len(texts)) as admitted:
        if not admitted:
            raise busy(len(texts))
        vectors, model = await request.app[SERVICE].embeddings.embed_for_members(texts)
    chars = sum(len(t) for t in texts)  # no tokenizer here: characters stand in for tokens
    # 256 rows of floats are about 100k numbers to write out: a thread's work, not the loop's
    text = await asyncio.to_thread(_answer, vectors, encoding, model, chars)
    return web.Response(text=text, content_type="application/json")


def _answer(vectors: Any, encoding: str, model: str, chars: int) -> str:
    if encoding == "base64":
        rows: list[Any] = [base64.b64encode(row.astype("<f4").tobytes()).decode("ascii")
                           for row in vectors]  # fmt: skip
    else:
        rows = vectors.tolist()
    data = [{"object": "embedding", "index": i, "embedding": row} for i, row in enumerate(rows)]
    body = {"object": "list", "data": data, "model": model,
            "usage": {"prompt_tokens": chars, "total_tokens": chars}}  # fmt: skip
    return json.dumps(body)
