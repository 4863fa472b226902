"""The agent surface: skill tools for function-calling runtimes, and the MCP server."""
