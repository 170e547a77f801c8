"""An MCP session over Streamable HTTP with a bearer token (the official
Python SDK), and a tool result's envelope read from its text: shared by
the client scripts that drive `warden serve --http`."""

from __future__ import annotations

import contextlib
import json

import httpx2
import mcp.types as types
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


@contextlib.asynccontextmanager
async def bearer_session(url: str, token: str, **session_kwargs):
    """A session, not yet initialized, whose requests carry `token`."""
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            async with ClientSession(streams[0], streams[1], **session_kwargs) as session:
                yield session


def envelope(result: types.CallToolResult) -> dict:
    """The JSON envelope in a result's text content ({} when there is none)."""
    text = "".join(c.text for c in result.content if isinstance(c, types.TextContent))
    try:
        return json.loads(text)
    except ValueError:
        return {}
