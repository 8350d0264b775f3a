"""Drive headless Chromium over the DevTools protocol, on a pipe (no websocket, no extra package).

Chromium started with ``--remote-debugging-pipe`` reads protocol commands from
file descriptor 3 and writes replies and events to descriptor 4, each message a
JSON object ended by a NUL byte (the transport Puppeteer's ``pipe: true`` uses).
:class:`Browser` opens one page with the network emulated offline, loads a file,
records console messages, uncaught exceptions and every network request, runs
scripts in the page and takes screenshots.

Usage as a tool::

    python tools/headless.py report.html shot.png [--width 1280]

Debian's ``chromium`` package: ``apt-get install -y chromium``.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
    "--remote-debugging-pipe",
)


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class BrowserError(RuntimeError):
    pass


@dataclass
class PageLog:
    """What the page did: console messages, uncaught exceptions, network requests."""

    console: list[tuple[str, str]] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    log_entries: list[tuple[str, str]] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    @property
    def errors(self) -> list[str]:
        out = list(self.exceptions)
        out += [f"console.{level}: {text}" for level, text in self.console if level == "error"]
        out += [f"log {level}: {text}" for level, text in self.log_entries if level == "error"]
        return out


class Browser:
    """One headless Chromium with one page, driven over the DevTools pipe."""

    def __init__(self, executable: str | None = None, timeout_s: float = 60.0) -> None:
        exe = executable or find_chromium()
        if exe is None:
            raise BrowserError("no chromium on PATH (apt-get install -y chromium)")
        self.timeout_s = timeout_s
        self._profile = tempfile.mkdtemp(prefix="infercast-chromium-")
        cmd_r, cmd_w = os.pipe()  # we write commands, the browser reads fd 3
        evt_r, evt_w = os.pipe()  # the browser writes fd 4, we read

        def child_fds() -> None:
            a, b = os.dup(cmd_r), os.dup(evt_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self._proc = subprocess.Popen(
            [exe, *FLAGS, f"--user-data-dir={self._profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            pass_fds=(3, 4),
            preexec_fn=child_fds,
        )
        os.close(cmd_r)
        os.close(evt_w)
        self._w = cmd_w
        self._r = evt_r
        self._buf = b""
        self._next = 0
        self._events: list[dict[str, Any]] = []
        self.log = PageLog()
        self.session = ""
        try:
            self._open_page()
        except BaseException:
            self.close()
            raise

    # -- transport ----------------------------------------------------------- #

    def _send(self, method: str, params: dict[str, Any] | None = None, session: str = "") -> int:
        self._next += 1
        msg: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        return self._next

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("timed out waiting for the browser")
            ready, _, _ = select.select([self._r], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._r, 1 << 20)
            if not chunk:
                err = self._proc.stderr.read().decode(errors="replace") if self._proc.stderr else ""
                raise BrowserError(f"the browser closed the pipe: {err[-2000:]}")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        msg: dict[str, Any] = json.loads(raw)
        return msg

    def _record(self, msg: dict[str, Any]) -> None:
        method = msg.get("method", "")
        p = msg.get("params", {})
        if method == "Runtime.consoleAPICalled":
            text = " ".join(
                str(a.get("value", a.get("description", ""))) for a in p.get("args", [])
            )
            self.log.console.append((p.get("type", ""), text))
        elif method == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            exc = d.get("exception", {}).get("description") or d.get("text", "")
            self.log.exceptions.append(f"{exc} at {d.get('url', '')}:{d.get('lineNumber', '')}")
        elif method == "Log.entryAdded":
            e = p.get("entry", {})
            self.log.log_entries.append(
                (e.get("level", ""), f"{e.get('text', '')} {e.get('url', '')}")
            )
        elif method == "Network.requestWillBeSent":
            self.log.requests.append(p.get("request", {}).get("url", ""))
        self._events.append(msg)

    def call(self, method: str, params: dict[str, Any] | None = None, *, page: bool = True) -> Any:
        """Send a command (to the page's session unless ``page`` is False); wait for the reply."""
        mid = self._send(method, params, self.session if page else "")
        deadline = time.monotonic() + self.timeout_s
        while True:
            msg = self._read_message(deadline)
            if msg.get("id") == mid:
                if "error" in msg:
                    raise BrowserError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self._record(msg)

    def wait_event(self, method: str) -> dict[str, Any]:
        for i, e in enumerate(self._events):
            if e.get("method") == method:
                del self._events[i]
                return e
        deadline = time.monotonic() + self.timeout_s
        while True:
            msg = self._read_message(deadline)
            self._record(msg)
            if msg.get("method") == method:
                self._events.pop()
                return msg

    # -- page ---------------------------------------------------------------- #

    def _open_page(self) -> None:
        target = self.call("Target.createTarget", {"url": "about:blank"}, page=False)
        attached = self.call(
            "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}, page=False
        )
        self.session = attached["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")
        self.call(
            "Network.emulateNetworkConditions",
            {"offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1},
        )

    def set_viewport(self, width: int, height: int) -> None:
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )

    def load(self, path: Path) -> None:
        """Open a local file and wait for its load event."""
        self._events = [e for e in self._events if e.get("method") != "Page.loadEventFired"]
        res = self.call("Page.navigate", {"url": path.resolve().as_uri()})
        if res.get("errorText"):
            raise BrowserError(f"navigation failed: {res['errorText']}")
        self.wait_event("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (JSON-able values)."""
        res = self.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in res:
            raise BrowserError(f"script failed: {res['exceptionDetails']}")
        return res.get("result", {}).get("value")

    def screenshot(self, width: int = 1280, max_height: int = 16000) -> bytes:
        """PNG of the whole page at ``width`` CSS pixels."""
        self.set_viewport(width, 900)
        height = int(self.evaluate("document.documentElement.scrollHeight"))
        height = min(max(height, 300), max_height)
        self.set_viewport(width, height)
        return self.screenshot_clip(0, height, width)

    def screenshot_clip(self, y: int, height: int, width: int = 1280) -> bytes:
        """PNG of the page between ``y`` and ``y + height`` (CSS pixels), ``width`` wide."""
        clip = {"x": 0, "y": y, "width": width, "height": height, "scale": 1}
        data = self.call(
            "Page.captureScreenshot", {"format": "png", "clip": clip, "captureBeyondViewport": True}
        )
        return base64.b64decode(data["data"])

    def close(self) -> None:
        try:
            if self._proc.poll() is None:
                try:
                    self._send("Browser.close")
                    self._proc.wait(timeout=10)
                except (OSError, subprocess.TimeoutExpired):
                    self._proc.kill()
                    self._proc.wait(timeout=10)
        finally:
            for fd in (self._w, self._r):
                with contextlib.suppress(OSError):
                    os.close(fd)
            if self._proc.stderr:
                self._proc.stderr.close()
            shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --------------------------------------------------------------------------- #
# PNG: size and colours, with the standard library only
# --------------------------------------------------------------------------- #


def png_pixels(png: bytes) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of raw RGB(A) bytes) of an 8-bit RGB / RGBA PNG."""
    if png[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat = 8, b""
    width = height = channels = 0
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos : pos + 4])
        kind = png[pos + 4 : pos + 8]
        body = png[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            if depth != 8 or color not in (2, 6):
                raise ValueError(f"unsupported PNG (depth {depth}, colour type {color})")
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    rows: list[bytes] = []
    prev = bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            if f == 1:
                line[i] = (line[i] + a) & 0xFF
            elif f == 2:
                line[i] = (line[i] + b) & 0xFF
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 0xFF
        rows.append(bytes(line))
        prev = line
    return width, height, rows


def png_colours(png: bytes, step: int = 4) -> tuple[int, int, int]:
    """(width, height, distinct colours among every ``step``-th pixel of every ``step``-th row)."""
    width, height, rows = png_pixels(png)
    channels = len(rows[0]) // width if rows else 3
    seen: set[bytes] = set()
    for row in rows[::step]:
        for x in range(0, width, step):
            seen.add(row[x * channels : x * channels + 3])
    return width, height, len(seen)


def main(argv: list[str]) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("page", type=Path)
    ap.add_argument("png", type=Path)
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--slices", type=int, default=0, help="also write PNG slices this tall")
    args = ap.parse_args(argv)
    with Browser() as b:
        b.set_viewport(args.width, 900)
        b.load(args.page)
        shot = b.screenshot(args.width)
        args.png.write_bytes(shot)
        if args.slices:
            total = int(b.evaluate("document.documentElement.scrollHeight"))
            for i, y in enumerate(range(0, total, args.slices)):
                part = b.screenshot_clip(y, min(args.slices, total - y), args.width)
                args.png.with_name(f"{args.png.stem}-{i}.png").write_bytes(part)
        for e in b.log.errors:
            print(f"error: {e}", file=sys.stderr)
        print(f"{args.png}: {len(shot):,} bytes; requests: {b.log.requests}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
