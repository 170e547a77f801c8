"""Drives a `warden serve --http` with `[serve.oauth]` as a remote OAuth
client would: discovery (RFC 9728 metadata, the 401 challenge), then the
official MCP Python SDK with access tokens from the test issuer
(`host/cli/tests/support/issuer.rs`).

Usage: oauth_client.py --url URL --issuer ISS --tokens FILE

FILE holds tokens by name: `alice` (valid, client `chat-client`), `bob`
(valid, subject `bob`), `mallory` (valid, client `chat-client`, named by a
principal rule), `wrong_aud`, `wrong_iss`, `expired`,
`unknown_key`, `no_scope`, `static` (a `[[serve.tokens]]` token),
`operator` (subject `dana`, the operators' scope), `operator_expired` and
`operator_wrong_aud` (the same, expired or for another resource).
Every check raises on failure; the script exits non-zero naming it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from urllib.parse import urlsplit

import httpx2

from bearer import bearer_session, envelope
from checks import Check, expect, print_failures

SCOPE = "mcp:tools"


def challenge(header: str) -> dict[str, str]:
    """The parameters of a `Bearer` challenge (RFC 6750 §3)."""
    expect(header.startswith("Bearer "), "the challenge is a Bearer challenge", header)
    return dict(re.findall(r'(\w+)="([^"]*)"', header))


async def discovery(args, http: httpx2.AsyncClient) -> None:
    parts = urlsplit(args.url)
    origin = f"{parts.scheme}://{parts.netloc}"
    path_specific = f"{origin}/.well-known/oauth-protected-resource{parts.path}"
    # RFC 9728 §2 fields, at the path-specific and the root well-known URL.
    for url in (path_specific, f"{origin}/.well-known/oauth-protected-resource"):
        r = await http.get(url)
        expect(r.status_code == 200, f"metadata is served at {url}", r.status_code)
        expect(r.headers.get("content-type", "").startswith("application/json"), "metadata is JSON", r.headers)
        meta = r.json()
        # §3.3: `resource` must be the resource the client asked about.
        expect(meta.get("resource") == args.url, "metadata names this resource", meta)
        expect(meta.get("authorization_servers") == [args.issuer], "metadata names the issuer", meta)
        expect(SCOPE in meta.get("scopes_supported", []), "metadata lists the required scope", meta)
        expect(meta.get("bearer_methods_supported") == ["header"], "tokens go in the header", meta)

    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    r = await http.post(args.url, json=body, headers=headers)
    expect(r.status_code == 401, "no token: 401", r.status_code)
    params = challenge(r.headers.get("www-authenticate", ""))
    expect(params.get("resource_metadata") == path_specific, "the 401 points at the metadata", params)
    expect(params.get("scope") == SCOPE, "the 401 names the scope", params)
    expect("error" not in params, "no error code without a token", params)
    r = await http.get(params["resource_metadata"])
    expect(r.status_code == 200 and r.json()["resource"] == args.url, "the pointed-at metadata is there", r.text)


async def refusals(args, http: httpx2.AsyncClient) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    for name, status, error in [
        ("wrong_aud", 401, "invalid_token"),
        ("wrong_iss", 401, "invalid_token"),
        ("expired", 401, "invalid_token"),
        ("unknown_key", 401, "invalid_token"),
        ("no_scope", 403, "insufficient_scope"),
    ]:
        r = await http.post(args.url, json=body, headers={**headers, "Authorization": f"Bearer {args.tokens[name]}"})
        params = challenge(r.headers.get("www-authenticate", ""))
        expect(r.status_code == status and params.get("error") == error,
               f"{name}: {status} {error}", (r.status_code, params))
        expect(params.get("scope") == SCOPE and params.get("resource_metadata"),
               f"{name}: the challenge names the scope and the metadata", params)


async def console_signin(args, http: httpx2.AsyncClient) -> None:
    """An operator signs in to the console with an access token; an
    agent's valid token, and bad operator tokens, do not."""
    base = args.url.removesuffix("/mcp")

    async def sign_in(name: str, actor: str = "whoever") -> httpx2.Response:
        return await http.post(f"{base}/console/login", data={"actor": actor, "token": args.tokens[name]})

    for name in ("alice", "bob", "operator_expired", "operator_wrong_aud"):
        r = await sign_in(name)
        expect(r.status_code == 401 and "set-cookie" not in r.headers,
               f"{name}'s token does not sign in to the console", (r.status_code, r.text[-300:]))
    r = await sign_in("alice")
    expect("not an operator" in r.text, "the refusal says why", r.text[-300:])
    r = await sign_in("operator", actor="someone else")
    cookie = r.headers.get("set-cookie", "")
    expect(r.status_code == 303 and cookie.startswith("warden_console=") and "HttpOnly" in cookie,
           "an operator's access token signs in", (r.status_code, r.headers))
    session = cookie.split(";")[0]
    r = await http.get(f"{base}/console", headers={"Cookie": session})
    expect(r.status_code == 200 and ">dana<" in r.text and "someone else" not in r.text,
           "signed in as the token's subject, not the name typed", r.text[:600])
    r = await http.post(args.url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
                        headers={"Accept": "application/json, text/event-stream",
                                 "Authorization": f"Bearer {args.tokens['operator']}"})
    expect(r.status_code == 403, "an operator's token is not an agent's", r.status_code)


def connect(args, token: str):
    return bearer_session(args.url, token)


async def sessions(args) -> None:
    async with connect(args, args.tokens["alice"]) as alice:
        result = await alice.initialize()
        expect(not result.protocol_version.startswith("2026"), "an OAuth client's initialize session", result.protocol_version)
        names = {t.name for t in (await alice.list_tools()).tools}
        expect({"fs_read", "fs_write"} <= names, "alice's principal sees her agent's tools", sorted(names))
        result = await alice.call_tool("fs_read", {"path": "hello.txt"})
        expect(not result.is_error and "hello from the workspace" in json.dumps(result.structured_content),
               "a call with an OAuth token runs", result)
        result = await alice.call_tool("fs_write", {"path": "by-alice.txt", "content": "hi"})
        expect(not result.is_error, "alice's agent may write", result)

    async with connect(args, args.tokens["alice"]) as alice:
        await alice.discover()
        expect(alice.protocol_version == "2026-07-28", "an OAuth client's 2026-07-28 discovery", alice.protocol_version)
        result = await alice.call_tool("fs_read", {"path": "hello.txt"})
        expect(not result.is_error, "a sessionless call with an OAuth token runs", result)

    async with connect(args, args.tokens["bob"]) as bob:
        await bob.initialize()
        result = await bob.call_tool("fs_write", {"path": "by-bob.txt", "content": "hi"})
        env = envelope(result)
        expect(result.is_error and env.get("error_type") == "PermissionDenied",
               "the rule for bob's principal denies his write", env)
        expect("fs_write" in env.get("message", ""), "the denial names the rule", env)

    async with connect(args, args.tokens["mallory"]) as mallory:
        await mallory.initialize()
        result = await mallory.call_tool("fs_read", {"path": "hello.txt"})
        expect(not result.is_error, "mallory's client maps to alice's agent and may read", result)
        result = await mallory.call_tool("fs_write", {"path": "by-mallory.txt", "content": "hi"})
        env = envelope(result)
        expect(result.is_error and "for this principal" in env.get("message", ""),
               "a rule naming mallory's subject denies her write, though alice's agent may write", env)

    async with connect(args, args.tokens["static"]) as ci:
        await ci.initialize()
        names = {t.name for t in (await ci.list_tools()).tools}
        expect("fs_read" in names, "a static token works beside OAuth", sorted(names))


async def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--issuer", required=True)
    parser.add_argument("--tokens", required=True)
    args = parser.parse_args()
    with open(args.tokens) as f:
        args.tokens = json.load(f)
    try:
        # A fresh connection per request: a refused request's body is left
        # unread, after which the server closes that connection, and a
        # client reusing it at that moment sees a disconnect.
        limits = httpx2.Limits(max_keepalive_connections=0)
        async with httpx2.AsyncClient(timeout=10, limits=limits) as http:
            await discovery(args, http)
            await refusals(args, http)
            await console_signin(args, http)
        await sessions(args)
    except Check as failed:
        print(f"FAILED - {failed}", flush=True)
        return 1
    except BaseExceptionGroup as group:
        # A check that failed inside a session's task group.
        if not print_failures(group):
            raise
        return 1
    print("all checks passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
