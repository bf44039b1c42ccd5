"""A small W3C WebDriver client (standard library only) for Debian's chromedriver driving headless Chromium.

Enough for the browser test: open a URL, find elements by CSS selector, click, read text and
attributes and properties, take screenshots, and read the browser console (chromedriver's log endpoint).
"""

from __future__ import annotations

import base64
import json
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

ELEMENT = "element-6066-11e4-a52e-4f735466cecf"  # the W3C key of an element reference

CHROMIUM = next(filter(None, map(shutil.which, ("chromium", "chromium-browser"))), None)
CHROMEDRIVER = shutil.which("chromedriver")


class WebDriverError(RuntimeError):
    pass


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Browser:
    """Headless Chromium through chromedriver; use as a context manager (quits both on exit)."""

    def __init__(self, *, width: int = 1400, height: int = 1000, timeout: float = 30.0):
        if not (CHROMIUM and CHROMEDRIVER):
            raise WebDriverError("chromium and chromedriver must be on PATH (.ci/install-chromium.sh)")
        self.port = _free_port()
        self.timeout = timeout
        self.driver = subprocess.Popen(
            [CHROMEDRIVER, f"--port={self.port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            self._wait_ready()
            options = {
                "binary": CHROMIUM,
                "args": [
                    "--headless=new",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-dev-shm-usage",
                    "--allow-file-access-from-files",
                    f"--window-size={width},{height}",
                ],
            }
            caps = {"browserName": "chrome", "goog:chromeOptions": options, "goog:loggingPrefs": {"browser": "ALL"}}
            self.session = self._call("POST", "/session", {"capabilities": {"alwaysMatch": caps}})["sessionId"]
        except BaseException:
            self.driver.kill()
            self.driver.wait()
            raise

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            try:
                if self._call("GET", "/status").get("ready"):
                    return
            except (OSError, WebDriverError):
                pass
            time.sleep(0.1)
        raise WebDriverError(f"chromedriver did not start on port {self.port} within {self.timeout} s")

    def _call(self, method: str, path: str, body: dict | None = None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}",
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return json.loads(response.read() or b"{}").get("value", {})
        except urllib.error.HTTPError as error:
            detail = json.loads(error.read() or b"{}").get("value", {})
            raise WebDriverError(f"{method} {path}: {detail.get('error')}: {detail.get('message', '')[:500]}") from None

    def _session(self, method: str, path: str, body: dict | None = None):
        return self._call(method, f"/session/{self.session}{path}", body)

    def get(self, url: str) -> None:
        self._session("POST", "/url", {"url": url})

    @property
    def url(self) -> str:
        return self._session("GET", "/url")

    def find(self, css: str) -> str:
        """The first element matching ``css`` (an element id); WebDriverError when there is none."""
        return self._session("POST", "/element", {"using": "css selector", "value": css})[ELEMENT]

    def find_all(self, css: str) -> list[str]:
        return [e[ELEMENT] for e in self._session("POST", "/elements", {"using": "css selector", "value": css})]

    def click(self, element: str) -> None:
        self._session("POST", f"/element/{element}/click", {})

    def text(self, element: str) -> str:
        """The element's rendered (visible) text."""
        return self._session("GET", f"/element/{element}/text")

    def displayed(self, element: str) -> bool:
        return bool(self._session("GET", f"/element/{element}/displayed"))

    def attribute(self, element: str, name: str) -> str | None:
        return self._session("GET", f"/element/{element}/attribute/{name}")

    def property(self, element: str, name: str):
        """A DOM property of the element (``naturalWidth`` of an image, ...)."""
        return self._session("GET", f"/element/{element}/property/{name}")

    def rect(self, element: str) -> dict:
        """The element's box in CSS pixels (``x``, ``y``, ``width``, ``height``) relative to the page."""
        return self._session("GET", f"/element/{element}/rect")

    def script(self, source: str, *args):
        """The value of a synchronous script run in the page (``arguments[i]`` are ``args``)."""
        return self._session("POST", "/execute/sync", {"script": source, "args": list(args)})

    def resize(self, width: int, height: int) -> None:
        self._session("POST", "/window/rect", {"width": width, "height": height})

    def print_pdf(self, path: Path, **options) -> Path:
        """The page as the browser prints it (WebDriver's Print Page: A4-like defaults, print media styles)."""
        Path(path).write_bytes(base64.b64decode(self._session("POST", "/print", options)))
        return Path(path)

    def screenshot(self, path: Path) -> Path:
        Path(path).write_bytes(base64.b64decode(self._session("GET", "/screenshot")))
        return Path(path)

    def console(self) -> list[dict]:
        """Browser console entries since the last call (level, message); chromedriver's log endpoint."""
        return self._session("POST", "/se/log", {"type": "browser"})

    def close(self) -> None:
        try:
            self._session("DELETE", "")
        except (OSError, WebDriverError):
            pass
        finally:
            self.driver.terminate()
            try:
                self.driver.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.driver.kill()
                self.driver.wait()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
