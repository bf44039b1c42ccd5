"""A loopback HTTP server for offline download tests: serves in-memory files with Range support and
can cut a response mid-body or answer 503 a set number of times. With ``root`` it also serves a folder
(a mirror in ``wget -x`` layout), read from disk on each request."""

from __future__ import annotations

import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class FileServer:
    """``files`` maps URL paths ("/a/b.jpg") to bytes. ``cut[path] = (n_bytes, times)`` closes the
    connection after ``n_bytes`` of the body for the next ``times`` requests; ``fail[path] = times``
    answers 503 that many times. ``delay`` seconds pass before each answer (a stand-in for network
    latency). ``requests`` records (path, Range header) of every request. A path not in ``files`` is
    read from ``root / path`` when ``root`` is given."""

    def __init__(self, files: dict[str, bytes] | None = None, delay: float = 0.0, root: str | Path | None = None):
        self.files = dict(files or {})
        self.root = Path(root).resolve() if root is not None else None
        self.delay = delay
        self.cut: dict[str, tuple[int, int]] = {}
        self.fail: dict[str, int] = {}
        self.requests: list[tuple[str, str | None]] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def do_GET(self):
                if server.delay:
                    time.sleep(server.delay)
                path, rng = self.path, self.headers.get("Range")
                with server._lock:
                    server.requests.append((path, rng))
                    failing = server.fail.get(path, 0)
                    if failing:
                        server.fail[path] = failing - 1
                    cut_at, times = server.cut.get(path, (None, 0))
                    if times:
                        server.cut[path] = (cut_at, times - 1)
                    else:
                        cut_at = None
                if failing:
                    self.send_error(503, "try later")
                    return
                body, start = server.body(path), 0
                if body is None:
                    self.send_error(404, "Not Found")
                    return
                if rng and rng.startswith("bytes="):
                    start = int(rng[6:].split("-")[0])
                    if start >= len(body):
                        self.send_error(416, "Range Not Satisfiable")
                        return
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
                else:
                    self.send_response(200)
                self.send_header("Content-Length", str(len(body) - start))
                self.end_headers()
                payload = body[start:]
                if cut_at is not None:
                    self.wfile.write(payload[:cut_at])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def body(self, path: str) -> bytes | None:
        """The bytes served at ``path``, or None (404)."""
        if path in self.files:
            return self.files[path]
        if self.root is None:
            return None
        target = (self.root / urllib.parse.unquote(path).lstrip("/")).resolve()
        if self.root not in target.parents or not target.is_file():
            return None
        return target.read_bytes()

    def __enter__(self) -> FileServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
