"""A scripted HTTP server on 127.0.0.1 that speaks whatever JSON a test tells it to.

The real SDKs (anthropic, openai) are pointed at it through ``base_url``, so their request
building, retries, timeouts and response parsing all run for real; only the far end is fake.

    with FakeServer() as srv:
        srv.script(Reply(429, {...}, headers={"retry-after-ms": "1"}), Reply(200, body))
        llm = AnthropicLLM("m", api_key="k", base_url=srv.url)
        ...
        srv.requests[0].headers["x-api-key"]

Replies are consumed in order; once the script runs out, the last reply repeats (handy for
"always 500"). Every request is recorded (method, path, headers, parsed JSON body). A
``responder`` (a function of the recorded request) replaces the script when set, for servers
whose reply depends on what was asked (one faulty chunk among good ones).

Streaming (SSE): a ``Reply`` with ``stream`` set sends those events as ``data:`` lines, one every
``piece_delay_s``, then ``data: [DONE]`` (``chat_stream`` builds one for Chat Completions). A
request that asks for ``"stream": true`` and is answered with a scripted ``chat_ok`` body gets
that body as a stream (one event per word), so the tests written for the non-streamed wire
format also drive the streamed path. ``streams`` records, per streamed reply, how many events
were written and whether the client hung up before the end.
"""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: Any = None  # dict/list -> JSON; str/bytes -> sent as is (for malformed bodies)
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"
    stream: tuple[Any, ...] | None = None  # SSE events (dict -> JSON, str as is); sent after delay_s
    piece_delay_s: float = 0.0  # between two SSE events
    done: bool = True  # end with "data: [DONE]"; False = the stream just stops (a broken one)


@dataclass
class StreamLog:
    events_sent: int = 0
    hung_up: bool = False  # the client closed the connection before [DONE]


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    raw: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.raw) if self.raw else None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # a handler stuck in a long delay must not hold up shutdown
    fake: "FakeServer"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # keep pytest output clean
        return

    def _handle(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        fake = self.server.fake
        reply = fake._record_and_pick(
            Recorded(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, raw)
        )
        if reply.delay_s:
            time.sleep(reply.delay_s)
        if reply.stream is None and reply.status == 200 and _asks_stream(raw):
            reply = as_stream(reply)
        if reply.stream is not None:
            self._send_stream(reply)
            return
        if isinstance(reply.body, (dict, list)):
            payload = json.dumps(reply.body).encode()
        elif isinstance(reply.body, str):
            payload = reply.body.encode()
        else:
            payload = reply.body or b""
        try:
            self.send_response(reply.status)
            self.send_header("content-type", reply.content_type)
            self.send_header("content-length", str(len(payload)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout test): nothing left to do

    def _send_stream(self, reply: Reply) -> None:
        log = StreamLog()
        self.server.fake.streams.append(log)
        self.close_connection = True  # no content-length: the body ends when the connection does
        try:
            self.send_response(reply.status)
            self.send_header("content-type", "text/event-stream")
            self.send_header("connection", "close")
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            events = [*(reply.stream or ()), *(["[DONE]"] if reply.done else [])]
            for i, event in enumerate(events):
                data = event if isinstance(event, str) else json.dumps(event)
                self.wfile.write(f"data: {data}\n\n".encode())
                self.wfile.flush()
                log.events_sent += 1
                if reply.piece_delay_s and i + 1 < len(events):
                    time.sleep(reply.piece_delay_s)
        except (BrokenPipeError, ConnectionResetError):
            log.hung_up = True

    do_GET = do_POST = do_HEAD = _handle


def _asks_stream(raw: bytes) -> bool:
    try:
        body = json.loads(raw) if raw else None
    except ValueError:
        return False
    return isinstance(body, dict) and body.get("stream") is True


class FakeServer:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._script: list[Reply] = []
        self._last: Reply = Reply(599, {"error": "no reply scripted"})
        self.requests: list[Recorded] = []
        self.responder: Callable[[Recorded], Reply] | None = None
        self.streams: list[StreamLog] = []
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.fake = self
        # a short poll interval keeps shutdown (one per test) at ~20 ms instead of 0.5 s
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    def _record_and_pick(self, rec: Recorded) -> Reply:
        with self._lock:
            self.requests.append(rec)
            if self.responder is not None:
                return self.responder(rec)
            if self._script:
                self._last = self._script.pop(0)
            return self._last

    def __enter__(self) -> "FakeServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


# --- success bodies in each API's wire format ---------------------------------------------------
def anthropic_ok(text: str, tin: int = 11, tout: int = 7) -> dict[str, Any]:
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-test-20260101",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": tin, "output_tokens": tout},
    }


def responses_ok(text: str, tin: int = 11, tout: int = 7, status: str = "completed") -> dict[str, Any]:
    return {
        "id": "resp_01",
        "object": "response",
        "created_at": 1700000000,
        "status": status,
        "model": "gpt-test",
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {
                "type": "message",
                "id": "msg_1",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            },
        ],
        "usage": {
            "input_tokens": tin,
            "output_tokens": tout,
            "total_tokens": tin + tout,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def chat_ok(text: str, tin: int = 11, tout: int = 7) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "llama-test",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": tin, "completion_tokens": tout, "total_tokens": tin + tout},
    }


def chat_stream(
    pieces: list[str], tin: int | None = 11, tout: int | None = None, *, delay_s: float = 0.0,
    piece_delay_s: float = 0.0, timings: dict[str, Any] | None = None, model: str = "llama-test",
    finish: bool = True,
) -> Reply:
    """A streamed Chat Completion: one event per piece, a finish event, then a usage event
    (``stream_options.include_usage``) unless ``tin`` is None. ``tout`` defaults to the number of
    pieces (one piece = one token, as llama.cpp streams). ``timings`` is llama.cpp's extra field."""
    def chunk(choices: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1700000000,
                "model": model, "choices": choices, **extra}

    events = [chunk([{"index": 0, "delta": {"role": "assistant", "content": p}, "finish_reason": None}])
              for p in pieces]
    if not finish:  # the connection drops mid-reply: no finish event, no usage, no [DONE]
        return Reply(200, None, delay_s=delay_s, stream=tuple(events), piece_delay_s=piece_delay_s, done=False)
    events.append(chunk([{"index": 0, "delta": {}, "finish_reason": "stop"}]))
    if tin is not None:
        n_out = len(pieces) if tout is None else tout
        extra: dict[str, Any] = {"usage": {"prompt_tokens": tin, "completion_tokens": n_out, "total_tokens": tin + n_out}}
        if timings:
            extra["timings"] = timings
        events.append(chunk([], **extra))
    return Reply(200, None, delay_s=delay_s, stream=tuple(events), piece_delay_s=piece_delay_s)


def as_stream(reply: Reply) -> Reply:
    """A scripted non-streamed Chat Completion body sent as the stream a server would send."""
    body = reply.body
    try:
        text = body["choices"][0]["message"]["content"]
    except (TypeError, KeyError, IndexError):
        return reply  # not a chat completion: send it as scripted (a faulty server)
    if not isinstance(text, str):
        return reply
    pieces = [p for p in text.replace("\n", "\n\x00").replace(" ", " \x00").split("\x00") if p]
    usage = body.get("usage") or {}
    return chat_stream(pieces, usage.get("prompt_tokens"), usage.get("completion_tokens"),
                       model=body.get("model", "llama-test"))
