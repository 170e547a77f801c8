"""The operator console in a real headless Chromium, against a real
`warden serve --http` and a real MCP client (the official Python SDK):

- an agent's write waits for an operator; a person signs in to the
  console, sees it with its full arguments and approves it; the agent's
  retry runs;
- a second ask appears on the open page without a reload; its hostile
  arguments are shown as text and run no script; the person denies it
  with a reason, which the agent's retry carries;
- state changes without the session cookie, or from the signed-in
  browser without the CSRF token, are refused and change nothing;
- the agent's trust history is listed;
- a grant the agent writes under is listed with its time left; revoked
  in the console (a revoke without confirmation and reason is refused),
  the agent's next write waits for a person again;
- the audit page filters by agent and decision and verifies the chain;
  the plugins page lists the loaded plugin, installs a signed component
  and removes it (with a reason and the confirmation); the toolsmith page
  approves a pending blueprint;
- every page carries the Content-Security-Policy; signing out ends the
  session;
- URL-mode elicitation: a 2026-07-28 client that takes links is given a
  link to its pending ask in the console instead of a form; whatever it
  sends back with that link's state answers nothing; the link leads a
  signed-out person through the sign-in to the ask (and nowhere else);
  approved there, the client's retry runs; a person who declines the
  link gets the pending result.

Screenshots of each page go to --shots. Usage:
console_browser.py --url BASE --token AGENT_TOKEN --admin ADMIN_TOKEN
                   --chromium PATH --workspace DIR --shots DIR --grant ID
                   --component PATH --blueprint ID

ID is a grant of `tool:fs_write` under `granted/` the test issued to the
agent; the console revokes it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import sys
from pathlib import Path

import httpx2
import mcp.types as types

from bearer import bearer_session, envelope
from cdp import Browser
from checks import Check, expect, print_failures


@contextlib.asynccontextmanager
async def connect(url: str, token: str):
    async with bearer_session(url, token) as session:
        await session.initialize()
        yield session


def pending_id(result: types.CallToolResult, what: str) -> str:
    env = envelope(result)
    expect(result.is_error and env.get("domain_code") == "approval_pending", what, env)
    found = re.search(r"approval (ap-\d+)", env.get("message", ""))
    expect(found is not None, "the pending result names its approval", env)
    return found.group(1)


@contextlib.asynccontextmanager
async def linked(url: str, token: str):
    """A 2026-07-28 session whose client takes elicitation, forms and links
    (as the SDK declares it): an operator's asks must come as links, so a
    form sent to it fails the test."""
    async def no_forms(_context, params):
        raise Check(f"the server sent a form to a client whose asks are an operator's: {params}")

    async with bearer_session(url, token, elicitation_callback=no_forms) as session:
        await session.discover()
        expect(session.protocol_version == "2026-07-28", "the linked client speaks 2026-07-28", session.protocol_version)
        yield session


def link_of(result, base: str, what: str) -> tuple[str, str, str]:
    """The approval id, console URL and sealed state of an input-required
    result that links to the console."""
    expect(isinstance(result, types.InputRequiredResult), what, result)
    requests = result.input_requests or {}
    expect(list(requests) == ["approval"], "one input request, the approval", requests)
    params = requests["approval"].params
    expect(params.mode == "url", "it is a URL-mode elicitation, not a form", params)
    found = re.fullmatch(re.escape(base) + r"/console/approvals/(ap-\d+)", params.url)
    expect(found is not None, "the link points at the ask in this server's console", params.url)
    expect(found.group(1) in params.message, "the message names the approval", params.message)
    expect(bool(result.request_state), "with a sealed request state", result)
    return found.group(1), params.url, result.request_state


def article(approval: str) -> str:
    return f"document.querySelector('article[data-id=\"{approval}\"]')"


async def main(args) -> None:
    base = args.url.rstrip("/")
    shots = Path(args.shots)
    workspace = Path(args.workspace)
    async with connect(base + "/mcp", args.token) as agent, Browser(args.chromium) as page, \
            httpx2.AsyncClient(timeout=30) as http:
        written = {"path": "approved.txt", "content": "written after a person said yes"}
        first = pending_id(await agent.call_tool("fs_write", written), "the agent's write waits for an operator")

        # Without the session cookie nothing changes.
        r = await http.post(f"{base}/console/approvals/{first}", data={"decision": "approve", "csrf": "guess"})
        expect(r.status_code == 403, "a cookie-less answer is refused", r.status_code)
        r = await http.get(f"{base}/console")
        expect(r.status_code == 303 and r.headers.get("location") == "/console/login",
               "the console sends a stranger to sign in", (r.status_code, r.headers))
        r = await http.get(f"{base}/console/login")
        csp = r.headers.get("content-security-policy", "")
        expect("script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp,
               "the console's pages carry a strict CSP", csp)

        # Sign in.
        await page.goto(base + "/console")
        expect((await page.eval("location.pathname")) == "/console/login", "the browser lands on the sign-in page")
        await page.screenshot(shots / "signin.png")
        await page.eval("document.getElementById('actor').value = 'dana';"
                        f"document.getElementById('token').value = {json.dumps(args.admin)}; true")
        await page.submit("document.getElementById('signin').click()")
        expect((await page.eval("location.pathname")) == "/console", "signed in, the browser shows the approvals")
        expect(await page.eval(f"{article(first)} !== null"), "the waiting write is listed", first)
        shown = await page.eval(f"{article(first)}.textContent")
        expect("written after a person said yes" in shown and "approved.txt" in shown,
               "its full arguments are shown", shown)
        cookie = await page.eval("document.cookie")
        expect("warden_console" not in cookie, "the session cookie is out of the page's reach (HttpOnly)", cookie)
        await page.screenshot(shots / "approvals.png")

        # The signed-in browser, but without the form's CSRF token.
        status = await page.eval(
            f"fetch('/console/approvals/{first}', {{method: 'POST', "
            "headers: {'Content-Type': 'application/x-www-form-urlencoded'}, "
            "body: 'decision=approve&csrf=forged'}).then(r => r.status)")
        expect(status == 403, "an answer without the CSRF token is refused", status)
        again = await agent.call_tool("fs_write", written)
        expect(pending_id(again, "the refused answers changed nothing") == first, "it still waits under the same id")

        # Approve once; the agent's retry runs.
        await page.submit(f"{article(first)}.querySelector('button[value=approve]').click()")
        notice = await page.eval("document.querySelector('.notice') && document.querySelector('.notice').textContent")
        expect(notice and first in notice, "the console confirms the answer", notice)
        expect(await page.eval(f"{article(first)} === null"), "the answered ask leaves the list")
        await page.screenshot(shots / "answered.png")
        result = await agent.call_tool("fs_write", written)
        expect(not result.is_error, "the agent's retry runs", envelope(result))
        expect((workspace / "approved.txt").read_text() == written["content"], "the file was written")

        # A new ask appears without a reload; hostile arguments stay text.
        hostile = {"path": "denied.txt",
                   "content": "<img src=x id=pwned onerror=\"document.title='pwned'\"><script>document.title='pwned'</script>"}
        second = pending_id(await agent.call_tool("fs_write", hostile), "a second write waits")
        await page.wait_for(f"{article(second)} !== null")
        expect(True, "the second ask appeared on the open page without a reload")
        expect(await page.eval("document.getElementById('pwned') === null && document.title !== 'pwned'"),
               "the hostile arguments ran no script and made no element")
        expect("<script>" in await page.eval(f"{article(second)}.querySelector('pre').textContent"),
               "they are shown as text")
        await page.screenshot(shots / "live.png")

        # Deny with a reason; the agent's retry carries it.
        await page.eval(f"{article(second)}.querySelector('input[name=reason]').value = 'no markup in notes'; true")
        await page.submit(f"{article(second)}.querySelector('button[value=deny]').click()")
        result = await agent.call_tool("fs_write", hostile)
        env = envelope(result)
        expect(result.is_error and "no markup in notes" in env.get("message", ""),
               "the denial reaches the agent with its reason", env)
        expect(not (workspace / "denied.txt").exists(), "the denied write did not happen")

        # A grant allows a write; revoked in the console, the next one asks again.
        result = await agent.call_tool("fs_write", {"path": "granted/one.txt", "content": "by grant"})
        expect(not result.is_error, "the operator's grant allows the write", envelope(result))
        await page.goto(base + "/console/agents")
        grant = f"document.querySelector('section[data-grant=\"{args.grant}\"]')"
        expect(await page.eval(f"{grant} !== null"), "the agents page lists the grant", args.grant)
        expect("Time left" in await page.eval(f"{grant}.textContent"), "with its time left")
        history = await page.eval(
            "(document.querySelector('article[data-agent=\"ci\"] ol.history') || {textContent: ''}).textContent")
        expect("standard → elevated (awaiting a person)" in history, "the agent's trust history is listed", history)
        await page.screenshot(shots / "agents.png")
        status = await page.eval(
            f"fetch('/console/grants/{args.grant}/revoke', {{method: 'POST', "
            "headers: {'Content-Type': 'application/x-www-form-urlencoded'}, "
            f"body: 'csrf=' + encodeURIComponent({grant}.querySelector('input[name=csrf]').value)"
            "}).then(r => r.status)")
        expect(status == 400, "a revoke without confirmation and reason is refused", status)
        result = await agent.call_tool("fs_write", {"path": "granted/two.txt", "content": "still granted"})
        expect(not result.is_error, "the refused revoke changed nothing", envelope(result))
        await page.eval(f"{grant}.querySelector('input[name=reason]').value = 'the task is done';"
                        f"{grant}.querySelector('input[name=confirm]').checked = true; true")
        await page.submit(f"{grant}.querySelector('button').click()")
        expect(await page.eval(f"{grant} === null"), "the revoked grant is gone from the page")
        result = await agent.call_tool("fs_write", {"path": "granted/three.txt", "content": "after the revoke"})
        pending_id(result, "after the revoke the write waits for a person again")

        # The audit trail, filtered, and the chain verified.
        await page.goto(base + "/console/audit?agent=ci&decision=ask")
        rows = await page.eval("Array.from(document.querySelectorAll('#audit tbody tr')).map(r => r.textContent)")
        expect(rows and all("→ ask" in r for r in rows), "the filter shows the agent's asks only", rows)
        await page.goto(base + "/console/audit?verify=1")
        expect(await page.eval("document.getElementById('chain-ok') !== null"), "the chain verifies",
               await page.eval("document.body.textContent"))
        head = await page.eval("document.getElementById('chain-head').textContent")
        expect(len(head) >= 64, "the page shows the chain's head hash", head)
        await page.screenshot(shots / "audit.png")
        await page.goto(base + "/console/plugins")
        loaded = await page.eval("document.getElementById('loaded').textContent")
        expect("fs" in loaded, "the plugins page lists the loaded fs plugin", loaded)
        await page.eval(f"document.querySelector('input[name=path]').value = {json.dumps(args.component)}; true")
        await page.submit("document.querySelector('form[action=\"/console/plugins/install\"] button').click()")
        installed = "document.querySelector('article[data-plugin]')"
        expect(await page.eval(f"{installed} !== null"), "the installed plugin is listed",
               await page.eval("document.body.textContent"))
        name = await page.eval(f"{installed}.getAttribute('data-plugin')")
        expect("json" in await page.eval(f"{installed}.textContent"), "with its signer, digest and tools", name)
        await page.screenshot(shots / "plugins.png")
        await page.eval(f"{installed}.querySelector('input[name=reason]').value = 'not needed';"
                        f"{installed}.querySelector('input[name=confirm]').checked = true; true")
        await page.submit(f"{installed}.querySelector('button').click()")
        expect(await page.eval(f"{installed} === null"), "the removed plugin is gone", name)

        # A blueprint's `tool:create`, answered with a reason and the confirmation.
        await page.goto(base + "/console/toolsmith")
        blueprint = f"document.querySelector('article[data-blueprint=\"{args.blueprint}\"]')"
        expect("(pending)" in await page.eval(f"{blueprint}.textContent"), "the pending blueprint is listed", args.blueprint)
        approve = f"{blueprint}.querySelector('form[action$=\"/approve\"]')"
        await page.eval(f"{approve}.querySelector('input[name=reason]').value = 'word counts are useful';"
                        f"{approve}.querySelector('input[name=confirm]').checked = true; true")
        await page.submit(f"{approve}.querySelector('button').click()")
        shown = await page.eval(f"{blueprint}.textContent")
        # Approved, and the host moves on at once: this host has no builder,
        # so the build fails and says why.
        expect(
            any(f"({state})" in shown for state in ("approved", "building", "failed")),
            "the blueprint is approved and moves on to its build",
            shown,
        )
        await page.screenshot(shots / "toolsmith.png")

        # Sign out: the session is over.
        await page.submit("document.querySelector('form[action=\"/console/logout\"] button').click()")
        expect((await page.eval("location.pathname")) == "/console/login", "signing out returns to the sign-in page")
        status = await page.eval("fetch('/console/pending').then(r => r.status)")
        expect(status == 401, "the ended session lists nothing", status)

        await linked_approvals(args, base, shots, workspace, page, http)


async def linked_approvals(args, base, shots, workspace, page, http) -> None:
    """URL mode: the agent's 2026-07-28 client is sent to the console."""
    async with linked(base + "/mcp", args.token) as agent:
        note = {"path": "linked.txt", "content": "approved through a link"}
        result = await agent.call_tool("fs_write", note, allow_input_required=True)
        approval, url, state = link_of(result, base, "an operator's ask reaches a link-taking client as a link")

        # Whatever the client sends back with the link's state answers nothing.
        for answer in ({"action": "accept", "content": {"decision": "allow_once"}},
                       {"action": "accept", "content": {"decision": "always_allow", "rule": "*"}}):
            again = await agent.call_tool("fs_write", note, input_responses={"approval": answer},
                                          request_state=state, allow_input_required=True)
            expect(link_of(again, base, "a form answer sent with the link's state is not an answer")[0] == approval,
                   "the ask still waits under the same id", again)
        expect(not (workspace / "linked.txt").exists(), "the write did not run")
        refused = await agent.call_tool("fs_write", note, input_responses={"approval": {"action": "accept"}},
                                        request_state=state[:10] + ("B" if state[10] == "A" else "A") + state[11:],
                                        allow_input_required=True)
        env = envelope(refused) if isinstance(refused, types.CallToolResult) else {}
        expect(env.get("domain_code") == "approval_response_refused", "an altered link state is refused", refused)
        elsewhere = await agent.call_tool("fs_write", {"path": "other.txt", "content": "x"},
                                          input_responses={"approval": {"action": "accept"}},
                                          request_state=state, allow_input_required=True)
        env = envelope(elsewhere) if isinstance(elsewhere, types.CallToolResult) else {}
        expect(env.get("domain_code") == "approval_response_refused", "the link's state is refused for another call", elsewhere)

        # Off-site `next` targets are dropped: sign-in lands in the console.
        r = await http.post(f"{base}/console/login",
                            data={"actor": "eve", "token": args.admin, "next": "//evil.example/console/x"})
        expect(r.status_code == 303 and r.headers.get("location") == "/console",
               "an off-site next is not followed", (r.status_code, r.headers.get("location")))

        # The link leads a signed-out person through the sign-in to the ask.
        await page.goto(url)
        expect((await page.eval("location.pathname")) == "/console/login", "a signed-out person signs in first")
        await page.eval("document.getElementById('actor').value = 'dana';"
                        f"document.getElementById('token').value = {json.dumps(args.admin)}; true")
        await page.submit("document.getElementById('signin').click()")
        expect((await page.eval("location.pathname")) == f"/console/approvals/{approval}",
               "after the sign-in the person is at the linked ask", await page.eval("location.href"))
        expect(await page.eval(f"{article(approval)}.classList.contains('marked')"), "the linked ask is marked")
        expect(await page.eval(f"document.querySelector('#pending article') === {article(approval)}"),
               "and shown first")
        expect("approved through a link" in await page.eval(f"{article(approval)}.textContent"),
               "with its full arguments")
        await page.screenshot(shots / "linked.png")
        await page.submit(f"{article(approval)}.querySelector('button[value=approve]').click()")

        # The client comes back after the link: the call runs.
        done = await agent.call_tool("fs_write", note, input_responses={"approval": {"action": "accept"}},
                                     request_state=state, allow_input_required=True)
        expect(isinstance(done, types.CallToolResult) and not done.is_error,
               "approved in the console, the linked client's retry runs", done)
        expect((workspace / "linked.txt").read_text() == note["content"], "the file was written")
        await page.goto(url)
        expect("no longer waiting" in await page.eval("document.querySelector('.notice').textContent"),
               "the link of an answered ask says it no longer waits")

        # A person who does not follow the link: the pending result, still waiting.
        later = {"path": "later.txt", "content": "not now"}
        result = await agent.call_tool("fs_write", later, allow_input_required=True)
        second, _, state = link_of(result, base, "a second ask is linked too")
        declined = await agent.call_tool("fs_write", later, input_responses={"approval": {"action": "decline"}},
                                         request_state=state, allow_input_required=True)
        expect(pending_id(declined, "a declined link gives the pending result") == second, "naming the same ask")
        await page.goto(base + "/console")
        expect(await page.eval(f"{article(second)} !== null"), "the declined ask still waits for an operator")
        expect(not (workspace / "later.txt").exists(), "and did not run")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    for name in ("url", "token", "admin", "chromium", "workspace", "shots", "grant", "component", "blueprint"):
        parser.add_argument(f"--{name}", required=True)
    try:
        asyncio.run(main(parser.parse_args()))
        print("all checks passed", flush=True)
    except Check as failed:
        print(f"FAILED - {failed}", flush=True)
        sys.exit(1)
    except BaseExceptionGroup as group:
        if not print_failures(group):
            raise
        sys.exit(1)
