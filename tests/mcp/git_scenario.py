"""A coding agent's day with git, through the official MCP Python SDK
against a real `warden serve --stdio` (issue 21's end-to-end scenario).

Usage: git_scenario.py --warden BIN --config FILE --state DIR --site DIR
                       --gateway IP

Agent `coder` is standard-level in default mode, its asks answered by the
person behind its client (elicitation). A dumb-HTTP git server on the
Docker bridge gateway serves `--site` (the only host address a container
reaches); the gateway is on `[sandbox.git] allow-hosts`. The agent
clones, reads and searches, fixes a file, runs the tests in the terminal
sandbox, makes a branch and commits. Edits and the test command ask; the
clone (the server is on `allow-hosts`, so no rule is needed), the reads, the branch
and the commit (local and undoable: default mode allows them) run without
a prompt. Every check raises on failure; the script exits non-zero naming it.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import http.server
import sys
import threading

import mcp.types as types
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from checks import Check, expect, print_failures


class Counting(http.server.SimpleHTTPRequestHandler):
    hits = 0

    def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
        Counting.hits += 1
        self.path = self.path.split("?", 1)[0]
        super().do_GET()

    def log_message(self, *args) -> None:
        pass


def serve(site: str, ip: str) -> int:
    handler = functools.partial(Counting, directory=site)
    server = http.server.ThreadingHTTPServer((ip, 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1]


asked: list[str] = []


async def on_elicit(_context, params) -> types.ElicitResult:
    asked.append(params.message)
    return types.ElicitResult(action="accept", content={"decision": "allow_once"})


async def call(session: ClientSession, name: str, arguments: dict) -> dict:
    result = await session.call_tool(name, arguments)
    text = "".join(c.text for c in result.content if isinstance(c, types.TextContent))
    expect(not result.is_error, f"{name} runs", text)
    return result.structured_content or {}


async def day(args, url: str) -> None:
    params = StdioServerParameters(
        command=args.warden,
        args=["serve", "--stdio", "--agent", "coder", "--config", args.config, "--state-dir", args.state],
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, elicitation_callback=on_elicit) as s:
            await s.initialize()
            names = {t.name for t in (await s.list_tools()).tools}
            expect({"git_clone", "git_commit", "git_status", "terminal_exec", "fs_read"} <= names, "the tools are listed", names)

            clone = await call(s, "git_clone", {"url": url, "dest": "app"})
            expect(clone.get("dest") == "app", "cloned", clone)
            expect(Counting.hits > 0, "the loopback server served the clone", Counting.hits)
            readme = await call(s, "fs_read", {"path": "app/README.md"})
            expect("calculator" in str(readme), "read a file", readme)
            found = await call(s, "search_grep", {"pattern": "def add", "path": "app"})
            expect(any(m.get("path", "").endswith("calc.py") for m in found.get("matches", [])), "searched", found)
            expect(asked == [], "reading and cloning asked nobody", asked)

            await call(s, "fs_write", {"path": "app/calc.py", "content": "def add(a, b):\n    return a + b\n"})
            expect(len(asked) == 1 and "fs_write" in asked[0], "the edit asked", asked)
            run = await call(s, "terminal_exec", {"command": "sh test.sh", "cwd": "/workspace/app"})
            expect(run.get("exit_code") == 0 and "tests pass" in run.get("stdout", ""), "the tests pass in the sandbox", run)
            expect(len(asked) == 2 and "terminal_exec" in asked[1], "the test command asked", asked)

            await call(s, "git_branch", {"repo": "app", "op": "create", "name": "fix/add"})
            await call(s, "git_branch", {"repo": "app", "op": "switch", "name": "fix/add"})
            status = await call(s, "git_status", {"repo": "app"})
            expect(status["branch"]["head"] == "fix/add", "on the new branch", status)
            expect({"kind": "changed", "index": ".", "worktree": "M", "path": "calc.py"} in status["entries"], "the edit shows", status)
            commit = await call(s, "git_commit", {"repo": "app", "branch": "fix/add", "message": "Fix add"})
            expect(commit["commit"]["subject"] == "Fix add", "committed", commit)
            log = await call(s, "git_log", {"repo": "app", "max_count": 5})
            expect([c["subject"] for c in log["commits"]] == ["Fix add", "First"], "the log has both commits", log)
            expect((await call(s, "git_status", {"repo": "app"}))["clean"], "clean after the commit")
            expect(len(asked) == 2, "branch, commit, status and log asked nobody", asked)


async def main() -> int:
    p = argparse.ArgumentParser()
    for flag in ("--warden", "--config", "--state", "--site", "--gateway"):
        p.add_argument(flag, required=True)
    args = p.parse_args()
    port = serve(args.site, args.gateway)
    url = f"http://{args.gateway}:{port}/app.git"
    try:
        await day(args, url)
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
