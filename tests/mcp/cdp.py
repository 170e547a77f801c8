"""A headless Chromium driven over the DevTools protocol: start it, open a
page, navigate, run script in the page, take screenshots. Just what the
console's browser test needs, on the `websockets` library.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import websockets


class Browser:
    """A Chromium process and one page in it."""

    def __init__(self, executable: str, width: int = 1000, height: int = 1100):
        self.executable = executable
        self.size = f"{width},{height}"
        self.profile = tempfile.mkdtemp(prefix="warden-chromium-")
        self.ids = itertools.count(1)
        self.replies: dict[int, asyncio.Future] = {}
        self.events: asyncio.Queue = asyncio.Queue()

    async def __aenter__(self) -> "Browser":
        self.process = subprocess.Popen(
            [
                self.executable,
                "--headless=new",
                # Root in a container or CI: Chromium's own sandbox needs user namespaces.
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--disable-background-networking",
                f"--window-size={self.size}",
                f"--user-data-dir={self.profile}",
                "--remote-debugging-port=0",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        url = await asyncio.wait_for(asyncio.to_thread(self._devtools_url), 30)
        self.socket = await websockets.connect(url, max_size=64 << 20)
        self.reader = asyncio.create_task(self._read())
        target = await self.send("Target.createTarget", {"url": "about:blank"})
        attached = await self.send("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True})
        self.session = attached["sessionId"]
        await self.send("Page.enable", session=True)
        await self.send("Runtime.enable", session=True)
        return self

    async def __aexit__(self, *exc) -> None:
        self.reader.cancel()
        await self.socket.close()
        self.process.kill()
        self.process.wait()
        shutil.rmtree(self.profile, ignore_errors=True)

    def _devtools_url(self) -> str:
        seen = []
        for line in self.process.stderr:
            seen.append(line)
            found = re.search(r"DevTools listening on (ws://\S+)", line)
            if found:
                return found.group(1)
        raise RuntimeError("chromium stopped before listening: " + "".join(seen))

    async def _read(self) -> None:
        async for raw in self.socket:
            message = json.loads(raw)
            reply = self.replies.pop(message.get("id"), None)
            if reply is not None:
                if "error" in message:
                    reply.set_exception(RuntimeError(f"devtools: {message['error']}"))
                else:
                    reply.set_result(message.get("result", {}))
            elif "method" in message:
                await self.events.put(message)

    async def send(self, method: str, params: dict | None = None, session: bool = False) -> dict:
        n = next(self.ids)
        message: dict[str, Any] = {"id": n, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self.session
        reply = asyncio.get_running_loop().create_future()
        self.replies[n] = reply
        await self.socket.send(json.dumps(message))
        return await asyncio.wait_for(reply, 30)

    async def _loaded(self) -> None:
        while True:
            event = await asyncio.wait_for(self.events.get(), 30)
            if event["method"] == "Page.loadEventFired":
                return

    def _drain(self) -> None:
        while not self.events.empty():
            self.events.get_nowait()

    async def goto(self, url: str) -> None:
        self._drain()
        await self.send("Page.navigate", {"url": url}, session=True)
        await self._loaded()

    async def eval(self, expression: str) -> Any:
        result = await self.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
            session=True,
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def submit(self, expression: str) -> None:
        """Runs `expression` (which clicks a submit button) and waits for
        the page the form leads to."""
        self._drain()
        await self.eval(expression)
        await self._loaded()

    async def wait_for(self, expression: str, seconds: float = 10) -> Any:
        """Polls `expression` in the page until it is truthy."""
        deadline = asyncio.get_running_loop().time() + seconds
        while True:
            value = await self.eval(expression)
            if value:
                return value
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"never true: {expression}")
            await asyncio.sleep(0.2)

    async def screenshot(self, path: Path) -> None:
        shot = await self.send("Page.captureScreenshot", {"format": "png"}, session=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))
