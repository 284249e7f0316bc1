"""The HTTP app, its guards and daemon-wide routes, the lead's crew address, and MCP."""
