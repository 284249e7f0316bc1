"""Which LLM adapter serves the configured API."""

from __future__ import annotations

from sidecar.llm.client import LLMClient
from sidecar.llm.ollama import OllamaChat
from sidecar.llm.openai import OpenAIChat

APIS = ("ollama", "openai")


def make_client(api: str, url: str, model: str, api_key: str | None, timeout: float) -> LLMClient:
    """The adapter for ``api``: ``ollama`` (POST /api/chat) or ``openai`` (POST
    /v1/chat/completions, any OpenAI-compatible server)."""
    if api == "ollama":
        return OllamaChat(url, model, timeout)
    if api == "openai":
        return OpenAIChat(url, model, api_key, timeout)
    raise ValueError(f"llm api must be one of {', '.join(APIS)}, not {api!r}")
