"""The lead's ``/v1/embeddings`` on the OpenAI wire: ``encoding_format`` (base64 rows of
little-endian float32, floats by default), and each member's bound on requests in flight
(429 with Retry-After past it), read by the member's own client."""

from __future__ import annotations

import asyncio
import base64
import json
import struct
import threading
import urllib.request
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestClient

from sidecar.api.crew_embeddings import LIMITS, QUERY_BODY_BYTES, MemberLimits
from sidecar.retrieval.embedders.base import EmbedderBusy, EmbedderError, EmbedderRefused
from sidecar.retrieval.embedders.openai import OpenAIEmbedder
from tests.conftest import eventually
from tests.ollama_stub import OllamaStub
from tests.sidecar_process import SidecarProcess, free_port, wait_for
from tests.test_embed_lead import (  # noqa: F401 - crew_port is a fixture
    AUTH,
    LEAD_MODEL,
    TOKEN,
    _embeddings_status,
    _write,
    crew_port,
)

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


@pytest.mark.parametrize("encoding", ["int8", "BASE64", 7, ["base64"], "", 0, False, {}])
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
    assert resp.headers["Retry-After"] == "1" and body["retry_after"] == 1
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


async def test_a_busy_members_long_body_is_refused_before_it_is_read(
    crew_port: tuple[TestClient, OllamaStub],  # noqa: F811
) -> None:
    """With its batch slot taken, a member's next body too long for a query is answered
    429 from its headers alone: the lead never buffers the megabytes it declares."""
    client, stub = crew_port
    stub.mode = "hang"
    first = asyncio.create_task(_embed(client, {"input": BATCH}))
    await asyncio.to_thread(stub.hanging.wait, 10)
    reader, writer = await asyncio.open_connection(client.host, client.port)
    declared = QUERY_BODY_BYTES + 1
    head = (
        f"POST /v1/embeddings HTTP/1.1\r\nHost: {client.host}\r\n"
        f"Authorization: {AUTH['Authorization']}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {declared}\r\n\r\n"
    )
    writer.write(head.encode() + b'{"input": ["')  # and not one byte more
    await writer.drain()
    status_line = await asyncio.wait_for(reader.readline(), 30)
    writer.close()
    assert status_line.split()[1] == b"429"
    stub.mode = "ok"
    stub.release.set()
    status, _ = await first
    assert status == 200


async def test_a_busy_members_query_of_escaped_astral_text_is_still_a_query(
    crew_port: tuple[TestClient, OllamaStub],  # noqa: F811
) -> None:
    """A query's texts written as JSON clients write them (``ensure_ascii``): a character
    outside the BMP is a surrogate pair, 12 bytes. Such a query, within every text and
    length bound, is longer than 6 bytes a character; with the member's batch slot taken
    it must still be served as a query, not refused from its length as a batch."""
    client, stub = crew_port
    stub.mode = "hang"
    first = asyncio.create_task(_embed(client, {"input": BATCH}))
    await asyncio.to_thread(stub.hanging.wait, 10)
    stub.mode = "ok"  # the next request is answered; the batch still hangs
    query = {"input": ["\U0001f600" * 8192] * 4}
    assert len(json.dumps(query).encode()) > 4 * 8192 * 6 + 4096  # longer than 6 a char
    status, answered = await _embed(client, query)
    assert status == 200, answered
    assert len(answered["data"]) == 4
    stub.release.set()
    status, _ = await first
    assert status == 200


def test_a_member_told_to_wait_searches_by_words_meanwhile_and_comes_back_as_asked(
    tmp_path: Path,
) -> None:
    """Real processes: another client from the member's own address holds its batch slot on
    the lead, so the member's next batch gets 429; the member says so in /healthz, searches
    by words, and is back to hybrid after the Retry-After second, not its 30 s retry."""
    shared = tmp_path / "shared" / ".memory"
    shared.mkdir(parents=True)
    port = free_port()
    crew_url = f"http://127.0.0.1:{port}"
    auth = {"SIDECAR_CREW_TOKEN": TOKEN}
    with OllamaStub() as stub:
        lead = SidecarProcess(
            tmp_path / "lead" / ".memory", shared, "lead",
            ["--crew-listen", f"127.0.0.1:{port}", "--embedder", "ollama",
             "--ollama-url", stub.url], auth,
        )  # fmt: skip
        member = SidecarProcess(
            tmp_path / "member" / ".memory", shared, "agent",
            ["--lead-url", crew_url, "--embedder", "lead", "--embed-retry", "30"], auth,
        )  # fmt: skip
        holder = threading.Thread(target=_post_batch, args=(crew_url,))
        try:
            lead.start()
            member.start()
            _write(member, "AGENT.md", "- the crane is blue\n")
            wait_for(lambda: _embeddings_status(member).get("state") == "ready",
                     what="the member's first vectors")  # fmt: skip
            stub.mode = "hang"
            holder.start()  # from 127.0.0.1, as the member: its one batch slot is taken
            assert stub.hanging.wait(10)
            _write(
                member, "daily/2026-11-20.md", "\n".join(f"- harbour note {i}" for i in range(6))
            )
            wait_for(lambda: any("429" in r for r in member.get("/healthz").get("reasons", [])),
                     what="the member to say the lead asked it to wait")  # fmt: skip
            health = member.get("/healthz")
            assert (health["status"], health["retrieval"]) == ("degraded", "sparse-only")
            status, body = member.call("POST", "/memory/search",
                                       {"query": "harbour note", "scope": "agent"})  # fmt: skip
            assert status == 200 and body["mode"] == "sparse" and body["results"], body
            stub.mode = "ok"
            stub.release.set()
            holder.join(10)
            wait_for(lambda: member.get("/healthz")["retrieval"] == "hybrid", timeout=20,
                     what="hybrid after Retry-After, well before --embed-retry")  # fmt: skip
            wait_for(lambda: _embeddings_status(member).get("state") == "ready",
                     what="the note embedded once the lead took the batch")  # fmt: skip
            status, body = member.call("POST", "/memory/search",
                                       {"query": "harbour note", "scope": "agent"})  # fmt: skip
            assert body["mode"] == "hybrid" and "dense" in body["results"][0]["ranks"], body
        finally:
            member.kill()
            lead.kill()
            stub.release.set()


def _post_batch(crew_url: str) -> None:
    body = json.dumps({"input": BATCH}).encode()
    headers = {**AUTH, "Content-Type": "application/json"}
    request = urllib.request.Request(f"{crew_url}/v1/embeddings", body, headers, method="POST")
    with urllib.request.urlopen(request, timeout=30) as resp:
        resp.read()


def _b64(*values: float) -> str:
    return base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode()


@pytest.mark.parametrize(
    ("rows", "error", "refused"),
    [
        (["not base64!"], "not base64", False),
        ([base64.b64encode(b"\x00\x00\x80\x3f\x00").decode()], "not float32s", False),
        ([_b64(1.0, 2.0), [1.0, 2.0]], "mixed, empty or huge", False),
        ([_b64(1.0, 2.0), _b64(1.0)], "mixed, empty or huge", False),
        ([_b64(float("nan"), 1.0)], "NaN or infinite", True),
        ([_b64(0.0, 0.0)], "all-zero", True),
    ],
)
def test_a_base64_reply_that_does_not_fit_is_an_error_with_the_reason(
    rows: list[Any], error: str, refused: bool
) -> None:
    embedder = OpenAIEmbedder("http://127.0.0.1:9", "m", encoding="base64")
    data = [{"object": "embedding", "index": i, "embedding": r} for i, r in enumerate(rows)]
    body = json.dumps({"object": "list", "data": data, "model": "m"}).encode()
    with pytest.raises(EmbedderError) as info:
        embedder._parse(body, len(rows))
    assert error in str(info.value)
    assert isinstance(info.value, EmbedderRefused) is refused  # refused: about these texts
    assert embedder.dim == 0  # nothing learned from a reply that did not fit


def test_a_429s_retry_after_is_read_within_bounds_and_a_second_without_one() -> None:
    from sidecar.retrieval.embedders.openai import _seconds

    assert [_seconds(h) for h in (None, "", "soon", "2", "0", "-5", "86400")] == [
        1.0, 1.0, 1.0, 2.0, 0.1, 0.1, 300.0,
    ]  # fmt: skip
    # Numbers float() reads but no wait is: NaN would have been the vector sync's timeout.
    assert [_seconds(h) for h in ("nan", "NaN", "inf", "-inf", "1e999")] == [
        1.0, 1.0, 300.0, 0.1, 300.0,
    ]  # fmt: skip
