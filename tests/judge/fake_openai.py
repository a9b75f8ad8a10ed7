"""A real OpenAI-compatible HTTP server for tests: answers chat completions from the schema.

It runs on 127.0.0.1 (a free port) in a background thread of the test process, or as its own
process (``python tests/judge/fake_openai.py --port 0`` prints ``PORT <n>``) for the benchmark.
The real ``openai`` client talks to it over HTTP; nothing is patched.

By default every ``POST /v1/chat/completions`` gets a valid label built from
``response_format.json_schema.schema``. Faults, chosen per server (``server.fault``), per request
number (``server.faults_by_request``), or per trace by a marker in the trace text
(``FAKE_FAULT:<mode>``, optionally ``FAKE_FAULT:<mode>x<n>`` for the first n requests of that
trace only), are:

- ``500`` / ``503``: that HTTP status with an error body;
- ``delay``: sleep ``server.delay_s`` before answering (beyond the client's timeout);
- ``malformed``: content that is not JSON;
- ``truncated``: half of a valid reply with ``finish_reason: "length"``;
- ``schema``: valid JSON that violates the schema (unknown error_type, confidence 7);
- ``bad_evidence``: a valid label whose evidence is not in the trace;
- ``401``: HTTP 401, as a server whose API key does not match;
- ``trickle``: a valid reply sent one byte every ``server.trickle_s`` seconds (for at most
  ``server.trickle_max_s``), so no single read ever times out. ``server.trickle_get`` makes
  ``GET /v1/models`` trickle too;
- ``loop``: like vLLM under a JSON schema with greedy decoding, the reply loops on whitespace
  until the token limit (``finish_reason: "length"``) when the request's temperature is 0;
  a request with a temperature above 0 gets a valid reply;
- ``too_long``: HTTP 400 with vLLM's message for a prompt longer than the context.

Like vLLM, it keeps the schema's property order in the reply, fills every sampling field a
request leaves unset from the model's defaults (``MODEL_DEFAULTS``, e.g. a repetition penalty
of 1.05; what it used is in ``server.effective_sampling``), draws ``n`` choices, returns
``server.reasoning`` (when set) in ``message.reasoning``, answers ``GET /version`` at the root
and lists ``max_model_len`` in ``GET /v1/models``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeOpenAIServer"]

FAULT_MODES = (
    "500",
    "503",
    "401",
    "delay",
    "malformed",
    "truncated",
    "schema",
    "bad_evidence",
    "trickle",
    "loop",
    "too_long",
)
MODEL_DEFAULTS: dict[str, float | int] = {
    "top_p": 0.8,
    "top_k": 20,
    "min_p": 0.0,
    "repetition_penalty": 1.05,
    "presence_penalty": 0.0,
    "frequency_penalty": 0.0,
}
"""What the fake's model's generation_config.json would give a request that sets nothing."""
VERSION = "0.33.0-fake"
MAX_MODEL_LEN = 4096
_MARKER = re.compile(r"FAKE_FAULT:([a-z0-9_]+?)(?:x(\d+))?\b")
# Step prefixes a prompt may put before each numbered step; stripped to find verbatim trace text.
_STEP_PREFIX = re.compile(r"^\s*(?:\[\d+\]|\(\d+\)|step\s*\d+\s*[:.)]|\d+\s*[:.)])\s*", re.I)


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """Follow ``$ref`` and take the first non-null branch of ``anyOf``."""
    while True:
        if "$ref" in node:
            name = node["$ref"].rsplit("/", 1)[-1]
            node = schema.get("$defs", schema.get("definitions", {}))[name]
        elif "anyOf" in node:
            branches = [b for b in node["anyOf"] if b.get("type") != "null"]
            node = branches[0] if branches else node["anyOf"][0]
        else:
            return node


def _user_text(messages: list[dict[str, Any]]) -> str:
    """All user messages joined, so a trace's fault marker also holds for a re-ask."""
    parts = []
    for message in messages:
        if message.get("role") == "user":
            content = message.get("content")
            parts.append(content if isinstance(content, str) else json.dumps(content))
    return "\n".join(parts)


def default_evidence(user_text: str) -> str:
    """A verbatim piece of the trace: the longest of its last lines, without a step prefix.
    The trace is what lies between ``<trace>`` and ``</trace>`` when the prompt fences it."""
    start = user_text.rfind("<trace>")
    if start >= 0:
        end = user_text.find("</trace>", start)
        user_text = user_text[start + len("<trace>") : end if end >= 0 else None]
    lines = [_STEP_PREFIX.sub("", line).strip() for line in user_text.splitlines()]
    candidates = [
        line
        for line in lines[-40:]
        if len(line.split()) >= 2 and not line.startswith(("```", "<", "---", "#"))
    ]
    if not candidates:
        return ""
    best = max(candidates, key=len)
    return best[:60].strip()


class FakeOpenAIServer:
    """The fake server. Use as a context manager or call ``start()`` / ``stop()``."""

    def __init__(self, *, models: tuple[str, ...] = ("fake-judge",), port: int = 0) -> None:
        self.models = list(models)
        self.fault: str | None = None
        """Fault applied to every request (one of FAULT_MODES), or None."""
        self.faults_by_request: dict[int, str] = {}
        """Fault for the n-th request (1-based) received by the server."""
        self.fail_first = 0
        """The first n chat requests answer 500, later ones succeed."""
        self.delay_s = 3.0
        """How long ``delay`` sleeps."""
        self.trickle_s = 0.2
        """Seconds between two bytes of a ``trickle`` reply."""
        self.trickle_max_s = 20.0
        """A trickle stops after this long, so that a test always ends."""
        self.trickle_get = False
        """``GET /v1/models`` trickles too."""
        self.error_type: str | Callable[[dict[str, Any]], str] | None = None
        """error_type to answer (or a function of the request body); None takes the schema
        enum's first value."""
        self.fields: Callable[[dict[str, Any]], dict[str, Any]] | None = None
        """Field values to put into the reply (a function of the request body)."""
        self.sample_error_type: Callable[[dict[str, Any], int], str] | None = None
        """error_type of choice i of a request (for ``n`` > 1); overrides ``error_type``."""
        self.evidence: Callable[[str], str] = default_evidence
        """Builds the evidence quote from the user message."""
        self.record = True
        """Keep every request body in ``requests`` (off for the benchmark)."""
        self.service_s = 0.0
        """Seconds each request holds one of ``slots`` (a GPU's time per request, for the
        several-servers benchmark)."""
        self._slots: threading.Semaphore | None = None
        self.requests: list[dict[str, Any]] = []
        self.effective_sampling: list[dict[str, Any]] = []
        """The sampling each chat request ran with: its own fields, the rest from defaults."""
        self.reasoning: str | None = None
        """Reasoning text returned in ``message.reasoning`` (a reasoning parser's output)."""
        self.count = 0
        self._marker_counts: dict[str, int] = {}
        self._lock = threading.Lock()
        self._port = port
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> FakeOpenAIServer:
        server = self

        class Handler(_Handler):
            fake = server

        self._httpd = _QuietServer(("127.0.0.1", self._port), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def reset(self) -> None:
        """Forget requests and faults between phases of a test."""
        with self._lock:
            self.requests.clear()
            self.effective_sampling.clear()
            self.count = 0
            self._marker_counts.clear()
        self.fault = None
        self.faults_by_request = {}
        self.fail_first = 0
        self.error_type = None
        self.fields = None
        self.sample_error_type = None
        self.evidence = default_evidence
        self.reasoning = None

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if "messages" in r]

    # -- answering -------------------------------------------------------------------------
    def _choose_fault(self, number: int, user_text: str) -> str | None:
        if number <= self.fail_first:
            return "500"
        if number in self.faults_by_request:
            return self.faults_by_request[number]
        match = _MARKER.search(user_text)
        if match:
            mode, times = match.group(1), match.group(2)
            if times is None:
                return mode
            with self._lock:
                seen = self._marker_counts.get(match.group(0), 0)
                self._marker_counts[match.group(0)] = seen + 1
            return mode if seen < int(times) else None
        return self.fault

    def set_capacity(self, slots: int, service_s: float) -> None:
        """Serve at most ``slots`` requests at once, each taking ``service_s`` seconds: a
        server with a throughput ceiling of ``slots / service_s`` requests per second."""
        self._slots = threading.Semaphore(slots)
        self.service_s = service_s

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if self._slots is not None:
            with self._slots:
                time.sleep(self.service_s)
        with self._lock:
            self.count += 1
            number = self.count
            if self.record:
                self.requests.append(body)
        messages = body.get("messages", [])
        user_text = _user_text(messages)
        sampling = {k: body.get(k, v) for k, v in MODEL_DEFAULTS.items()}
        with self._lock:
            self.effective_sampling.append(sampling)
        fault = self._choose_fault(number, user_text)
        if fault == "too_long":
            message = (
                f"This model's maximum context length is {MAX_MODEL_LEN} tokens. However, you "
                f"requested {MAX_MODEL_LEN + 1000} tokens in the messages. Please reduce the "
                "length of the messages."
            )
            return 400, {"error": {"message": message, "type": "BadRequestError", "code": 400}}
        if fault == "loop" and float(body.get("temperature", 1.0)) > 0:
            fault = None  # sampling breaks the whitespace loop
        if fault in ("500", "503"):
            return int(fault), {"error": {"message": "fake server error", "type": "server_error"}}
        if fault == "401":
            return 401, {"error": {"message": "invalid API key", "type": "auth_error"}}
        if fault == "delay":
            time.sleep(self.delay_s)
        label = self._label(body, user_text)
        if self.fields is not None:
            label.update(self.fields(body))
        finish = "stop"
        if fault == "schema":
            label["error_type"] = "not_a_category"
            label["confidence"] = 7
        elif fault == "bad_evidence":
            label["evidence"] = "a sentence that appears nowhere in the trace"
        content = json.dumps(label)
        if fault == "malformed":
            content = "I think the error is arithmetic, in step 2."
        elif fault == "truncated":
            content, finish = content[: len(content) // 2], "length"
        elif fault == "loop":
            content, finish = '{"first_error_step": 0,' + " " * 200, "length"
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if self.reasoning is not None:
            message["reasoning"] = self.reasoning
        reply: dict[str, Any] = {
            "id": f"chatcmpl-{number}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", self.models[0]),
            "choices": [
                {"index": i, "message": self._sample(message, body, i), "finish_reason": finish}
                for i in range(max(1, int(body.get("n", 1))))
            ],
            "usage": {
                "prompt_tokens": len(user_text) // 4,
                "completion_tokens": 40,
                "total_tokens": len(user_text) // 4 + 40,
            },
        }
        if fault == "trickle":
            reply["_trickle"] = True  # popped by the handler, never sent
        return 200, reply

    def _sample(self, message: dict[str, Any], body: dict[str, Any], i: int) -> dict[str, Any]:
        """Choice i of a request: the same message, with its own error type when asked."""
        if self.sample_error_type is None:
            return dict(message)
        label = json.loads(message["content"])
        label["error_type"] = self.sample_error_type(body, i)
        return {**message, "content": json.dumps(label)}

    def _label(self, body: dict[str, Any], user_text: str) -> dict[str, Any]:
        fmt = body.get("response_format") or {}
        schema = (fmt.get("json_schema") or {}).get("schema") or {}
        label: dict[str, Any] = {}
        for name, prop in (schema.get("properties") or {}).items():
            node = _resolve(schema, prop)
            if name == "error_type" and self.error_type is not None:
                chosen = self.error_type
                label[name] = chosen if isinstance(chosen, str) else chosen(body)
            elif "enum" in node:
                label[name] = node["enum"][0]
            elif "const" in node:
                label[name] = node["const"]
            elif name == "evidence":
                label[name] = self.evidence(user_text)
            elif node.get("type") == "integer":
                label[name] = max(0, int(node.get("minimum", 0)))
            elif node.get("type") == "number":
                label[name] = 0.9 if node.get("maximum", 1) >= 0.9 else node.get("maximum", 0)
            elif node.get("type") == "boolean":
                label[name] = False
            else:
                label[name] = "The fake judge always blames this step."
        return label


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that timed out or was killed resets its connection: expected here.
        del request, client_address


class _Handler(BaseHTTPRequestHandler):
    fake: FakeOpenAIServer
    protocol_version = "HTTP/1.1"  # keep-alive, as a real server

    def log_message(self, format: str, *args: Any) -> None:  # silence stderr
        del format, args

    def _send(self, status: int, payload: dict[str, Any], trickle: bool = False) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        # The client may have given up (timeout); nothing to do then.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            if not trickle:
                self.wfile.write(data)
                return
            end = time.monotonic() + self.fake.trickle_max_s
            for byte in data:
                if time.monotonic() > end:
                    break
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(self.fake.trickle_s)

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/v1/models":
            data = [
                {"id": m, "object": "model", "owned_by": "fake", "max_model_len": MAX_MODEL_LEN}
                for m in self.fake.models
            ]
            self._send(200, {"object": "list", "data": data}, trickle=self.fake.trickle_get)
        elif self.path.rstrip("/") == "/version":
            self._send(200, {"version": VERSION})
        else:
            self._send(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length)
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        try:
            body = json.loads(raw)
        except json.JSONDecodeError:
            self._send(400, {"error": {"message": "body is not JSON"}})
            return
        status, payload = self.fake.answer(body)
        self._send(status, payload, trickle=payload.pop("_trickle", False))


def main() -> None:
    """Run the server as its own process (for the benchmark): prints ``PORT <n>`` and serves."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--slots", type=int, default=0, help="requests served at once (0: any)")
    parser.add_argument("--service-s", type=float, default=0.0, help="seconds per request")
    args = parser.parse_args()
    server = FakeOpenAIServer(port=args.port)
    server.record = False
    if args.slots:
        server.set_capacity(args.slots, args.service_s)
    server.start()
    print(f"PORT {server.base_url.rsplit(':', 1)[1].split('/')[0]}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
