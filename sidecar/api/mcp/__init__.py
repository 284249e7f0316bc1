"""MCP: the tool server, ``sidecar mcp`` over stdio, and ``/mcp`` over HTTP."""
