"""Ollama's ``POST /api/chat`` with ``format`` set to the answer's JSON schema."""

from __future__ import annotations

from typing import Any

from sidecar.llm.client import HttpChat, LLMError, Message, Reply


class OllamaChat(HttpChat):
    def __init__(self, url: str, model: str, timeout: float) -> None:
        super().__init__()
        self.url = url.rstrip("/") + "/api/chat"
        self.model = model
        self.model_id = f"ollama:{model}"
        self.timeout = timeout
        self._headers = {}

    async def chat(self, messages: list[Message], schema: dict[str, Any], name: str) -> Reply:
        body = {
            "model": self.model,
            "messages": messages,
            "format": schema,
            "stream": False,
            "options": {"temperature": 0},
        }
        data = await self._post(body)
        message = data.get("message")
        if not isinstance(message, dict) or not isinstance(message.get("content"), str):
            raise LLMError(f"{self.url} answered without message.content: {str(data)[:200]}")
        return Reply(
            message["content"], int(data.get("prompt_eval_count") or 0),
            int(data.get("eval_count") or 0),
        )  # fmt: skip
