"""The toolsmith's hot registration through the official MCP Python SDK.

Usage: toolsmith_client.py --warden BIN --config FILE --state DIR --component WASM

The config serves Streamable HTTP with a token for `alice` and sets up
`[toolsmith]` so that the prebuilt component WASM (`gen_words_count`)
validates. With one client on each protocol generation connected, an
operator proposes and approves blueprints with the `warden toolsmith`
commands, as they would; the clients see a tool go live (one
`tools/list_changed` on each path), call it through the gate, see a
second version supersede it, a rollback restore it and a retirement
remove it. A blueprint that fails validation changes nothing they see.
Every check raises on failure; the script exits non-zero with the
failing check's name.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time

import mcp.types as types
from mcp.client.subscriptions import listen

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bridge_client import session_of  # noqa: E402
from client import Check, Server, expect  # noqa: E402

TOOL = "gen_words_count"


def blueprint(component: bytes, description: str, cases: list | None = None) -> dict:
    return {
        "capability": "words:count",
        "title": "Count words",
        "description": description,
        "input_schema": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
        "output_schema": {
            "type": "object",
            "properties": {"words": {"type": "integer", "minimum": 0}},
            "required": ["words"],
        },
        "body": {
            "component": {
                "sha256": hashlib.sha256(component).hexdigest(),
                "base64": base64.b64encode(component).decode(),
            }
        },
        "cases": cases
        or [
            {"name": "two", "args": {"text": "a b"}, "expect": {"ok": {"equals": {"words": 2}}}},
            {"name": "none", "args": {"text": ""}, "expect": {"ok": {"fields": [{"pointer": "/words", "equals": 0}]}}},
            {"name": "trap", "args": {"text": "trap"}, "expect": {"error": {}}},
        ],
        "rationale": "Agents asked for word counts all week.",
        "witness": {"text": "how many words is this"},
    }


def warden(args, *argv: str) -> dict:
    done = subprocess.run(
        [args.warden, "toolsmith", *argv, "--config", args.config, "--state-dir", args.state],
        capture_output=True,
        text=True,
        env={**os.environ, "WARDEN_ACTOR": "dana"},
        timeout=60,
    )
    if done.returncode != 0:
        raise Check(f"warden toolsmith {' '.join(argv)} failed: {done.stdout}{done.stderr}")
    return json.loads(done.stdout)


def propose_and_approve(args, bp: dict) -> int:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(bp, f)
    proposed = warden(args, "propose", f.name)
    os.unlink(f.name)
    warden(args, "approve", str(proposed["id"]), "--confirm", "--reason", "reviewed the blueprint")
    return proposed["id"]


def wait_state(args, id: int, states: tuple) -> dict:
    deadline = time.time() + 90
    while time.time() < deadline:
        for b in warden(args, "blueprints")["blueprints"]:
            if b["id"] == id and b["state"] in states:
                return b
        time.sleep(0.2)
    raise Check(f"blueprint {id} never reached {states}")


async def main(args) -> None:
    with open(args.component, "rb") as f:
        component = f.read()
    server = Server(args.warden, args.config, args.state)
    legacy_heard: asyncio.Queue = asyncio.Queue()
    modern_heard: asyncio.Queue = asyncio.Queue()

    async def on_message(message) -> None:
        root = getattr(message, "root", message)
        if isinstance(root, types.ToolListChangedNotification):
            legacy_heard.put_nowait(True)

    async def one_notice_each(what: str) -> None:
        await asyncio.wait_for(legacy_heard.get(), 90)
        await asyncio.wait_for(modern_heard.get(), 10)
        await asyncio.sleep(0.5)
        expect(legacy_heard.empty() and modern_heard.empty(), f"one list_changed on each path for {what}")

    async def described(session) -> str | None:
        for tool in (await session.list_tools()).tools:
            if tool.name == TOOL:
                return tool.description
        return None

    try:
        async with session_of(server, "alice", message_handler=on_message) as legacy:
            async with session_of(server, "alice", modern=True) as modern:
                async with listen(modern, tools_list_changed=True) as subscription:

                    async def pump() -> None:
                        async for event in subscription:
                            modern_heard.put_nowait(event)

                    task = asyncio.create_task(pump())
                    try:
                        expect(await described(legacy) is None, "no generated tool before any approval")

                        # A blueprint whose case fails: nothing changes for clients.
                        wrong = [
                            {"name": "two", "args": {"text": "a b"}, "expect": {"ok": {"equals": {"words": 3}}}},
                            {"name": "none", "args": {"text": ""}, "expect": {"ok": {"fields": [{"pointer": "/words", "exists": True}]}}},
                            {"name": "trap", "args": {"text": "trap"}, "expect": {"error": {}}},
                        ]
                        failing = propose_and_approve(args, blueprint(component, "Fails.", wrong))
                        failed = wait_state(args, failing, ("failed", "active"))
                        expect(failed["state"] == "failed", "a failing case ends failed", failed)
                        await asyncio.sleep(2.5)
                        expect(legacy_heard.empty() and modern_heard.empty(), "no list_changed for a failed validation")
                        expect(await described(legacy) is None, "a failed tool is not listed")

                        # Version 1 goes live on both paths and is callable.
                        first = propose_and_approve(args, blueprint(component, "Counts the words of a text."))
                        await one_notice_each("activation")
                        expect(wait_state(args, first, ("active",))["state"] == "active", "version 1 is active")
                        report = warden(args, "show", str(first)).get("report") or {}
                        witness = [c for c in report.get("checked", []) if c.get("kind") == "witness"]
                        expect(len(witness) == 1 and witness[0]["passed"], "the witness ran and passed", report)
                        for session in (legacy, modern):
                            expect(
                                await described(session) == "Counts the words of a text.",
                                "the live tool is listed with the blueprint's description",
                            )
                            result = await session.call_tool(TOOL, {"text": "a b"})
                            expect(not result.is_error, "the generated tool answers", result)
                            expect(result.structured_content == {"words": 2}, "its structured result", result)
                            refused = await session.call_tool(TOOL, {"text": 7})
                            expect(refused.is_error, "its arguments are checked before it runs", refused)

                        # Version 2 supersedes it; a rollback restores it.
                        second = propose_and_approve(args, blueprint(component, "Counts words, version two."))
                        await one_notice_each("a new version")
                        expect(await described(legacy) == "Counts words, version two.", "version 2 is listed")
                        expect(wait_state(args, first, ("superseded",))["state"] == "superseded", "version 1 superseded")
                        warden(args, "retire", TOOL, "--rollback", "--confirm", "--reason", "version two is worse")
                        await one_notice_each("a rollback")
                        expect(await described(modern) == "Counts the words of a text.", "the rollback is listed")
                        expect(wait_state(args, second, ("retired",))["state"] == "retired", "version 2 retired")

                        # Retired: gone for both, and refused at call.
                        warden(args, "retire", TOOL, "--confirm", "--reason", "no longer needed")
                        await one_notice_each("a retirement")
                        for session in (legacy, modern):
                            expect(await described(session) is None, "a retired tool is not listed")
                            gone = await session.call_tool(TOOL, {"text": "a b"})
                            expect(gone.is_error, "a retired tool is refused", gone)
                    finally:
                        task.cancel()
    finally:
        server.stop()
    print("all checks passed")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--warden", required=True)
    parser.add_argument("--config", required=True)
    parser.add_argument("--state", required=True)
    parser.add_argument("--component", required=True)
    try:
        asyncio.run(main(parser.parse_args()))
    except Check as failed:
        print(f"FAILED: {failed}")
        sys.exit(1)
