"""The review app's HTTP server: the standard library's ``ThreadingHTTPServer``, a fixed set of
routes, and the security every request goes through.

- Every request needs the access token: ``?token=`` once (it is then moved into an HttpOnly,
  SameSite=Strict cookie and the URL is cleaned), the cookie, or ``Authorization: Bearer``.
- Writes (POST) need JSON, the header ``X-Misstep-Review: 1`` (a cross-site form cannot send
  it, and a cross-site fetch that tries is stopped by the CORS preflight this server never
  allows) and, when the browser sends one, an ``Origin`` equal to the server's own.
- On a loopback address the ``Host`` header must name the server (no DNS rebinding).
- Pages are static files bundled in the package; data reaches them only as JSON that the
  script puts into the page as text (``textContent``), under a strict Content-Security-Policy
  (scripts and styles from this server only, nothing inline, no network elsewhere).
- No part of a request names a file: static files come from a fixed table read at start-up,
  people's labels go to ``RUN_DIR/human/<validated annotator>.jsonl``.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import secrets
import socket
import sys
import traceback
from http import HTTPStatus
from http.cookies import SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from misstep.errors import MisstepError
from misstep.review._data import BadRequest, ReviewData, TraceFilter

__all__ = ["COOKIE", "CSP", "WRITE_HEADER", "ReviewServer", "make_server"]

COOKIE = "misstep_review"
WRITE_HEADER = "X-Misstep-Review"
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
_STATIC = {
    "/static/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/static/style.css": ("style.css", "text/css; charset=utf-8"),
}
_PAGES = {"index": "index.html", "trace": "trace.html"}
_MAX_BODY = 64 * 1024
_LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")


def _asset(name: str) -> bytes:
    return (resources.files("misstep.review") / "static" / name).read_bytes()


class ReviewServer(ThreadingHTTPServer):
    """The server and what its handlers share."""

    daemon_threads = True
    # Two annotators and a browser's parallel requests: a deeper backlog than the default 5.
    request_queue_size = 64

    def __init__(
        self,
        address: tuple[str, int],
        data: ReviewData,
        *,
        token: str,
        annotator: str | None,
    ) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6  # an IPv6 --host such as ::1
        super().__init__(address, _Handler)
        self.data = data
        self.token = token
        self.annotator = annotator
        self.assets = {path: (_asset(name), kind) for path, (name, kind) in _STATIC.items()}
        self.pages = {key: _asset(name) for key, name in _PAGES.items()}
        host, port = self.server_address[:2]
        self.host = str(host)
        self.port = int(port)
        shown = f"[{self.host}]" if ":" in self.host else self.host
        self.origin = f"http://{shown}:{self.port}"
        self.loopback = self.host in _LOOPBACK or self.host.startswith("127.")
        self.allowed_hosts = {f"{shown}:{self.port}"}
        if self.loopback:
            self.allowed_hosts |= {f"{h}:{self.port}" for h in _LOOPBACK}

    def server_close(self) -> None:
        super().server_close()
        self.data.texts.close()

    @property
    def url(self) -> str:
        """The address to open, token included."""
        return f"{self.origin}/?token={self.token}"


def make_server(
    data: ReviewData,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    token: str | None = None,
    annotator: str | None = None,
) -> ReviewServer:
    """Bind (``port`` 0: any free port) without serving yet; ``serve_forever`` serves."""
    return ReviewServer(
        (host, port), data, token=token or secrets.token_urlsafe(32), annotator=annotator
    )


class _Handler(BaseHTTPRequestHandler):
    server: ReviewServer
    protocol_version = "HTTP/1.1"
    server_version = "misstep-review"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: the terminal shows the URL and errors only

    # --- answers ----------------------------------------------------------------------------

    def _send(
        self,
        status: int,
        body: bytes,
        kind: str,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("X-Frame-Options", "DENY")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Cross-Origin-Opener-Policy", "same-origin")
        self.send_header("Cross-Origin-Resource-Policy", "same-origin")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, payload: Any) -> None:
        body = json.dumps(payload, ensure_ascii=True, allow_nan=False).encode()
        self._send(status, body, "application/json; charset=utf-8")

    def _error(self, status: int, message: str) -> None:
        self._json(status, {"error": message})

    # --- checks -----------------------------------------------------------------------------

    def _token_ok(self, query: dict[str, str]) -> tuple[bool, bool]:
        """(authorised, came in the query)."""
        want = self.server.token.encode()
        given = query.get("token")
        if given is not None and hmac.compare_digest(given.encode(), want):
            return True, True
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Bearer ") and hmac.compare_digest(auth[7:].encode(), want):
            return True, False
        cookie = SimpleCookie()
        try:
            cookie.load(self.headers.get("Cookie", ""))
        except Exception:  # a malformed cookie header is simply no token
            return False, False
        morsel = cookie.get(COOKIE)
        if morsel is not None and hmac.compare_digest(morsel.value.encode(), want):
            return True, False
        return False, False

    def _host_ok(self) -> bool:
        return not self.server.loopback or self.headers.get("Host", "") in self.server.allowed_hosts

    def _annotator(self, query: dict[str, str]) -> str | None:
        return query.get("annotator") or self.server.annotator

    # --- routes -----------------------------------------------------------------------------

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        try:
            self._get()
        except Exception:
            self._fail()

    def do_POST(self) -> None:
        try:
            self._post()
        except Exception:
            self._fail()

    def do_OPTIONS(self) -> None:
        # No CORS preflight is ever allowed: a cross-site fetch with the write header stops here.
        self._error(HTTPStatus.METHOD_NOT_ALLOWED, "method not allowed")

    do_PUT = do_DELETE = do_PATCH = do_OPTIONS

    def _fail(self) -> None:
        traceback.print_exc(file=sys.stderr)
        with contextlib.suppress(OSError):  # the client may be gone
            self._error(HTTPStatus.INTERNAL_SERVER_ERROR, "internal error (see the server's log)")

    def _parse(self) -> tuple[str, dict[str, str]]:
        parts = urlsplit(self.path)
        query = dict(parse_qsl(parts.query, keep_blank_values=True))
        return parts.path, query

    def _get(self) -> None:
        if not self._host_ok():
            self._error(HTTPStatus.FORBIDDEN, "unexpected Host header")
            return
        path, query = self._parse()
        ok, in_query = self._token_ok(query)
        if not ok:
            self._error(
                HTTPStatus.FORBIDDEN,
                "missing or wrong access token: open the URL `misstep review` printed",
            )
            return
        if in_query and not path.startswith("/api/"):
            # Keep the token out of the address bar, history and logs: cookie, then redirect.
            rest = "&".join(
                f"{k}={v}" for k, v in parse_qsl(urlsplit(self.path).query) if k != "token"
            )
            cookie = f"{COOKIE}={self.server.token}; HttpOnly; SameSite=Strict; Path=/"
            self._send(
                HTTPStatus.SEE_OTHER,
                b"",
                "text/plain",
                {"Location": path + (f"?{rest}" if rest else ""), "Set-Cookie": cookie},
            )
            return
        data = self.server.data
        if path in ("/", "/queue"):
            self._send(HTTPStatus.OK, self.server.pages["index"], "text/html; charset=utf-8")
        elif path.startswith("/traces/") and len(path) > len("/traces/"):
            self._send(HTTPStatus.OK, self.server.pages["trace"], "text/html; charset=utf-8")
        elif path == "/favicon.ico":
            self._send(HTTPStatus.NO_CONTENT, b"", "image/x-icon")
        elif path in self.server.assets:
            body, kind = self.server.assets[path]
            self._send(HTTPStatus.OK, body, kind)
        elif path == "/api/summary":
            summary = dict(data.summary())
            summary["annotator"] = self.server.annotator
            self._json(HTTPStatus.OK, summary)
        elif path == "/api/distributions":
            self._json(HTTPStatus.OK, data.distributions())
        elif path == "/api/queue":
            annotator = self._annotator(query)
            items = data.queue_items(annotator)
            self._json(HTTPStatus.OK, {"total": len(items), "items": items})
        elif path == "/api/traces":
            try:
                offset = int(query.get("offset", "0"))
                limit = int(query.get("limit", "50"))
                result = data.list_traces(
                    TraceFilter.from_query(query),
                    offset=offset,
                    limit=limit,
                    annotator=self._annotator(query),
                )
            except ValueError:
                self._error(HTTPStatus.BAD_REQUEST, "offset and limit must be integers")
                return
            except BadRequest as exc:
                self._error(HTTPStatus.BAD_REQUEST, str(exc))
                return
            self._json(HTTPStatus.OK, result)
        elif path.startswith("/api/traces/"):
            trace_id = unquote(path[len("/api/traces/") :])
            try:
                detail = data.detail(trace_id, self._annotator(query))
            except KeyError:
                self._error(HTTPStatus.NOT_FOUND, "unknown trace_id")
                return
            self._json(HTTPStatus.OK, detail)
        else:
            self._error(HTTPStatus.NOT_FOUND, "not found")

    def _post(self) -> None:
        if not self._host_ok():
            self._error(HTTPStatus.FORBIDDEN, "unexpected Host header")
            return
        path, query = self._parse()
        length = int(self.headers.get("Content-Length") or 0)
        if length > _MAX_BODY:
            self._error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "body too large")
            self.close_connection = True
            return
        raw = self.rfile.read(length) if length > 0 else b""
        if not self._token_ok(query)[0]:
            self._error(HTTPStatus.FORBIDDEN, "missing or wrong access token")
            return
        origin = self.headers.get("Origin")
        if (
            self.headers.get(WRITE_HEADER) != "1"
            or (
                origin is not None
                and origin.removeprefix("http://") not in self.server.allowed_hosts
            )
            or not self.headers.get("Content-Type", "").startswith("application/json")
        ):
            self._error(
                HTTPStatus.FORBIDDEN,
                f"writes need JSON, the header {WRITE_HEADER}: 1 and this server's origin",
            )
            return
        if path != "/api/labels":
            self._error(HTTPStatus.NOT_FOUND, "not found")
            return
        try:
            body = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            self._error(HTTPStatus.BAD_REQUEST, "the body is not JSON")
            return
        try:
            record = self.server.data.add_label(body, self.server.annotator)
        except BadRequest as exc:
            self._error(HTTPStatus.BAD_REQUEST, str(exc))
            return
        except MisstepError as exc:
            self._error(HTTPStatus.INTERNAL_SERVER_ERROR, f"not stored: {exc}")
            return
        self._json(HTTPStatus.OK, {"stored": record})
