"""Tier folders on disk: which paths are safe to open, and where a write becomes durable."""
