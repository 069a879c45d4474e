"""A loopback provider that speaks both batch protocols and both interactive endpoints, on the
scripted FakeServer (tests.support.fake_server), for the real openai and anthropic SDKs:

* OpenAI: POST /v1/files (multipart JSONL upload), POST /v1/batches, GET /v1/batches/{id},
  GET /v1/files/{id}/content (output and error files), POST /v1/responses (interactive);
* Anthropic: POST /v1/messages/batches, GET /v1/messages/batches/{id},
  GET /v1/messages/batches/{id}/results (JSONL), POST /v1/messages (interactive).

A batch stays in progress while ``hold`` is set; the first status call after that ends it. When
it ends, each request is answered by ``answer(chunk text)``, unless a word of ``faults`` is in its
chunk and that chunk has not failed before: then it errors or expires (once, like a provider's
bad hour). ``paid`` counts, per chunk text, the replies the provider billed (batch successes and
interactive calls); ``submitted`` counts batch requests per chunk text.
"""
from __future__ import annotations

import json
import re
import threading
from collections import Counter
from typing import Any, Callable

from tests.support.fake_server import FakeServer, Recorded, Reply, anthropic_ok, responses_ok

CREATED = "2026-01-01T00:00:00Z"
_LINE = re.compile(r'^\{"custom_id".*\}$', re.M)


def chunk_of(prompt: str) -> str:
    """The chunk text inside an extraction prompt."""
    return prompt.rsplit("Text: ", 1)[1].rsplit("\nTriples:", 1)[0]


def _prompt(body: dict[str, Any]) -> str:
    turns = body.get("messages") or body.get("input")
    return str(turns[-1]["content"])


class BatchFake:
    def __init__(self, server: FakeServer, answer: Callable[[str], str]) -> None:
        self.server = server
        self.answer = answer
        self.hold = False
        self.faults: dict[str, str] = {}  # word -> "errored" | "expired"
        self.paid: Counter[str] = Counter()
        self.submitted: Counter[str] = Counter()
        self.interactive = 0
        self._failed_once: set[str] = set()
        self._files: dict[str, str] = {}
        self._batches: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        server.responder = self.respond

    # -- routing ----------------------------------------------------------------------------------
    def respond(self, rec: Recorded) -> Reply:
        with self._lock:
            path = rec.path.split("?")[0]
            if rec.method == "POST" and path == "/v1/files":
                return self._upload(rec.raw.decode("utf-8"))
            if rec.method == "POST" and path == "/v1/batches":
                return self._create("openai", self._files[rec.json["input_file_id"]], rec.json["input_file_id"])
            if rec.method == "POST" and path == "/v1/messages/batches":
                return self._create("anthropic", rec.json["requests"], "")
            if rec.method == "POST" and path in ("/v1/responses", "/v1/messages"):
                return self._interactive(path, rec.json)
            m = re.fullmatch(r"/v1/files/([\w-]+)/content", path)
            if m:
                return Reply(200, self._files[m.group(1)], content_type="application/octet-stream")
            m = re.fullmatch(r"/v1/(messages/)?batches/([\w-]+)(/results)?", path)
            if m and rec.method == "GET":
                batch = self._batches[m.group(2)]
                if m.group(3):
                    return Reply(200, self._results(batch), content_type="application/binary")
                return Reply(200, self._status(batch))
            return Reply(404, {"error": {"message": f"no route {rec.method} {path}"}})

    # -- the protocols ----------------------------------------------------------------------------
    def _upload(self, multipart: str) -> Reply:
        fid = f"file-{len(self._files) + 1}"
        self._files[fid] = "\n".join(_LINE.findall(multipart)) + "\n"
        return Reply(200, {"id": fid, "object": "file", "bytes": len(self._files[fid]), "created_at": 1767225600,
                           "filename": "kgviz-extract.jsonl", "purpose": "batch", "status": "processed"})

    def _create(self, kind: str, requests: Any, input_file_id: str) -> Reply:
        if kind == "openai":
            rows = [json.loads(line) for line in requests.splitlines() if line.strip()]
            requests = [{"custom_id": r["custom_id"], "params": r["body"]} for r in rows]
        bid = f"{'batch' if kind == 'openai' else 'msgbatch'}_{len(self._batches) + 1}"
        for r in requests:
            self.submitted[chunk_of(_prompt(r["params"]))] += 1
        self._batches[bid] = {"id": bid, "kind": kind, "requests": requests, "results": None,
                              "input_file_id": input_file_id}
        return Reply(200, self._status(self._batches[bid], create=True))

    def _finish(self, batch: dict[str, Any]) -> None:
        results = []
        for r in batch["requests"]:
            text = chunk_of(_prompt(r["params"]))
            fault = next((kind for word, kind in self.faults.items() if word in text), None)
            if fault and text not in self._failed_once:
                self._failed_once.add(text)
                results.append((r["custom_id"], fault, None))
            else:
                self.paid[text] += 1
                results.append((r["custom_id"], "succeeded", self.answer(text)))
        batch["results"] = results

    def _status(self, batch: dict[str, Any], create: bool = False) -> dict[str, Any]:
        if batch["results"] is None and not create and not self.hold:
            self._finish(batch)
        res = batch["results"]
        n = len(batch["requests"])
        ok = sum(1 for _, kind, _ in res or () if kind == "succeeded")
        errored = sum(1 for _, kind, _ in res or () if kind == "errored")
        expired = sum(1 for _, kind, _ in res or () if kind == "expired")
        bid = batch["id"]
        if batch["kind"] == "openai":
            body: dict[str, Any] = {
                "id": bid, "object": "batch", "endpoint": "/v1/responses", "input_file_id": batch["input_file_id"],
                "completion_window": "24h", "created_at": 1767225600,
                "status": "in_progress" if res is None else ("expired" if expired else "completed"),
                "request_counts": {"total": n, "completed": ok, "failed": errored + expired},
            }
            if res is not None:
                out, err = self._openai_files(bid, res)
                body.update(output_file_id=out, error_file_id=err)
            return body
        return {
            "id": bid, "type": "message_batch", "processing_status": "in_progress" if res is None else "ended",
            "request_counts": {"processing": n if res is None else 0, "succeeded": ok, "errored": errored,
                               "canceled": 0, "expired": expired},
            "created_at": CREATED, "expires_at": "2026-01-02T00:00:00Z", "ended_at": None if res is None else CREATED,
            "cancel_initiated_at": None, "archived_at": None,
            "results_url": None if res is None else f"{self.server.url}/v1/messages/batches/{bid}/results",
        }

    def _openai_files(self, bid: str, results: list[tuple[str, str, str | None]]) -> tuple[str | None, str | None]:
        out, err = [], []
        for i, (cid, kind, text) in enumerate(results):
            row: dict[str, Any] = {"id": f"batch_req_{i}", "custom_id": cid, "response": None, "error": None}
            if kind == "succeeded":
                row["response"] = {"status_code": 200, "request_id": f"req_{i}", "body": responses_ok(text or "")}
                out.append(row)
            elif kind == "errored":
                row["response"] = {"status_code": 500, "request_id": f"req_{i}",
                                   "body": {"error": {"message": "The server had an error", "type": "server_error"}}}
                err.append(row)
            else:
                row["error"] = {"code": "batch_expired", "message": "not executed before the window expired"}
                err.append(row)
        ids = []
        for name, rows in (("out", out), ("err", err)):
            if not rows:
                ids.append(None)
                continue
            fid = f"file-{bid}-{name}"
            self._files[fid] = "".join(json.dumps(r) + "\n" for r in rows)
            ids.append(fid)
        return ids[0], ids[1]

    def _results(self, batch: dict[str, Any]) -> str:
        lines = []
        for cid, kind, text in batch["results"]:
            if kind == "succeeded":
                result: dict[str, Any] = {"type": "succeeded", "message": anthropic_ok(text or "")}
            elif kind == "errored":
                result = {"type": "errored", "error": {"type": "error",
                                                       "error": {"type": "api_error", "message": "Internal error"}}}
            else:
                result = {"type": "expired"}
            lines.append(json.dumps({"custom_id": cid, "result": result}))
        return "\n".join(lines) + "\n"

    def _interactive(self, path: str, body: dict[str, Any]) -> Reply:
        text = chunk_of(_prompt(body))
        self.paid[text] += 1
        self.interactive += 1
        reply = self.answer(text)
        return Reply(200, anthropic_ok(reply) if path == "/v1/messages" else responses_ok(reply))
