"""LLM clients: one small interface, an adapter per wire format (Ollama, OpenAI-compatible)."""
