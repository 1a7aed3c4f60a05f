"""The MCP tools, over stdio and HTTP, and `ondeck mcp` forwarding to a server."""
