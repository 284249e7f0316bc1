"""A stand-in LLM server on loopback that speaks both real wire formats: Ollama's
``POST /api/chat`` and OpenAI's ``POST /v1/chat/completions``.

Each request takes the next scripted step: an answer (a dict, sent as the JSON
content), raw text (malformed output), an HTTP error, a refusal, a stall (for
timeouts), or a hold until the test releases it (``arrived`` says a request came). An
answer may name a known fact by a word of its sentence, ``{id:Osaka}``: the stub
replaces it with the id the prompt showed for the fact containing "Osaka",
as a model reading the prompt would. Tokens are counted as words, as a tokenizer
would roughly count them, and reported the way each API reports usage.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiohttp import web

if TYPE_CHECKING:
    from sidecar.config import Settings

_KNOWN = re.compile(r"^\[ID: ([^\]]+)\] \[[a-z]+\] (.*)$", re.MULTILINE)
_EPISODE = re.compile(r"^\[episode ([^\]]+)\]", re.MULTILINE)
_PLACEHOLDER = re.compile(r"\{id:([^}]+)\}")


@dataclass
class Step:
    answer: dict[str, Any] | None = None
    raw: str | None = None
    status: int = 200
    refusal: str | None = None
    stall: float = 0.0
    hold: asyncio.Event | None = None  # answer only once the test sets it


@dataclass
class LLMStub:
    steps: deque[Step | Any] = field(default_factory=deque)
    requests: list[dict[str, Any]] = field(default_factory=list)
    prompt_tokens: int = 0
    answer_tokens: int = 0
    default: Any = None  # a function of the prompt text (an answer or a Step), for the rest
    arrived: asyncio.Event = field(default_factory=asyncio.Event)  # set by each request
    _runner: web.AppRunner | None = None
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def serving(self, settings: Settings) -> Settings:
        """``settings`` with this stub as the model, over the OpenAI wire format."""
        return dataclasses.replace(
            settings, llm_url=self.url + "/v1", llm_model="stub-3b", llm_api="openai"
        )

    def script(self, *steps: Step | dict[str, Any] | str) -> None:
        for step in steps:
            if isinstance(step, dict):
                step = Step(answer=step)
            elif isinstance(step, str):
                step = Step(raw=step)
            self.steps.append(step)

    async def start(self) -> LLMStub:
        app = web.Application()
        app.router.add_post("/api/chat", self._ollama)
        app.router.add_post("/v1/chat/completions", self._openai)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _next(self, body: dict[str, Any]) -> tuple[Step, str, int]:
        self.requests.append(body)
        prompt = "\n".join(m["content"] for m in body["messages"])
        if self.steps:
            step = self.steps.popleft()
        elif self.default is not None:
            made = self.default(prompt)
            step = made if isinstance(made, Step) else Step(answer=made)
        else:
            step = Step(answer={"facts": []})
        self.arrived.set()
        if step.hold is not None:
            await step.hold.wait()
        if step.stall:
            await asyncio.sleep(step.stall)
        text = step.raw if step.raw is not None else json.dumps(step.answer or {})
        text = _fill_ids(text, prompt)
        used = len(prompt.split())
        self.prompt_tokens += used
        self.answer_tokens += len(text.split())
        return step, text, used

    async def _ollama(self, request: web.Request) -> web.Response:
        body = await request.json()
        assert body.get("stream") is False and isinstance(body.get("format"), dict)
        step, text, used = await self._next(body)
        if step.status != 200:
            return web.json_response({"error": "model failed"}, status=step.status)
        return web.json_response({
            "model": body["model"], "message": {"role": "assistant", "content": text},
            "done": True, "prompt_eval_count": used, "eval_count": len(text.split()),
        })  # fmt: skip

    async def _openai(self, request: web.Request) -> web.Response:
        body = await request.json()
        assert body["response_format"]["type"] == "json_schema"
        step, text, used = await self._next(body)
        if step.status != 200:
            return web.json_response({"error": {"message": "overloaded"}}, status=step.status)
        message: dict[str, Any] = {"role": "assistant", "content": None if step.refusal else text}
        if step.refusal:
            message["refusal"] = step.refusal
        return web.json_response({
            "id": "chatcmpl-stub", "object": "chat.completion", "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": used, "completion_tokens": len(text.split()),
                      "total_tokens": used + len(text.split())},
        })  # fmt: skip


def known_facts(prompt: str) -> dict[str, str]:
    """The facts a prompt showed: sentence -> id."""
    return {sentence: fid for fid, sentence in _KNOWN.findall(prompt)}


def episode_ids(prompt: str) -> list[str]:
    return _EPISODE.findall(prompt)


EPISODES = "__episodes__"  # in a scripted answer: every episode the prompt showed


def _fill_ids(text: str, prompt: str) -> str:
    text = text.replace(json.dumps([EPISODES]), json.dumps(episode_ids(prompt)))
    known = known_facts(prompt)

    def one(m: re.Match[str]) -> str:
        word = m.group(1)
        for sentence, fid in known.items():
            if word.lower() in sentence.lower():
                return fid
        return f"invented-{word}"

    return _PLACEHOLDER.sub(one, text)
