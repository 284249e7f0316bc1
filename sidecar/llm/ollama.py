"""Ollama's ``POST /api/chat`` with ``format`` set to the answer's JSON schema."""

from __future__ import annotations

from typing import Any

import aiohttp

from sidecar.llm.client import LLMError, Message, Reply, post_json


class OllamaChat:
    def __init__(self, url: str, model: str, timeout: float) -> None:
        self.url = url.rstrip("/") + "/api/chat"
        self.model = model
        self.model_id = f"ollama:{model}"
        self.timeout = timeout
        self._session: aiohttp.ClientSession | None = None

    async def chat(self, messages: list[Message], schema: dict[str, Any], name: str) -> Reply:
        if self._session is None:
            self._session = aiohttp.ClientSession()
        body = {
            "model": self.model,
            "messages": messages,
            "format": schema,
            "stream": False,
            "options": {"temperature": 0},
        }
        data = await post_json(self._session, self.url, body, self.timeout, {})
        message = data.get("message")
        if not isinstance(message, dict) or not isinstance(message.get("content"), str):
            raise LLMError(f"{self.url} answered without message.content: {str(data)[:200]}")
        return Reply(
            message["content"], int(data.get("prompt_eval_count") or 0),
            int(data.get("eval_count") or 0),
        )  # fmt: skip

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
