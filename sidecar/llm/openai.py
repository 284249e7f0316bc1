"""An OpenAI-compatible ``POST /v1/chat/completions`` with a ``json_schema`` response format."""

from __future__ import annotations

from typing import Any

from sidecar.llm.client import HttpChat, LLMError, Message, Reply


class OpenAIChat(HttpChat):
    def __init__(self, url: str, model: str, api_key: str | None, timeout: float) -> None:
        super().__init__()
        base = url.rstrip("/")
        self.url = base + ("/chat/completions" if base.endswith("/v1") else "/v1/chat/completions")
        self.model = model
        self.model_id = f"openai:{model}"
        self.timeout = timeout
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}

    async def chat(self, messages: list[Message], schema: dict[str, Any], name: str) -> Reply:
        body = {
            "model": self.model,
            "messages": messages,
            "temperature": 0,
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": schema, "strict": True},
            },
        }
        data = await self._post(body)
        try:
            message = data["choices"][0]["message"]
        except (KeyError, IndexError, TypeError):
            raise LLMError(f"{self.url} answered without choices[0].message") from None
        if message.get("refusal"):
            raise LLMError(f"{self.model} refused: {message['refusal']}")
        if not isinstance(message.get("content"), str):
            raise LLMError(f"{self.url} answered without message content")
        usage = data.get("usage") or {}
        return Reply(
            message["content"], int(usage.get("prompt_tokens") or 0),
            int(usage.get("completion_tokens") or 0),
        )  # fmt: skip
