"""The lead's ``/v1/embeddings`` on the OpenAI wire: ``encoding_format`` (base64 rows of
little-endian float32, floats by default), and each member's bound on requests in flight
(429 with Retry-After past it), read by the member's own client."""

from __future__ import annotations

import asyncio
import base64
import struct
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestClient

from sidecar.api.crew_embeddings import LIMITS, MemberLimits
from sidecar.retrieval.embedders.base import EmbedderBusy
from sidecar.retrieval.embedders.openai import OpenAIEmbedder
from tests.conftest import eventually
from tests.ollama_stub import OllamaStub
from tests.test_embed_lead import AUTH, LEAD_MODEL, TOKEN, crew_port  # noqa: F401 - fixture

TEXTS = ["the crane is blue", "the dock is wet", "a gull on the crane"]
BATCH = [f"note {i} about the harbour" for i in range(8)]  # more than a query's few texts


async def _admitted(limits: MemberLimits, member: str) -> bool:
    return limits.in_flight[(member, "batch")] == 1


async def _embed(client: TestClient, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    resp = await client.post("/v1/embeddings", json=body, headers=AUTH)
    return resp.status, await resp.json()


async def test_base64_rows_are_the_float_rows_as_little_endian_float32(
    crew_port: tuple[TestClient, OllamaStub],  # noqa: F811
) -> None:
    client, _ = crew_port
    status, floats = await _embed(client, {"input": TEXTS})
    assert status == 200
    status, packed = await _embed(client, {"input": TEXTS, "encoding_format": "base64"})
    assert status == 200 and packed["model"] == LEAD_MODEL
    for plain, encoded in zip(floats["data"], packed["data"], strict=True):
        raw = base64.b64decode(encoded["embedding"], validate=True)
        assert len(raw) == 4 * 64 and encoded["index"] == plain["index"]
        decoded = struct.unpack(f"<{len(raw) // 4}f", raw)
        # float32 on both sides: the JSON numbers are the same float32 values, widened.
        assert list(decoded) == plain["embedding"]
    status, default = await _embed(client, {"input": TEXTS, "encoding_format": None})
    assert status == 200 and default["data"] == floats["data"]


@pytest.mark.parametrize("encoding", ["int8", "BASE64", 7, ["base64"]])
async def test_an_unknown_encoding_format_is_a_400_naming_the_two_it_takes(
    crew_port: tuple[TestClient, OllamaStub],  # noqa: F811
    encoding: Any,
) -> None:
    client, stub = crew_port
    seen = len(stub.requests)
    status, body = await _embed(client, {"input": TEXTS, "encoding_format": encoding})
    assert (status, body["error"]) == (400, "invalid_encoding_format")
    assert "'float'" in body["detail"] and "'base64'" in body["detail"]
    assert len(stub.requests) == seen  # the model was not asked


async def test_the_openai_embedder_reads_base64_and_floats_alike(
    crew_port: tuple[TestClient, OllamaStub],  # noqa: F811
) -> None:
    client, stub = crew_port
    url = str(client.make_url("/v1"))
    packed = OpenAIEmbedder(url, "lead", TOKEN, lead=True)  # asks for base64
    plain = OpenAIEmbedder(url, "lead", TOKEN, lead=True, encoding="float")
    a = await asyncio.to_thread(packed.embed, TEXTS)
    assert stub.requests  # the lead's model embedded them
    b = await asyncio.to_thread(plain.embed, TEXTS)
    assert a.shape == (3, 64) and (a == b).all() and packed.model_id == LEAD_MODEL


async def test_a_member_past_its_bound_gets_429_others_and_later_requests_go_through(
    crew_port: tuple[TestClient, OllamaStub],  # noqa: F811
) -> None:
    client, stub = crew_port
    stub.mode = "hang"  # the lead's model holds the first batch
    first = asyncio.create_task(_embed(client, {"input": BATCH}))
    await asyncio.to_thread(stub.hanging.wait, 10)
    # The same member (address) again: refused at once, the model never asked.
    resp = await client.post("/v1/embeddings", json={"input": BATCH}, headers=AUTH)
    body = await resp.json()
    assert (resp.status, body["error"]) == (429, "member_busy") and body["detail"]
    assert resp.headers["Retry-After"] == "1"
    # Its client says so as a wait, not a failure about the texts.
    member = OpenAIEmbedder(str(client.make_url("/v1")), "lead", TOKEN, lead=True)
    with pytest.raises(EmbedderBusy) as busy:
        await asyncio.to_thread(member.embed, BATCH)
    assert busy.value.retry_after == 1.0 and "429" in str(busy.value)
    # Another member (another address on loopback) is not held back by the first one.
    other = aiohttp.TCPConnector(local_addr=("127.0.0.2", 0))
    async with aiohttp.ClientSession(connector=other) as session:
        pending = asyncio.create_task(
            session.post(
                str(client.make_url("/v1/embeddings")), json={"input": BATCH}, headers=AUTH
            )
        )
        limits = client.server.app[LIMITS]
        await eventually(lambda: _admitted(limits, "127.0.0.2"), "the other member admitted")
        stub.mode = "ok"
        stub.release.set()
        resp2 = await pending
        assert resp2.status == 200, await resp2.text()
    status, answered = await first
    assert status == 200 and len(answered["data"]) == len(BATCH)
    status, _ = await _embed(client, {"input": BATCH})  # its slot is free again
    assert status == 200
