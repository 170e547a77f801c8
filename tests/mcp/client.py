"""Drives a real `warden serve` with the official MCP Python SDK.

Usage: client.py --warden BIN --config FILE --disclosure-config FILE
                 --operator-config FILE --state DIR --workspace DIR
                 --extra-plugin FILE
                 --transport stdio|http --protocol legacy|modern

The config defines agents `alice` (standard; her asks are answered by the
person behind her client) and `bob` (level `reader`: file-system only),
tokens for both, the fs and probe plugins; the operator config is the same
with `[serve] elicitation = false`. Every check raises on failure; the
script exits non-zero with the failing check's name.

The `attack_*` scenarios are an agent trying to approve its own asks and
widen its own rules; each must be refused.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import subprocess
import sys
import time
from typing import Any

import httpx2
import mcp.types as types
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import listen

from checks import Check, expect, print_failures

TOKENS = {"alice": "alice-token-0123456789", "bob": "bob-token-0123456789ab"}


def envelope(result: types.CallToolResult) -> dict:
    """A result's envelope: an error's is its text (errors carry no
    structured content, which clients would hold to the output schema)."""
    if not result.is_error:
        return result.structured_content or {}
    if result.structured_content is not None:
        raise Check(f"an error result carries structured content: {result}")
    text = "".join(c.text for c in result.content if isinstance(c, types.TextContent))
    try:
        return json.loads(text)
    except ValueError:
        return {}


class Server:
    """A `warden serve --http` process on an ephemeral loopback port."""

    def __init__(self, warden: str, config: str, state: str) -> None:
        self.proc = subprocess.Popen(
            [warden, "serve", "--http", "127.0.0.1:0", "--config", config, "--state-dir", state],
            stderr=subprocess.PIPE,
            text=True,
        )
        self.url = ""
        deadline = time.time() + 120
        assert self.proc.stderr is not None
        while time.time() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                raise Check(f"warden serve exited early with {self.proc.wait()}")
            m = re.search(r"serving MCP at (http://\S+/mcp)", line)
            if m:
                self.url = m.group(1)
                return
        raise Check("warden serve did not report its address")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@contextlib.asynccontextmanager
async def connect(args, agent: str, server: Server | None, config: str, **session_kwargs):
    if args.transport == "stdio":
        params = StdioServerParameters(
            command=args.warden,
            args=["serve", "--stdio", "--agent", agent, "--config", config, "--state-dir", args.state],
        )
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, **session_kwargs) as session:
                await handshake(args, session)
                yield session
    else:
        assert server is not None
        headers = {"Authorization": f"Bearer {TOKENS[agent]}"}
        async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
            async with streamable_http_client(server.url, http_client=http) as streams:
                read, write = streams[0], streams[1]
                async with ClientSession(read, write, **session_kwargs) as session:
                    await handshake(args, session)
                    yield session


async def handshake(args, session: ClientSession) -> None:
    if args.protocol == "legacy":
        result = await session.initialize()
        expect(not result.protocol_version.startswith("2026"), "legacy handshake", result.protocol_version)
    else:
        await session.discover()
        expect(session.protocol_version == "2026-07-28", "2026-07-28 discovery", session.protocol_version)


async def call(session: ClientSession, name: str, arguments: dict, **kw) -> Any:
    return await session.call_tool(name, arguments, allow_input_required=True, **kw)


def approve_once(_ctx, params) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"decision": "allow_once"})


async def elicitation_callback(context, params):
    return approve_once(context, params)


async def answer_input_required(session, name, arguments, result):
    """Fulfils an input-required result the way a person would, and retries."""
    responses = {}
    for key, request in (result.input_requests or {}).items():
        responses[key] = types.ElicitResult(action="accept", content={"decision": "allow_once"}).model_dump(
            by_alias=True, exclude_none=True
        )
    return await call(session, name, arguments, input_responses=responses, request_state=result.request_state)


async def scenario_lists_and_calls(args, server) -> None:
    async with connect(args, "alice", server, args.config) as alice:
        tools = {t.name: t for t in (await alice.list_tools()).tools}
        expect({"fs_read", "fs_write", "probe_run"} <= set(tools), "alice sees fs and probe tools", sorted(tools))
        expect(tools["fs_read"].annotations.read_only_hint is True, "fs_read is read-only", tools["fs_read"].annotations)
        expect(tools["fs_delete"].annotations.destructive_hint is True, "fs_delete is destructive", tools["fs_delete"].annotations)

        result = await call(alice, "fs_read", {"path": "hello.txt"})
        expect(not result.is_error, "an allowed call runs", result)
        expect("hello from the workspace" in json.dumps(result.structured_content), "it returns the file", result)

        result = await call(alice, "fs_read", {"path": "/etc/passwd"})
        env = envelope(result)
        expect(result.is_error and env.get("status") == "error", "a denied call is an error result", result)
        expect(env.get("error_type") == "PermissionDenied" and env.get("domain_code"), "its envelope says why", env)
        expect("/etc/passwd" in env.get("message", ""), "the reason names the call", env)

        expect("request_capability" in tools, "request_capability is offered", sorted(tools))
        result = await call(alice, "request_capability",
                            {"capability": "category:web", "justification": "read the docs", "ttl": 60})
        env = envelope(result)
        expect(result.is_error and env.get("domain_code") == "approval_pending",
               "a high-risk capability request waits for a person", env)
        expect("ap-" in env.get("message", ""), "it names the approval to answer", env)

    async with connect(args, "bob", server, args.config) as bob:
        names = {t.name for t in (await bob.list_tools()).tools}
        expect("fs_read" in names and "probe_run" not in names, "bob's level shows fewer tools", sorted(names))
        result = await call(bob, "probe_run", {"action": "noop"})
        expect(result.is_error and envelope(result).get("domain_code") == "denied_by_category", "bob cannot call a tool he cannot see", envelope(result))


async def scenario_elicitation(args, server) -> None:
    async with connect(args, "alice", server, args.config, elicitation_callback=elicitation_callback) as alice:
        arguments = {"path": "elicited.txt", "content": "approved"}
        result = await call(alice, "fs_write", arguments)
        if isinstance(result, types.InputRequiredResult):
            expect(args.protocol == "modern", "input-required only on 2026-07-28", result)
            expect("approval" in (result.input_requests or {}), "it asks for an approval", result)
            result = await answer_input_required(alice, "fs_write", arguments, result)
        expect(isinstance(result, types.CallToolResult) and not result.is_error, "an ask answered by elicitation runs", result)


async def scenario_pending_approval(args, server) -> None:
    async with connect(args, "alice", server, args.config) as alice:
        arguments = {"path": "pending.txt", "content": "later"}
        result = await call(alice, "fs_write", arguments)
        env = envelope(result)
        expect(result.is_error and env.get("domain_code") == "approval_pending", "without elicitation an ask is pending", env)
        approval = re.search(r"approval (ap-\d+)", env.get("message", ""))
        expect(approval is not None, "the result carries the approval id", env)
        listed = subprocess.run(
            [args.warden, "approvals", "list", "--state-dir", args.state], capture_output=True, text=True, check=True
        )
        expect(approval.group(1) in listed.stdout, "warden approvals list shows it", listed.stdout)
        subprocess.run(
            [args.warden, "approvals", "approve", approval.group(1), "--state-dir", args.state],
            capture_output=True,
            text=True,
            check=True,
        )
        result = await call(alice, "fs_write", arguments)
        expect(not result.is_error, "the retry after approval runs", result)
        result = await call(alice, "fs_write", arguments)
        expect(envelope(result).get("domain_code") == "approval_pending", "an approval is used once", envelope(result))


async def scenario_progress_logging_cancel(args, server) -> None:
    logs: list = []
    plugin_said = asyncio.Event()

    async def on_log(params) -> None:
        logs.append(params)
        if "plugin says hi" in json.dumps(params.data):
            plugin_said.set()

    async with connect(args, "alice", server, args.config, logging_callback=on_log) as alice:
        if args.protocol == "legacy":
            await alice.set_logging_level("info")
        progress: list = []

        async def on_progress(done, total, message) -> None:
            progress.append((done, total, message))

        arguments = {"action": "steps", "steps": 3, "ms": 20}
        result = await call(alice, "probe_run", arguments, progress_callback=on_progress)
        expect(not result.is_error, "a call with progress runs", result)
        expect([p[0] for p in progress] == [1, 2, 3] and progress[-1][1] == 3, "progress notifications arrive in order", progress)

        if args.protocol == "legacy":
            result = await call(alice, "probe_run", {"action": "log", "message": "plugin says hi"})
            await asyncio.wait_for(plugin_said.wait(), 10)
            messages = [json.dumps(l.data) for l in logs]
            expect(any("plugin says hi" in m for m in messages), "plugin log lines reach the client", messages)
            expect(any("probe_run" in m and "Allow" in m for m in messages), "host log lines reach the client", messages)

        late: list = []
        running = asyncio.Event()

        async def on_late(done, total, message) -> None:
            late.append(time.time())
            running.set()

        task = asyncio.create_task(call(alice, "probe_run", {"action": "steps", "steps": 400, "ms": 50}, progress_callback=on_late))
        await asyncio.wait_for(running.wait(), 30)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        cancelled_at = time.time()
        # Absence takes time to see: a call still running would report
        # progress every 50 ms within this second.
        await asyncio.sleep(1.0)
        result = await call(alice, "probe_run", {"action": "noop"})
        expect(not result.is_error, "the server serves on after a cancellation", result)
        expect(all(t <= cancelled_at + 0.5 for t in late), "a cancelled call stops running", [t - cancelled_at for t in late])


async def scenario_disclosure(args, server) -> None:
    changed = asyncio.Event()

    async def on_message(message) -> None:
        if isinstance(message, types.ServerNotification) and isinstance(message, types.ToolListChangedNotification):
            changed.set()
        root = getattr(message, "root", message)
        if isinstance(root, types.ToolListChangedNotification):
            changed.set()

    async with connect(args, "alice", server, args.disclosure_config, message_handler=on_message) as alice:
        names = [t.name for t in (await alice.list_tools()).tools]
        expect(names == ["list_tools", "load_tool", "load_tool_resource", "request_capability"],
               "disclosure lists only the discovery tools and request_capability", names)
        listing = await call(alice, "list_tools", {})
        entries = listing.structured_content["tools"]
        expect(any(e["name"] == "fs_read" and e["cost_tier"] for e in entries), "list_tools returns L1 entries", entries)
        if args.protocol == "modern":
            async with listen(alice, tools_list_changed=True) as subscription:
                loaded = await call(alice, "load_tool", {"name": "fs_read"})
                expect("input_schema" in loaded.structured_content["tool"], "load_tool returns the L2 body", loaded)
                event = await asyncio.wait_for(subscription.__anext__(), 10)
                expect(event is not None, "list_changed arrives on the listen stream", event)
        else:
            loaded = await call(alice, "load_tool", {"name": "fs_read"})
            expect("input_schema" in loaded.structured_content["tool"], "load_tool returns the L2 body", loaded)
            await asyncio.wait_for(changed.wait(), 10)
            expect(True, "tools/list_changed arrives after load_tool")
        names = [t.name for t in (await alice.list_tools()).tools]
        expect("fs_read" in names, "a loaded tool joins the list", names)


async def scenario_plugins(args, server) -> None:
    """`warden plugin install` and `remove` against the running server: the
    client hears tools/list_changed each time and its list follows."""
    changed = asyncio.Queue()

    async def on_message(message) -> None:
        root = getattr(message, "root", message)
        if isinstance(root, types.ToolListChangedNotification):
            changed.put_nowait(True)

    def plugin(*argv: str) -> str:
        done = subprocess.run(
            [args.warden, "plugin", *argv, "--config", args.config, "--state-dir", args.state],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise Check(f"warden plugin {argv[0]} failed: {done.stdout}{done.stderr}")
        return done.stdout

    async with connect(args, "alice", server, args.config, message_handler=on_message) as alice:
        names = [t.name for t in (await alice.list_tools()).tools]
        expect("hello_count_lines" not in names, "the extra plugin is not loaded yet", names)

        async def heard(action: str, *argv: str) -> None:
            if args.protocol == "modern":
                async with listen(alice, tools_list_changed=True) as subscription:
                    await asyncio.to_thread(plugin, *argv)
                    event = await asyncio.wait_for(subscription.__anext__(), 10)
                    expect(event is not None, f"list_changed arrives on the listen stream after {action}", event)
            else:
                await asyncio.to_thread(plugin, *argv)
                await asyncio.wait_for(changed.get(), 10)
                expect(True, f"tools/list_changed arrives after {action}")

        await heard("install", "install", args.extra_plugin)
        names = [t.name for t in (await alice.list_tools()).tools]
        expect("hello_count_lines" in names, "the installed plugin's tool is listed", names)
        await heard("remove", "remove", "hello", "--actor", "mcp-test", "--confirm", "--reason", "the test is done with it")
        names = [t.name for t in (await alice.list_tools()).tools]
        expect("hello_count_lines" not in names, "the removed plugin's tool is gone", names)


async def scenario_http_checks(args, server) -> None:
    async with httpx2.AsyncClient(timeout=10) as http:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        r = await http.post(server.url, json=body, headers=headers)
        expect(r.status_code == 401 and r.content == b"", "no token: 401 and nothing else", (r.status_code, r.content))
        r = await http.post(server.url, json=body, headers={**headers, "Authorization": "Bearer wrong-token-0123456789"})
        expect(r.status_code == 401, "a wrong token: 401", r.status_code)
        r = await http.post(
            server.url,
            json=body,
            headers={**headers, "Authorization": f"Bearer {TOKENS['alice']}", "Origin": "http://evil.example"},
        )
        expect(r.status_code == 403, "a foreign Origin is refused", (r.status_code, r.text))
        r = await http.post(
            server.url,
            json=body,
            headers={**headers, "Authorization": f"Bearer {TOKENS['alice']}", "Host": "evil.example"},
        )
        expect(r.status_code in (403, 421), "a foreign Host is refused", (r.status_code, r.text))



ALLOW_ONCE = {"action": "accept", "content": {"decision": "allow_once"}}


def refused(result, what: str) -> None:
    env = envelope(result) if isinstance(result, types.CallToolResult) else {}
    expect(
        isinstance(result, types.CallToolResult) and result.is_error and env.get("domain_code") == "approval_response_refused",
        what,
        result,
    )


def pending_id(result, what: str) -> str:
    env = envelope(result) if isinstance(result, types.CallToolResult) else {}
    expect(env.get("domain_code") == "approval_pending", what, result)
    found = re.search(r"approval (ap-\d+)", env.get("message", ""))
    expect(found is not None, "the pending result names its approval", env)
    return found.group(1)


def waiting(args, approval: str) -> bool:
    listed = subprocess.run(
        [args.warden, "approvals", "list", "--state-dir", args.state_for_attacks], capture_output=True, text=True, check=True
    )
    return approval in listed.stdout


def in_workspace(args, name: str) -> bool:
    return os.path.exists(os.path.join(args.workspace, name))


async def attack_answer_own_pending_ask(args, server) -> None:
    """With `[serve] elicitation = false`, the agent answers its own pending
    ask by sending the approval id as request state with an input response."""
    async with connect(args, "alice", server, args.operator_config, elicitation_callback=elicitation_callback) as alice:
        arguments = {"path": "self-approved.txt", "content": "the agent approved this itself"}
        approval = pending_id(await call(alice, "fs_write", arguments), "with elicitation off an ask waits for the operator")
        result = await call(alice, "fs_write", arguments, input_responses={"approval": ALLOW_ONCE}, request_state=approval)
        refused(result, "an input response from the agent's own connection is refused")
        expect(not in_workspace(args, "self-approved.txt"), "the self-approved write did not run")
        expect(waiting(args, approval), "the ask still waits for the operator", approval)


async def attack_always_allow_everything(args, server) -> None:
    """Elicitation on, but the client never declared it: the agent answers its
    pending ask with always_allow and the rule `*`."""
    async with connect(args, "alice", server, args.config) as alice:
        arguments = {"path": "always.txt", "content": "x"}
        approval = pending_id(await call(alice, "fs_write", arguments), "a client without elicitation gets a pending ask")
        everything = {"action": "accept", "content": {"decision": "always_allow", "rule": "*"}}
        result = await call(alice, "fs_write", arguments, input_responses={"approval": everything}, request_state=approval)
        refused(result, "always_allow `*` from the agent's connection is refused")
        expect(not in_workspace(args, "always.txt"), "the write did not run")
        result = await call(alice, "fs_delete", {"path": "hello.txt"})
        expect(envelope(result).get("domain_code") == "approval_pending", "fs_delete still asks: no rule was added", envelope(result))
        expect(in_workspace(args, "hello.txt"), "hello.txt is still there")


async def attack_grant_own_capability(args, server) -> None:
    """A request_capability ask answered through another call's input
    responses; a level change asked for."""
    async with connect(args, "alice", server, args.config) as alice:
        ask = {"capability": "category:web", "justification": "exfiltrate nothing, honestly", "ttl": 600}
        approval = pending_id(await call(alice, "request_capability", ask), "a high-risk capability request waits")
        result = await call(alice, "fs_write", {"path": "cap.txt", "content": "x"},
                            input_responses={"approval": ALLOW_ONCE}, request_state=approval)
        refused(result, "the capability ask cannot be answered through another call")
        again = await call(alice, "request_capability", ask)
        expect(pending_id(again, "the capability request still waits") == approval, "under the same id", envelope(again))
        grants = subprocess.run(
            [args.warden, "grants", "list", "--state-dir", args.state_for_attacks], capture_output=True, text=True, check=True
        )
        expect(json.loads(grants.stdout) == [], "no grant was issued", grants.stdout)
        level = await call(alice, "request_capability", {"capability": "level:elevated", "justification": "more", "ttl": 60})
        expect(envelope(level).get("domain_code") == "grant_not_possible", "a level change is refused when asked", envelope(level))


async def attack_forged_request_state(args, server) -> None:
    """2026-07-28 with elicitation: the state the server sent, altered, bare,
    spent on another call, and replayed after use."""
    if args.protocol != "modern":
        return
    async with connect(args, "alice", server, args.config, elicitation_callback=elicitation_callback) as alice:
        a = {"path": "sealed-a.txt", "content": "a"}
        b = {"path": "sealed-b.txt", "content": "b"}
        ra = await call(alice, "fs_write", a)
        rb = await call(alice, "fs_write", b)
        expect(isinstance(ra, types.InputRequiredResult) and isinstance(rb, types.InputRequiredResult),
               "both asks come back as input-required", (ra, rb))
        state = ra.request_state or ""
        expect(not state.startswith("ap-"), "the request state is sealed, not a bare approval id", state)
        answer = {"approval": ALLOW_ONCE}
        flip = "A" if state[-3] != "A" else "B"
        altered = state[:-3] + flip + state[-2:]
        refused(await call(alice, "fs_write", a, input_responses=answer, request_state=altered), "an altered state is refused")
        bare = re.search(r"ap-\d+", json.dumps(ra.model_dump(mode="json")))
        refused(await call(alice, "fs_write", a, input_responses=answer, request_state=bare.group(0) if bare else "ap-1"),
                "a bare approval id is refused")
        refused(await call(alice, "fs_write", b, input_responses=answer, request_state=state), "a's state is refused for b")
        expect(not in_workspace(args, "sealed-b.txt"), "b did not run")
        done = await call(alice, "fs_write", a, input_responses=answer, request_state=state)
        expect(isinstance(done, types.CallToolResult) and not done.is_error, "the genuine state with the person's answer runs", done)
        os.remove(os.path.join(args.workspace, "sealed-a.txt"))
        refused(await call(alice, "fs_write", a, input_responses=answer, request_state=state), "a used state cannot be replayed")
        expect(not in_workspace(args, "sealed-a.txt"), "the replay did not run")


async def scenario_client_rule_bounds(args, server) -> None:
    """The person behind the client answers "always allow": a rule broader
    than the call is refused; the prefilled exact rule is added."""
    content: dict = {}

    async def always(context, params):
        return types.ElicitResult(action="accept", content=dict(content))

    async def answer(name, arguments, result):
        if isinstance(result, types.InputRequiredResult):
            responses = {"approval": {"action": "accept", "content": dict(content)}}
            return await call(alice, name, arguments, input_responses=responses, request_state=result.request_state)
        return result

    async with connect(args, "alice", server, args.config, elicitation_callback=always) as alice:
        arguments = {"path": "bounded.txt", "content": "x"}
        for broad in ["*", "fs_*", "fs_write(/**)", "fs_delete(//workspace/bounded.txt)"]:
            content.clear()
            content.update({"decision": "always_allow", "rule": broad})
            result = await answer("fs_write", arguments, await call(alice, "fs_write", arguments))
            refused(result, f"always_allow `{broad}` from the client is refused")
            expect(not in_workspace(args, "bounded.txt"), f"the call answered with `{broad}` did not run")
        content.clear()
        content.update({"decision": "always_allow"})
        result = await answer("fs_write", arguments, await call(alice, "fs_write", arguments))
        expect(isinstance(result, types.CallToolResult) and not result.is_error, "always_allow of the exact call runs", result)
        os.remove(os.path.join(args.workspace, "bounded.txt"))
        content.clear()
        result = await call(alice, "fs_write", arguments)
        expect(isinstance(result, types.CallToolResult) and not result.is_error, "the exact rule allows the same call again", result)
        result = await call(alice, "fs_delete", {"path": "bounded.txt"})
        expect(not isinstance(result, types.CallToolResult) or result.is_error, "the exact rule allows nothing else", result)


async def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--warden", required=True)
    p.add_argument("--config", required=True)
    p.add_argument("--disclosure-config", required=True)
    p.add_argument("--operator-config", required=True)
    p.add_argument("--workspace", required=True)
    p.add_argument("--state", required=True)
    p.add_argument("--extra-plugin", required=True)
    p.add_argument("--transport", choices=["stdio", "http"], required=True)
    p.add_argument("--protocol", choices=["legacy", "modern"], required=True)
    args = p.parse_args()
    servers = []
    try:
        server = disclosure_server = operator_server = None
        args.state_for_attacks = args.state
        if args.transport == "http":
            server = Server(args.warden, args.config, args.state)
            disclosure_server = Server(args.warden, args.disclosure_config, args.state + "-disclosure")
            servers = [server, disclosure_server]
            await scenario_http_checks(args, server)
        await attack_always_allow_everything(args, server)
        await attack_grant_own_capability(args, server)
        await attack_forged_request_state(args, server)
        await scenario_client_rule_bounds(args, server)
        if args.transport == "http":
            args.state_for_attacks = args.state + "-operator"
            operator_server = Server(args.warden, args.operator_config, args.state_for_attacks)
            servers.append(operator_server)
        else:
            # stdio servers share the state directory, one at a time.
            args.state_for_attacks = args.state
        await attack_answer_own_pending_ask(args, operator_server)
        args.state_for_attacks = args.state
        await scenario_lists_and_calls(args, server)
        await scenario_elicitation(args, server)
        await scenario_pending_approval(args, server)
        await scenario_progress_logging_cancel(args, server)
        await scenario_disclosure(args, disclosure_server)
        await scenario_plugins(args, server)
    except Check as failed:
        print(f"FAILED - {failed}", flush=True)
        return 1
    except BaseExceptionGroup as group:
        # A check that failed inside a session's task group.
        if not print_failures(group):
            raise
        return 1
    finally:
        for s in servers:
            s.stop()
    print("all checks passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
