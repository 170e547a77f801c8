"""The toolsmith's sampling author through the official MCP Python SDK.

Usage: sampling_client.py --warden BIN --config FILE --state DIR

The config serves Streamable HTTP with a token for `alice`, sets
`[toolsmith] author-sampling = true` with a gap rule of 3 requests from
2 sessions, and maps `weather:*`, `pdf:*` and `map:*` to categories.
Unknown tools asked for make capability gaps; the call that makes one
recurring has its client's model asked for a blueprint:

- on an older protocol revision, with `sampling/createMessage` before the
  call is answered (the model's answer is kept as a pending blueprint);
- on 2026-07-28, with an input-required result the SDK's own driver
  fulfils through the same sampling callback and retries;
- never when the client declared no sampling.

As an attacker, alice passes off her own text as her model's answer: with
a made-up request state, with the genuine state on other arguments, and
by replaying the genuine state once it was answered. Each is refused and
keeps nothing. Every check raises on failure; the script exits non-zero
with the failing check's name.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys

import mcp.types as types
from mcp.client._input_required import run_input_required_driver
from mcp.client.session import ClientRequestContext

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bridge_client import session_of  # noqa: E402
from checks import Check, expect, print_failures  # noqa: E402
from client import Server, envelope  # noqa: E402


def blueprint(capability: str) -> dict:
    """What a model writes for `capability`: a blueprint with Rust source."""
    return {
        "capability": capability,
        "title": "Answers " + capability,
        "description": "Gives what agents asked for as " + capability + ".",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
        "output_schema": {"type": "object"},
        "body": {"rust": {"lib_rs": "// written by the client's model\n"}},
        "cases": [
            {"name": "one", "args": {"city": "Oslo"}, "expect": {"ok": {}}},
            {"name": "two", "args": {"city": "Bergen"}, "expect": {"ok": {}}},
            {"name": "bad", "args": {"city": ""}, "expect": {"error": {}}},
        ],
        "rationale": "Agents asked for it in several sessions.",
        "witness": {"city": "Oslo"},
    }


class Model:
    """The model behind a client: it answers what it is asked with a
    blueprint for the capability the request names, in a code fence."""

    def __init__(self) -> None:
        self.asked: list[types.CreateMessageRequestParams] = []

    async def __call__(self, _context, params: types.CreateMessageRequestParams):
        self.asked.append(params)
        request = "".join(m.content.text for m in params.messages if isinstance(m.content, types.TextContent))
        capability = json.loads(request[request.index("{") :])["gap"]["signature"]
        text = "Here is the blueprint:\n```json\n" + json.dumps(blueprint(capability)) + "\n```\n"
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text=text), model="test-model-1"
        )


def warden(args, *argv: str) -> dict:
    done = subprocess.run(
        [args.warden, "toolsmith", *argv, "--config", args.config, "--state-dir", args.state],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if done.returncode != 0:
        raise Check(f"warden toolsmith {' '.join(argv)} failed: {done.stdout}{done.stderr}")
    return json.loads(done.stdout)


def kept(args) -> list[dict]:
    return warden(args, "blueprints")["blueprints"]


def no_tool(result, what: str) -> None:
    """The call's own answer: the tool does not exist."""
    expect(isinstance(result, types.CallToolResult) and result.is_error, what, result)
    expect("no tool named" in json.dumps(envelope(result)), what + " (no such tool)", envelope(result))


def refused(result, what: str, says: str) -> None:
    expect(isinstance(result, types.CallToolResult) and result.is_error, what, result)
    text = "".join(c.text for c in result.content if isinstance(c, types.TextContent))
    expect(says in text, f"{what}: says `{says}`", text)


def asked_about(model: Model, capability: str, tool: str) -> None:
    expect(len(model.asked) == 1, f"the model was asked once about {capability}", len(model.asked))
    params = model.asked[0]
    expect("blueprint" in (params.system_prompt or ""), "the system prompt says what a blueprint is", params.system_prompt)
    request = params.messages[0].content.text
    expect(capability in request and tool in request, f"the request names {capability} and {tool}", request)
    expect(params.max_tokens > 0, "the request bounds the tokens", params.max_tokens)


async def legacy_client_with_sampling(args, server: Server) -> None:
    """Older revision: the third request, from a second session, makes
    `weather:forecast` recurring; that session's model is asked before its
    call is answered, and its blueprint waits for a person."""
    first_model, second_model = Model(), Model()
    async with session_of(server, "alice", sampling_callback=first_model) as first:
        for _ in range(2):
            no_tool(await first.call_tool("weather_forecast", {"city": "Oslo"}), "not recurring yet")
    expect(first_model.asked == [], "nobody is asked before the gap recurs", first_model.asked)
    async with session_of(server, "alice", sampling_callback=second_model) as second:
        no_tool(await second.call_tool("weather_forecast", {"city": "Bergen"}), "the recurring call's own answer")
        asked_about(second_model, "weather:forecast", "gen_weather_forecast")
        no_tool(await second.call_tool("weather_forecast", {"city": "Bergen"}), "a later call")
        expect(len(second_model.asked) == 1, "a gap is asked about once", len(second_model.asked))
    blueprints = kept(args)
    expect(len(blueprints) == 1, "one blueprint kept", blueprints)
    b = blueprints[0]
    expect(b["state"] == "pending" and b["author"] == "sampling:alice", "pending, written by alice's model", b)
    expect(b["name"] == "gen_weather_forecast", "named by the host", b)


async def clients_without_sampling(args, server: Server) -> None:
    """A client that declared no sampling is never asked: on 2026-07-28
    the call that makes `pdf:render` recurring gets its own answer."""
    async with session_of(server, "alice") as plain:
        for _ in range(2):
            no_tool(await plain.call_tool("pdf_render", {"city": "x"}), "a call from a client without sampling")
    async with session_of(server, "alice", modern=True) as plain:
        result = await plain.call_tool("pdf_render", {"city": "y"}, allow_input_required=True)
        no_tool(result, "the recurring call from a client without sampling is answered, not asked")
    recurring = [g["signature"] for g in warden(args, "gaps", "--recurring")["gaps"]]
    expect("pdf:render" in recurring, "that call made the gap recurring", recurring)
    expect(len(kept(args)) == 1, "nothing kept for a client that cannot sample", kept(args))


async def modern_client(args, server: Server) -> None:
    """2026-07-28: the recurring call's answer asks the model; forged,
    misapplied and replayed answers are refused, the SDK's driver answers."""
    async with session_of(server, "alice") as plain:
        for _ in range(2):
            no_tool(await plain.call_tool("map_route", {"city": "Oslo"}), "not recurring yet")
    model = Model()
    arguments = {"city": "Tromsø"}
    async with session_of(server, "alice", modern=True, sampling_callback=model) as modern:
        first = await modern.call_tool("map_route", arguments, allow_input_required=True)
        expect(isinstance(first, types.InputRequiredResult), "the recurring call asks the model", first)
        requests = first.input_requests or {}
        expect(list(requests) == ["blueprint"], "one request, keyed `blueprint`", requests)
        expect(isinstance(requests["blueprint"], types.CreateMessageRequest), "a sampling request", requests)
        expect(model.asked == [], "the client's callback has not run yet", model.asked)

        # alice writes the answer herself, for a question she was not asked.
        own = types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=json.dumps(blueprint("map:route"))),
            model="alice-herself",
        ).model_dump(by_alias=True, mode="json", exclude_none=True)
        answer = {"blueprint": own}
        refused(
            await modern.call_tool("map_route", arguments, input_responses=answer, request_state="made-up",
                                   allow_input_required=True),
            "a made-up request state is refused", "request state",
        )
        refused(
            await modern.call_tool("map_route", {"city": "Oslo"}, input_responses=answer,
                                   request_state=first.request_state, allow_input_required=True),
            "the state on other arguments is refused", "request state",
        )
        refused(
            await modern.call_tool("weather_forecast", arguments, input_responses=answer,
                                   request_state=first.request_state, allow_input_required=True),
            "the state on another tool is refused", "request state",
        )
        expect(len(kept(args)) == 1, "nothing kept from refused answers", kept(args))

        # The SDK's own multi-round-trip driver, through the sampling
        # callback, as the SDK's `Client` drives it.
        async def dispatch(key: str, request: types.InputRequest):
            meta = request.params.meta if request.params else None
            ctx = ClientRequestContext(session=modern, request_id=key, meta=meta)
            return await modern.dispatch_input_request(ctx, request)

        async def retry(responses, state):
            nonlocal last
            last = (responses, state)
            return await modern.call_tool(
                "map_route", arguments, input_responses=responses, request_state=state, allow_input_required=True
            )

        last: tuple = (None, None)
        done = await run_input_required_driver(first, dispatch=dispatch, retry=retry)
        no_tool(done, "after the model answered, the call's own answer")
        asked_about(model, "map:route", "gen_map_route")
        blueprints = [b for b in kept(args) if b["name"] == "gen_map_route"]
        expect(len(blueprints) == 1, "the model's blueprint kept", kept(args))
        expect(blueprints[0]["state"] == "pending" and blueprints[0]["author"] == "sampling:alice", "pending", blueprints)

        # The genuine answer, sent again.
        responses, state = last
        refused(
            await modern.call_tool("map_route", arguments, input_responses=responses, request_state=state,
                                   allow_input_required=True),
            "a replayed answer is refused", "was not kept",
        )
        expect(len(kept(args)) == 2, "the replay kept nothing", kept(args))


async def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--warden", required=True)
    p.add_argument("--config", required=True)
    p.add_argument("--state", required=True)
    args = p.parse_args()
    server = Server(args.warden, args.config, args.state)
    try:
        await legacy_client_with_sampling(args, server)
        await clients_without_sampling(args, server)
        await modern_client(args, server)
    except Check as failed:
        print(f"FAILED - {failed}", flush=True)
        return 1
    except BaseExceptionGroup as group:
        # A check that failed inside a session's task group.
        if not print_failures(group):
            raise
        return 1
    finally:
        server.stop()
    print("all checks passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
