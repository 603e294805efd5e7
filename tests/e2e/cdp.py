"""A minimal headless-Chromium driver over the Chrome DevTools Protocol, for testing report pages.

Just what the report tests need: open a file, collect console errors, uncaught exceptions and network
requests, evaluate JavaScript, click, take a screenshot. One page, one websocket, synchronous.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import websocket

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--remote-debugging-port=0",
)


def find_chromium() -> str | None:
    return next((p for p in map(shutil.which, CHROMIUM_NAMES) if p), None)


class Browser:
    def __init__(self, profile_dir: Path, width: int = 1400, height: int = 900, timeout: float = 60) -> None:
        exe = find_chromium()
        if exe is None:
            raise RuntimeError("chromium is not installed")
        self.timeout = timeout
        self.proc = subprocess.Popen(
            [exe, *FLAGS, f"--user-data-dir={profile_dir}", f"--window-size={width},{height}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.events: list[dict[str, Any]] = []
        self._id = 0
        try:
            port = self._port(profile_dir / "DevToolsActivePort")
            self.ws = websocket.create_connection(self._page_ws(port), timeout=timeout, suppress_origin=True)
            for domain in ("Page", "Runtime", "Log", "Network"):
                self.send(f"{domain}.enable")
            self.send(
                "Emulation.setDeviceMetricsOverride",
                width=width,
                height=height,
                deviceScaleFactor=1,
                mobile=False,
            )
        except BaseException:
            self.proc.kill()
            raise

    def _port(self, active_port_file: Path) -> int:
        """Chromium writes the port it picked for --remote-debugging-port=0 into the profile directory."""
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"chromium exited with code {self.proc.returncode} at start")
            try:
                return int(active_port_file.read_text().split()[0])
            except (FileNotFoundError, IndexError, ValueError):
                time.sleep(0.1)
        raise TimeoutError("chromium did not open its DevTools port")

    def _page_ws(self, port: int) -> str:
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=5) as resp:
                pages = [t for t in json.load(resp) if t.get("type") == "page"]
            if pages:
                return pages[0]["webSocketDebuggerUrl"]
            time.sleep(0.1)
        raise TimeoutError("chromium opened no page")

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        self._id += 1
        msg_id = self._id
        self.ws.send(json.dumps({"id": msg_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == msg_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def _pump(self, seconds: float) -> None:
        """Read events for a while (console messages can arrive after the load event)."""
        self.ws.settimeout(seconds)
        try:
            while True:
                msg = json.loads(self.ws.recv())
                if "method" in msg:
                    self.events.append(msg)
        except websocket.WebSocketTimeoutException:
            pass
        finally:
            self.ws.settimeout(self.timeout)

    def open(self, path: Path) -> None:
        self.events.clear()
        self.send("Page.navigate", url=path.resolve().as_uri())
        deadline = time.monotonic() + self.timeout
        while not any(e["method"] == "Page.loadEventFired" for e in self.events):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{path} did not finish loading")
            self._pump(0.2)

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression!r} threw: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 30) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"still false after {timeout} s: {expression}")
            time.sleep(0.1)

    def click(self, selector: str) -> None:
        """A real mouse click (press and release) at the centre of the element, scrolled into view."""
        box = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
            " e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();"
            " return [r.x + r.width / 2, r.y + r.height / 2]; })()"
        )
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left", clickCount=1)

    def type_text(self, selector: str, text: str) -> None:
        self.click(selector)
        self.send("Input.insertText", text=text)

    def console_errors(self) -> list[str]:
        """Console errors, uncaught exceptions and browser log errors (CSP violations land there too)."""
        self._pump(0.3)
        out = []
        for e in self.events:
            p = e.get("params", {})
            if e["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append(" ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
            elif e["method"] == "Runtime.exceptionThrown":
                details = p.get("exceptionDetails", {})
                out.append(
                    details.get("exception", {}).get("description") or details.get("text", "exception")
                )
            elif e["method"] == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append(p["entry"].get("text", ""))
        return out

    def requested_urls(self) -> list[str]:
        return [
            e["params"]["request"]["url"] for e in self.events if e["method"] == "Network.requestWillBeSent"
        ]

    def screenshot(self, path: Path, full_page: bool = True) -> None:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            width = self.evaluate("document.documentElement.scrollWidth")
            height = self.evaluate("document.documentElement.scrollHeight")
            params.update(
                captureBeyondViewport=True,
                clip={"x": 0, "y": 0, "width": width, "height": height, "scale": 1},
            )
        data = self.send("Page.captureScreenshot", **params)["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        try:
            self.ws.close()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
