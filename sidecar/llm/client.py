"""The interface every LLM adapter implements, and the one way the daemon asks a question.

The daemon only ever needs structured answers: a system prompt, a user prompt and
the JSON schema the answer must fit. ``ask`` sends them, checks the answer against
the schema (and the caller's own checks), and on a bad answer asks once more with
the validation error; a second bad answer, a timeout or a refusal is an
``LLMError`` that names what went wrong, and the caller applies nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

Message = dict[str, str]
# Far above a whole answer (the facts' is at most 32 KiB of JSON, escaped in a wrapper);
# a reply past it is read no further, so a server cannot fill memory or the event loop.
MAX_REPLY_BYTES = 4 * 1024 * 1024


class LLMError(RuntimeError):
    """No usable answer: the server is down, slow, refused, or answered out of schema."""


@dataclass(frozen=True, slots=True)
class Reply:
    """What the server said, before any checking, and what it cost."""

    text: str
    prompt_tokens: int
    answer_tokens: int


@dataclass(frozen=True, slots=True)
class Answer:
    data: dict[str, Any]
    prompt_tokens: int  # over every attempt
    answer_tokens: int
    attempts: int


class LLMClient(Protocol):
    model_id: str  # what the answers came from, e.g. "ollama:qwen2.5:3b"

    async def chat(self, messages: list[Message], schema: dict[str, Any], name: str) -> Reply:
        """One request constrained to ``schema``; raises LLMError."""
        ...

    async def close(self) -> None: ...


def _problems(text: str, schema: dict[str, Any], check: Callable[[Any], list[str]]) -> list[str]:
    # jsonschema (with its metaschemas) loads on the first answer checked, not in
    # every daemon: most never ask a model anything.
    from jsonschema import Draft202012Validator

    try:
        data = json.loads(text)
    except ValueError as exc:  # not JSON, or a number too long to read
        return [f"the answer is not JSON ({exc})"]
    found = [
        f"{'/'.join(str(p) for p in e.absolute_path) or '(top)'}: {e.message}"
        for e in Draft202012Validator(schema).iter_errors(data)
    ]
    return found[:5] or check(data)


async def ask(
    client: LLMClient,
    system: str,
    user: str,
    schema: dict[str, Any],
    name: str,
    check: Callable[[Any], list[str]] = lambda _: [],
) -> Answer:
    """A schema-valid answer, asking at most twice; ``check`` adds the caller's own rules."""
    messages: list[Message] = [{"role": "system", "content": system},
                               {"role": "user", "content": user}]  # fmt: skip
    prompt = answer = 0
    for attempt in (1, 2):
        reply = await client.chat(messages, schema, name)
        prompt += reply.prompt_tokens
        answer += reply.answer_tokens
        problems = _problems(reply.text, schema, check)
        if not problems:
            return Answer(json.loads(reply.text), prompt, answer, attempt)
        messages += [
            {"role": "assistant", "content": reply.text},
            {"role": "user", "content": "That answer is invalid: " + "; ".join(problems)
             + ". Answer again with JSON that fits the schema exactly."},
        ]  # fmt: skip
    raise LLMError(f"{client.model_id} answered out of schema twice: {'; '.join(problems)}")


async def post_json(
    session: Any, url: str, body: dict[str, Any], seconds: float, headers: dict[str, str]
) -> dict[str, Any]:
    """POST and the JSON object answered; every failure an LLMError saying which."""
    import aiohttp

    try:
        async with session.post(
            url, json=body, headers=headers, timeout=aiohttp.ClientTimeout(total=seconds)
        ) as resp:
            raw = await _bounded_text(resp, url)
            if resp.status != 200:
                raise LLMError(f"{url} answered {resp.status}: {raw[:300]}")
    except TimeoutError:
        raise LLMError(f"{url} did not answer within {seconds:g} s") from None
    except aiohttp.ClientError as exc:
        raise LLMError(f"{url} unreachable: {exc}") from None
    try:
        data = json.loads(raw)
    except ValueError:  # not JSON, or a number too long to read
        raise LLMError(f"{url} answered something that is not JSON: {raw[:200]!r}") from None
    if not isinstance(data, dict):
        raise LLMError(f"{url} answered JSON that is not an object")
    return data


async def _bounded_text(resp: Any, url: str) -> str:
    data = bytearray()
    async for chunk in resp.content.iter_chunked(64 * 1024):
        data += chunk
        if len(data) > MAX_REPLY_BYTES:
            raise LLMError(f"{url} answered more than {MAX_REPLY_BYTES:,} bytes; no answer "
                           "is that long, so it was not read further")  # fmt: skip
    return data.decode("utf-8", "replace")  # JSON is UTF-8 (RFC 8259)


class HttpChat:
    """What both adapters share: one aiohttp session, opened on first use."""

    url: str
    timeout: float
    _headers: dict[str, str]

    def __init__(self) -> None:
        self._session: Any = None

    async def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        import aiohttp

        if self._session is None:
            self._session = aiohttp.ClientSession()
        return await post_json(self._session, self.url, body, self.timeout, self._headers)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
