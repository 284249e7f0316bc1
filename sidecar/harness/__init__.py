"""Agent harnesses plugged into memory: ``sidecar hook`` maps a harness's hook payloads
(Claude Code's first) to sessions and journal events, and installs itself in its settings."""
