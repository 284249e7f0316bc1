"""The memory inspector: a page the daemon serves at ``/ui`` that reads the JSON API."""
