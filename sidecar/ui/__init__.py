"""The memory inspector: a page the daemon serves at ``/ui`` that reads the JSON API."""

PATH = "/ui"  # here, not in ``routes``: ``sidecar ui`` needs it without loading aiohttp
