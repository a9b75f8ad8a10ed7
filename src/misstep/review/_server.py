"""The review app's HTTP server: a Starlette app served by uvicorn, and the security every
request goes through.

Why Starlette and uvicorn (not aiohttp): the routing, header encoding, HTTP parsing
(``h11``: a malformed ``Content-Length`` is a 400 before any of our code runs) and the
threadpool for the synchronous, numpy-bound data layer come from two small, well-kept
libraries that FastAPI (Argilla, Docent) is built on, with a test client and ASGI
middleware for free; aiohttp would bring its own HTTP stack and an async-only handler
style for a data layer that is synchronous anyway.

- Access is by token, and a token is a grant (``Grant``): one shared token whose holders say
  their names (as before), or one token per person (``--annotators``), bound to that person:
  the server takes the annotator from the token, never from the request, and refuses a
  request that names someone else. Adjudication is a role the server grants with a token of
  its own (``--adjudicate``, ``--adjudicators``): the adjudication views and decisions answer
  only that token.
- The access token is never a cookie: the printed URL carries it in the fragment
  (``/#token=...``, which browsers never send), the page keeps it in the tab's
  ``sessionStorage`` and in ``localStorage`` (both per origin; the latter for tabs the person
  opens from the app) and sends ``Authorization: Bearer TOKEN`` with every API call. Pages and
  static files are public (they are the package's own files); every ``/api/`` route needs the
  token. A cookie of another local app is never read, so it can lock nobody out.
- Writes (POST) need JSON and, when the browser sends one, an ``Origin`` equal to the
  request's own ``Host`` (``http://`` + Host): right behind ``--host 0.0.0.0`` as on
  127.0.0.1. A cross-site page cannot send the ``Authorization`` header without a CORS
  preflight, which this server never allows.
- On a loopback address the ``Host`` header must name the server (no DNS rebinding).
- There is no redirect, so no request text is ever copied into a response header.
- A request must arrive whole (headers and body) within ``request_timeout`` seconds of the
  connection opening or of the previous answer, else the connection is dropped: one asyncio
  task per connection, no thread, so 150 stalled uploads delay nobody.
- A body JSON cannot hold (nested past 1024 levels, a lone surrogate) is a 400; an error
  nobody foresaw is a 500 in JSON, its traceback in the log. At the file-descriptor limit the
  server waits for descriptors quietly (``_AcceptErrors``).
- Pages are static files bundled in the package; data reaches them only as JSON that the
  script puts into the page as text (``textContent``) or through KaTeX (bundled), under a
  strict Content-Security-Policy (scripts, styles and fonts from this server only, nothing
  inline, no network elsewhere).
- No part of a request names a file: static files come from a fixed table read at start-up,
  people's labels go to ``RUN_DIR/human/<validated annotator>.jsonl``.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import resource
import secrets
import socket
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import orjson
import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.convertors import PathConvertor, register_url_convertor
from starlette.datastructures import MutableHeaders
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from misstep.errors import MisstepError, OptionError
from misstep.labels import ADJUDICATOR, check_annotator
from misstep.review._data import BadRequest, ReviewData, TraceFilter

__all__ = ["CSP", "REQUEST_TIMEOUT", "Grant", "ReviewServer", "make_grants", "make_server"]

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "font-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; "
    "base-uri 'none'"
)
REQUEST_TIMEOUT = 30.0
"""Seconds a request may take to arrive whole (headers and body) before its connection is
dropped."""
_KINDS = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".woff2": "font/woff2",
}
_PAGES = {"index": "index.html", "trace": "trace.html", "adjudicate": "adjudicate.html"}
_MAX_BODY = 64 * 1024
_LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")
_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}
_log = logging.getLogger("misstep.review")


def _asset(name: str) -> bytes:
    return (resources.files("misstep.review") / "static" / name).read_bytes()


def _static_table() -> dict[str, tuple[bytes, str]]:
    """``/static/...`` -> (bytes, content type) of every bundled script, style sheet and font
    (app.js, style.css, KaTeX's build and fonts), read once at start-up: no request path
    ever reaches the file system."""
    root = resources.files("misstep.review") / "static"
    table: dict[str, tuple[bytes, str]] = {}
    folders = [("", root)]
    while folders:
        prefix, folder = folders.pop()
        for entry in folder.iterdir():
            if entry.is_dir():
                folders.append((f"{prefix}{entry.name}/", entry))
            elif (kind := _KINDS.get(Path(entry.name).suffix)) is not None:
                table[f"/static/{prefix}{entry.name}"] = (entry.read_bytes(), kind)
    return table


_ANNOTATOR = "annotator"
"""The role of a token that reads the traces and labels them (an ``ADJUDICATOR``'s also
adjudicates)."""


@dataclass(frozen=True)
class Grant:
    """What one access token lets its holder do."""

    token: str
    """The secret (in the printed URL's fragment, sent as ``Authorization: Bearer``)."""
    name: str | None
    """The person it is bound to: every label read or written with it is theirs, whatever
    the request says. None: a shared token, whose requests say whose labels they are."""
    role: str = _ANNOTATOR
    """``annotator`` (the traces, the queue, one's own labels and reveals) or ``adjudicator``
    (all that, and the adjudication views and decisions)."""

    @property
    def adjudicates(self) -> bool:
        """Whether the token may read disagreements and store decisions."""
        return self.role == ADJUDICATOR

    @property
    def who(self) -> str:
        """How the token is named to people: ``alice (annotator)``, ``adjudicator``."""
        return f"{self.name} ({self.role})" if self.name else self.role


def make_grants(
    *,
    token: str | None = None,
    annotators: Sequence[str] = (),
    adjudicators: Sequence[str] = (),
    adjudicate: bool = False,
) -> list[Grant]:
    """The tokens of a server: one per annotator named (else one shared, ``token`` or a
    random one), then with ``adjudicate`` one per adjudicator named (else one shared). Names
    are checked (a file name each; none twice in one role)."""

    def named(names: Sequence[str], option: str) -> list[str]:
        for name in names:
            check_annotator(name, option)
        twice = sorted({n for n in names if list(names).count(n) > 1})
        if twice:
            raise OptionError(option=option, value=",".join(twice), allowed="each name once")
        return list(names)

    people = named(annotators, "--annotators")
    judges = named(adjudicators, "--adjudicators")
    if judges and not adjudicate:
        raise OptionError(option="--adjudicators", value="given", allowed="with --adjudicate")

    def fresh() -> str:
        return secrets.token_urlsafe(32)

    grants = [Grant(fresh(), n) for n in people] or [Grant(token or fresh(), None)]
    if adjudicate:
        grants += [Grant(fresh(), n, ADJUDICATOR) for n in judges] or [
            Grant(fresh(), None, ADJUDICATOR)
        ]
    return grants


class _AnyText(PathConvertor):
    """A path parameter of any characters, line breaks included (a trace id is untrusted
    text; Starlette's ``path`` stops at a line break)."""

    regex = r"[\s\S]*"


register_url_convertor("anytext", _AnyText())


class _SecurityHeaders:
    """ASGI middleware: the security headers on every answer, Starlette's own (a 405, a 404
    for a path no route knows) included."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in _HEADERS.items():
                    if name not in headers:
                        headers[name] = value
            await send(message)

        await self.app(scope, receive, sending)


class _Error(Exception):
    """An answer other than 200, with a message for the person."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class _Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline for each request: it must arrive whole (headers
    and body) within ``REQUEST_TIMEOUT`` of the connection or of the previous answer, else the
    connection is closed. (uvicorn's own keep-alive timeout only covers the idle time after an
    answer; a client that sends half a request would hold its connection forever.)"""

    request_timeout = REQUEST_TIMEOUT
    _deadline: asyncio.TimerHandle | None = None

    def _arm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline = self.loop.call_later(self.request_timeout, self._expire)

    def _expire(self) -> None:
        cycle = self.cycle
        # Still waiting for a request's headers or body: drop. A request being answered is
        # left alone (the data layer may take seconds for the distributions).
        waiting = cycle is None or cycle.more_body or cycle.response_complete
        if waiting and not self.transport.is_closing():
            self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        super().connection_lost(exc)


_ACCEPT_BACKLOG = 128
"""The listening socket's backlog, and so (asyncio passes it on) the most ``accept`` calls
asyncio makes on one wake-up of the listening socket."""
_ACCEPT_REPORT_EVERY = 60.0
"""Seconds between two warnings that connections wait for a file descriptor."""


class _AcceptErrors:
    """The event loop's exception handler: "socket.accept() out of system resource" (the
    process is at its file-descriptor limit) becomes one warning a minute with a count instead
    of a traceback for each try.

    asyncio (before the fix of cpython#151615, in the Pythons misstep supports) keeps calling
    ``accept`` after the first EMFILE for the rest of its loop over the backlog, logging a
    traceback and scheduling a retry each time: with uvicorn's backlog of 2048, megabytes of
    tracebacks a second and a core kept busy. The backlog is 128 here (``_ACCEPT_BACKLOG``)
    and this handler rate-limits the report; the waiting connections are accepted as soon as
    descriptors free up (asyncio retries every second)."""

    def __init__(self, every: float = _ACCEPT_REPORT_EVERY) -> None:
        self.every = every
        self.missed = 0
        self.last: float | None = None

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if context.get("message") != "socket.accept() out of system resource":
            loop.default_exception_handler(context)
            return
        self.missed += 1
        now = loop.time()
        if self.last is None or now - self.last >= self.every:
            soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
            _log.warning(
                "out of file descriptors (ulimit -n: %s): new connections wait until others "
                "close (%d failed accept(s) since the last report; raise the limit with "
                "ulimit -n)",
                soft,
                self.missed,
            )
            self.last, self.missed = now, 0


class _Server(uvicorn.Server):
    """uvicorn's server with ``_AcceptErrors`` on its event loop."""

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        asyncio.get_running_loop().set_exception_handler(_AcceptErrors())
        await super().serve(sockets=sockets)


def _raise_file_limit() -> int:
    """Raise the soft limit on open files to the hard one (macOS starts at 256, Linux often
    at 1024, each connection takes one); returns the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 16)
    if soft == resource.RLIM_INFINITY or soft >= target:
        return soft
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError):  # macOS refuses more than kern.maxfilesperproc
        return soft
    return target


class ReviewServer:
    """The Starlette app, the uvicorn server that serves it, and what the routes share."""

    def __init__(
        self,
        data: ReviewData,
        *,
        host: str,
        port: int,
        grants: Sequence[Grant],
        annotator: str | None,
        request_timeout: float = REQUEST_TIMEOUT,
    ) -> None:
        self.data = data
        self.grants = list(grants)
        """Every token and what it lets its holder do; the first is an annotator's."""
        self.token = self.grants[0].token
        """The first token (the shared one, or the first annotator's)."""
        self.annotator = annotator
        self.assets = _static_table()
        self.pages = {key: _asset(name) for key, name in _PAGES.items()}
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        # IPPROTO_TCP named: asyncio sets TCP_NODELAY only on sockets that say so, and without
        # it a keep-alive request waits for the delayed ACK of the answer's headers (40 ms).
        self.socket = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.socket.bind((host, port))
        except OSError as exc:
            self.socket.close()
            raise OptionError(
                option="--host/--port",
                value=f"{host}:{port}",
                allowed="an address of this machine and a free port (0: any)",
                hint=f"cannot bind: {exc.strerror or exc}",
            ) from None
        # Listening now: a client that reads the printed URL may connect before uvicorn has
        # started; its connection waits in the backlog instead of being refused.
        self.socket.listen(_ACCEPT_BACKLOG)
        self.host = host
        self.port = int(self.socket.getsockname()[1])
        self.wildcard = host in ("0.0.0.0", "::", "")
        self.loopback = host in _LOOPBACK or host.startswith("127.")
        shown = f"[{host}]" if ":" in host else host
        self.allowed_hosts = {f"{shown}:{self.port}"}
        if self.loopback:
            self.allowed_hosts |= {f"{h}:{self.port}" for h in _LOOPBACK}
        protocol = type("_TimedProtocol", (_Protocol,), {"request_timeout": request_timeout})
        self.app = Starlette(routes=self._routes(), middleware=[Middleware(_SecurityHeaders)])
        self.config = uvicorn.Config(
            self.app,
            http=protocol,
            # asyncio's own loop even where uvloop is installed: _AcceptErrors handles its
            # accept errors.
            loop="asyncio",
            backlog=_ACCEPT_BACKLOG,
            lifespan="off",
            log_config=None,
            access_log=False,
            timeout_keep_alive=5,
            timeout_graceful_shutdown=2,
        )
        self.server = _Server(self.config)
        self._thread: threading.Thread | None = None

    # --- addresses ----------------------------------------------------------------------

    @property
    def origin(self) -> str:
        """``http://host:port`` to open (127.0.0.1 for a wildcard bind)."""
        return self.origin_for(None)

    def origin_for(self, name: str | None) -> str:
        """``http://host:port`` of this server (a wildcard bind: 127.0.0.1, or ``name``)."""
        host = name or ("127.0.0.1" if self.host == "0.0.0.0" else self.host)
        if host in ("::", ""):
            host = "::1"
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{self.port}"

    @property
    def url(self) -> str:
        """The address to open, token in the fragment (never sent to any server)."""
        return f"{self.origin}/#token={self.token}"

    def url_of(self, grant: Grant, name: str | None = None) -> str:
        """The address that opens the app with ``grant``'s token (``name``: the host to
        name, for a wildcard bind)."""
        return f"{self.origin_for(name)}/#token={grant.token}"

    def token_of(self, name: str | None = None, role: str = _ANNOTATOR) -> str:
        """The token of ``name`` in ``role`` (None: the shared token of that role)."""
        for grant in self.grants:
            if grant.name == name and grant.role == role:
                return grant.token
        raise KeyError((name, role))

    def urls(self) -> list[str]:
        """Every address that reaches this server with the first token: the url, and with a
        wildcard bind the machine's name for other machines."""
        out = [self.url]
        if self.wildcard:
            out.append(self.url_of(self.grants[0], socket.gethostname()))
        return out

    # --- running --------------------------------------------------------------------------

    def serve_forever(self) -> None:
        """Serve until ``shutdown`` (or Ctrl-C in the main thread), with the soft limit on
        open files raised to the hard one."""
        _raise_file_limit()
        self.server.run(sockets=[self.socket])

    def start(self) -> None:
        """Serve from a daemon thread (tests, benchmarks); returns once it answers."""
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)
        self._thread.start()
        for _ in range(500):
            if self.server.started:
                return
            threading.Event().wait(0.01)

    def shutdown(self) -> None:
        """Stop serving (from another thread)."""
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)

    def server_close(self) -> None:
        """Release the socket and the text file."""
        self.socket.close()
        self.data.texts.close()

    # --- checks ---------------------------------------------------------------------------

    def _host_ok(self, request: Request) -> bool:
        return not self.loopback or request.headers.get("host", "") in self.allowed_hosts

    def _grant(self, request: Request) -> Grant | None:
        """The grant of the request's token (None: no token, or a wrong one). Every token is
        compared, each in constant time."""
        auth = request.headers.get("authorization", "")
        given = (auth[7:] if auth.startswith("Bearer ") else "").encode()
        found = None
        for grant in self.grants:
            if hmac.compare_digest(given, grant.token.encode()):
                found = grant
        return found

    def _person(self, grant: Grant, given: object) -> str | None:
        """Whose labels a request reads or writes: the token's person (a request naming
        anyone else is refused), else the name the request gives (checked), else
        ``--annotator``'s; None when nobody is named."""
        if given in (None, ""):
            given = None
        elif not isinstance(given, str):
            raise _Error(400, "annotator must be a name")
        if grant.name is not None:
            if given is not None and given != grant.name:
                raise _Error(
                    403,
                    f"this URL is {grant.name}'s: it reads and writes {grant.name}'s labels "
                    "only (open your own URL)",
                )
            return grant.name
        name = given or self.annotator
        if name is not None:
            try:
                check_annotator(name)
            except OptionError as exc:
                raise _Error(400, str(exc)) from None
        return name

    def _asked(self, request: Request, grant: Grant) -> str | None:
        """The person a GET asks as (``?annotator=``, checked against the token)."""
        return self._person(grant, request.query_params.get("annotator"))

    @staticmethod
    def _adjudicator(grant: Grant) -> None:
        if not grant.adjudicates:
            raise _Error(
                403,
                "adjudication is for the adjudicator's URL (misstep review --adjudicate "
                "prints it), not an annotator's",
            )

    async def _body(self, request: Request) -> Any:
        """The JSON body, read with a size limit; a bad one is a 4xx."""
        origin = request.headers.get("origin")
        host = request.headers.get("host", "")
        if origin is not None and origin != f"http://{host}":
            raise _Error(403, f"the Origin {origin!r} is not this server's (http://{host})")
        if not request.headers.get("content-type", "").startswith("application/json"):
            raise _Error(415, "writes need Content-Type: application/json")
        raw = bytearray()
        try:
            async for chunk in request.stream():
                raw += chunk
                if len(raw) > _MAX_BODY:
                    raise _Error(413, f"body too large (at most {_MAX_BODY} bytes)")
        except ClientDisconnect:
            raise _Error(400, "the client went away") from None
        try:
            # orjson, not json: a body nested deeper than 1024 levels or holding a lone
            # surrogate (which no label file could store) is a JSONDecodeError, not a
            # RecursionError or a failed write later.
            return orjson.loads(bytes(raw))
        except orjson.JSONDecodeError as exc:
            raise _Error(400, f"the body is not valid JSON: {exc}") from None

    # --- routes ---------------------------------------------------------------------------

    def _routes(self) -> list[Route]:
        def page(key: str) -> Callable[[Request], Awaitable[Response]]:
            async def answer(request: Request) -> Response:
                return self._respond(request, self.pages[key], "text/html; charset=utf-8")

            return answer

        async def static(request: Request) -> Response:
            found = self.assets.get(request.url.path)
            if found is None:
                return self._json(404, {"error": "not found"})
            return self._respond(request, found[0], found[1])

        async def favicon(request: Request) -> Response:
            return self._respond(request, b"", "image/x-icon", status=204)

        api = [
            Route("/api/summary", self._api(self._summary)),
            Route("/api/distributions", self._api(self._distributions)),
            Route("/api/queue", self._api(self._queue)),
            Route("/api/traces", self._api(self._traces)),
            Route("/api/traces/{trace_id:anytext}", self._api(self._detail)),
            Route("/api/disagreements", self._api(self._disagreements)),
            Route("/api/labels", self._api(self._add_label), methods=["POST"]),
            Route("/api/reveal", self._api(self._reveal), methods=["POST"]),
            Route("/api/adjudications", self._api(self._adjudicate), methods=["POST"]),
        ]
        return [
            Route("/", page("index")),
            Route("/queue", page("index")),
            Route("/adjudicate", page("adjudicate")),
            Route("/traces/{trace_id:anytext}", page("trace")),
            Route("/favicon.ico", favicon),
            Route("/static/{name:anytext}", static),
            *api,
            Route("/{rest:anytext}", self._not_found, methods=["GET", "HEAD", "POST", "PUT"]),
        ]

    async def _not_found(self, request: Request) -> Response:
        return self._json(404, {"error": "not found"})

    def _respond(self, request: Request, body: bytes, kind: str, status: int = 200) -> Response:
        if not self._host_ok(request):
            return self._json(403, {"error": "unexpected Host header"})
        return Response(body, status_code=status, media_type=kind, headers=_HEADERS)

    @staticmethod
    def _json(status: int, payload: Any) -> Response:
        body = json.dumps(payload, ensure_ascii=True, allow_nan=False).encode()
        return Response(
            body, status_code=status, media_type="application/json; charset=utf-8", headers=_HEADERS
        )

    def _api(
        self, handler: Callable[[Request, Grant], Awaitable[Any]]
    ) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            if not self._host_ok(request):
                return self._json(403, {"error": "unexpected Host header"})
            grant = self._grant(request)
            if grant is None:
                return self._json(
                    403,
                    {
                        "error": "missing or wrong access token: open the URL `misstep review` "
                        "printed (scripts: send Authorization: Bearer TOKEN)"
                    },
                )
            try:
                return self._json(200, await handler(request, grant))
            except _Error as exc:
                return self._json(exc.status, {"error": str(exc)})
            except BadRequest as exc:
                return self._json(400, {"error": str(exc)})
            except KeyError:
                return self._json(404, {"error": "unknown trace_id"})
            except MisstepError as exc:
                _log.error("not stored: %s", exc)
                return self._json(500, {"error": f"not stored: {exc}"})
            except Exception:  # a bug: still JSON for the page, the traceback to the log
                _log.exception("error answering %s %r", request.method, request.url.path)
                return self._json(500, {"error": "internal error (logged by the server)"})

        return endpoint

    async def _summary(self, request: Request, grant: Grant) -> Any:
        summary = dict(self.data.summary())
        summary["annotator"] = grant.name or self.annotator
        summary["you"] = {"name": grant.name, "role": grant.role, "who": grant.who}
        # The adjudication link is shown to the token that may adjudicate, and no other.
        summary["adjudicate"] = self.data.adjudicate_mode and grant.adjudicates
        return summary

    async def _distributions(self, request: Request, grant: Grant) -> Any:
        return await run_in_threadpool(self.data.distributions)

    # Opening a trace, a page of the list or the queue takes a millisecond or two of CPU: they
    # run on the event loop itself. A hop to a worker thread costs more than that on a loaded
    # machine (one more thread to schedule, and the GIL to pass). Work that can take longer (a
    # text search, a first sort, the distributions, a write and its fsync) goes to the pool.

    async def _queue(self, request: Request, grant: Grant) -> Any:
        q = request.query_params
        return self.data.queue_page(self._asked(request, grant), todo=q.get("todo") == "1")

    async def _traces(self, request: Request, grant: Grant) -> Any:
        q = request.query_params
        try:
            offset = int(q.get("offset", "0"))
            limit = int(q.get("limit", "50"))
        except ValueError:
            raise _Error(400, "offset and limit must be integers") from None
        f = TraceFilter.from_query(q)
        who = self._asked(request, grant)
        if self.data.is_quick(f):
            return self.data.list_traces(f, offset=offset, limit=limit, annotator=who)
        return await run_in_threadpool(
            self.data.list_traces, f, offset=offset, limit=limit, annotator=who
        )

    async def _detail(self, request: Request, grant: Grant) -> Any:
        trace_id = request.path_params["trace_id"]
        return self.data.detail(trace_id, self._asked(request, grant))

    async def _disagreements(self, request: Request, grant: Grant) -> Any:
        self._adjudicator(grant)
        return await run_in_threadpool(self.data.disagreements, self._asked(request, grant))

    async def _written(self, request: Request, grant: Grant) -> tuple[Any, str | None]:
        """A write's body and whose it is."""
        body = await self._body(request)
        return body, self._person(grant, body.get("annotator") if isinstance(body, dict) else None)

    async def _add_label(self, request: Request, grant: Grant) -> Any:
        body, who = await self._written(request, grant)
        record = await run_in_threadpool(self.data.add_label, body, who)
        return {"stored": record}

    async def _reveal(self, request: Request, grant: Grant) -> Any:
        body, who = await self._written(request, grant)
        return await run_in_threadpool(self.data.reveal, body, who)

    async def _adjudicate(self, request: Request, grant: Grant) -> Any:
        self._adjudicator(grant)
        body, who = await self._written(request, grant)
        record = await run_in_threadpool(self.data.adjudicate, body, who)
        return {"stored": record}


def make_server(
    data: ReviewData,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    token: str | None = None,
    annotator: str | None = None,
    annotators: Sequence[str] = (),
    adjudicators: Sequence[str] = (),
    request_timeout: float = REQUEST_TIMEOUT,
) -> ReviewServer:
    """Bind (``port`` 0: any free port) without serving yet; ``serve_forever`` serves.

    Tokens (``make_grants``): one per person of ``annotators`` (else one shared, ``token``
    or a random one, whose requests name their annotator, ``annotator`` by default); with
    ``data.adjudicate_mode``, one per person of ``adjudicators`` (else one shared)."""
    if annotator is not None and annotators:
        raise OptionError(
            option="--annotator",
            value=annotator,
            allowed="not with --annotators (each of their URLs names its person)",
        )
    grants = make_grants(
        token=token,
        annotators=annotators,
        adjudicators=adjudicators,
        adjudicate=data.adjudicate_mode,
    )
    return ReviewServer(
        data,
        host=host,
        port=port,
        grants=grants,
        annotator=annotator,
        request_timeout=request_timeout,
    )
