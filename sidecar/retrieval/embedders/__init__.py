"""Embedders: the interface, the factory that picks one, in-process MiniLM and Ollama."""
