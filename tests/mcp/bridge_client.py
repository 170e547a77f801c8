"""The MCP bridge through the official MCP Python SDK client.

Usage: bridge_client.py --warden BIN --config FILE --state DIR

The config serves over Streamable HTTP with tokens for `alice` and `bob`
and bridges two servers on the host runtime: `time`, the reference MCP
time server installed from the Python package index (a third-party
server), and `fx`, Warden's fixture server, with a session per agent.
Every check raises on failure; the script exits non-zero with the failing
check's name.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time

import httpx2
import mcp.types as types
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import listen

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from client import TOKENS, Check, Server, expect  # noqa: E402


@contextlib.asynccontextmanager
async def session_of(server: Server, agent: str, modern: bool = False, **kwargs):
    headers = {"Authorization": f"Bearer {TOKENS[agent]}"}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        async with streamable_http_client(server.url, http_client=http) as streams:
            async with ClientSession(streams[0], streams[1], **kwargs) as session:
                if modern:
                    await session.discover()
                else:
                    await session.initialize()
                yield session


async def one_notice(args, heard: asyncio.Queue, *approve: str) -> None:
    """`warden bridge approve ARGS`: exactly one list_changed when it changes
    the visible set, none when it approves what is already approved."""
    await asyncio.to_thread(warden, args, "approve", *approve, "--reason", "reviewed")
    await asyncio.wait_for(heard.get(), 10)
    await asyncio.sleep(1.5)
    expect(heard.empty(), f"one list_changed for approving {approve}", heard.qsize())
    await asyncio.to_thread(warden, args, "approve", *approve, "--reason", "again")
    await asyncio.sleep(1.5)
    expect(heard.empty(), f"no list_changed for approving {approve} again", heard.qsize())


async def notices_on_both_paths(args, server: Server) -> None:
    """Approving a tool reaches a legacy session's handler and a 2026-07-28
    listen stream once each."""
    heard: asyncio.Queue = asyncio.Queue()

    async def on_message(message) -> None:
        root = getattr(message, "root", message)
        if isinstance(root, types.ToolListChangedNotification):
            heard.put_nowait(True)

    async with session_of(server, "alice", message_handler=on_message) as legacy:
        await legacy.list_tools()
        await one_notice(args, heard, "fx", "image")
    async with session_of(server, "alice", modern=True) as modern:
        async with listen(modern, tools_list_changed=True) as subscription:
            streamed: asyncio.Queue = asyncio.Queue()

            async def pump() -> None:
                async for event in subscription:
                    streamed.put_nowait(event)

            task = asyncio.create_task(pump())
            try:
                await one_notice(args, streamed, "fx", "audio")
            finally:
                task.cancel()


def warden(args, *argv: str) -> dict:
    done = subprocess.run(
        [args.warden, "bridge", *argv, "--config", args.config, "--state-dir", args.state],
        capture_output=True,
        text=True,
        env={**os.environ, "WARDEN_ACTOR": "operator"},
        timeout=60,
    )
    if done.returncode != 0:
        raise Check(f"warden bridge {' '.join(argv)} failed: {done.stdout}{done.stderr}")
    return json.loads(done.stdout) if "--json" in argv else {}


def wait_listed(args, name: str) -> dict:
    deadline = time.time() + 60
    while time.time() < deadline:
        status = warden(args, "status", name, "--json")["bridges"][0]
        if status["state"] != "starting":
            return status
        time.sleep(0.2)
    raise Check(f"bridge {name} never listed its tools")


def text_of(result: types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def main(args) -> None:
    server = Server(args.warden, args.config, args.state)
    try:
        for name in ("time", "fx"):
            status = wait_listed(args, name)
            expect(status["state"] == "ready", f"{name} lists its tools", status)
            expect(
                all(t["state"] == "not approved" for t in status["tools"]),
                f"{name}'s tools wait for approval",
                status,
            )
        async with session_of(server, "alice") as alice:
            listed = {t.name for t in (await alice.list_tools()).tools}
            expect("time_get_current_time" not in listed, "unapproved tools are hidden", listed)
            warden(args, "approve", "time", "--reason", "reviewed the time server")
            warden(args, "approve", "fx", "counter", "--reason", "reviewed the counter")
            listed = {t.name for t in (await alice.list_tools()).tools}
            expect("time_get_current_time" in listed, "approved tools are listed", listed)
            expect("fx_counter" in listed and "fx_echo" not in listed, "only the approved fixture tool", listed)

            # The third-party server, through the gate.
            result = await alice.call_tool("time_get_current_time", {"timezone": "UTC"})
            expect(not result.is_error, "the time server answers", result)
            body = json.loads(text_of(result))
            expect(body.get("timezone") == "UTC" and "datetime" in body, "the time server's answer", body)
            refused = await alice.call_tool("time_get_current_time", {"timezone": 7})
            expect(refused.is_error, "arguments are checked against the pinned schema", refused)
            expect("ArgumentValidationError" in text_of(refused), "the refusal says why", refused)

            # A session per agent: the fixture's counter is each agent's own.
            async with session_of(server, "bob") as bob:
                counts = []
                for session in (alice, alice, bob, alice):
                    result = await session.call_tool("fx_counter", {})
                    expect(not result.is_error, "the counter answers", result)
                    counts.append(result.structured_content["count"])
                expect(counts == [1, 2, 1, 3], "each agent has its own upstream session", counts)
        await notices_on_both_paths(args, server)
        status = warden(args, "status", "fx", "--json")["bridges"][0]
        expect(set(status["sessions"]) >= {"agent:alice", "agent:bob"}, "status shows both sessions", status)
    finally:
        server.stop()
    print("all checks passed", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--warden", required=True)
    parser.add_argument("--config", required=True)
    parser.add_argument("--state", required=True)
    try:
        asyncio.run(main(parser.parse_args()))
    except Check as failed:
        print(f"FAILED - {failed}", flush=True)
        sys.exit(1)
