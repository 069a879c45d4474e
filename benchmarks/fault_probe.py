"""Issue 15's fault probe, re-run: `kgviz build` of sample_data/corpus against a loopback
OpenAI-compatible server that answers some chunks with an unusable HTTP 200 (garbage text, an
empty message, an HTML page), then the server is fixed and the same build runs again.

Prints JSON per fault: exit status and failed chunks of the faulty build, requests and exit
status of the re-run, and whether the re-run's graph counts equal a clean build's. Before the
fix the faulty replies were cached as "ok, 0 triples": the re-run made 0 requests and the graph
stayed short.

    python3 benchmarks/fault_probe.py [--every N]   # fault on every N-th chunk (default 1: all)
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.fake_server import FakeServer, Recorded, Reply, chat_ok  # noqa: E402

from kgviz.cli import main  # noqa: E402
from kgviz.graph.store import GraphStore  # noqa: E402
from kgviz.offline.extract import extract_offline  # noqa: E402

CORPUS = ROOT / "sample_data" / "corpus"
FAULTS = {
    "garbage": lambda: Reply(200, chat_ok("lorem ipsum dolor sit amet")),
    "empty": lambda: Reply(200, chat_ok("")),
    "html": lambda: Reply(200, "<!DOCTYPE html><html><body>502 Bad Gateway</body></html>", content_type="text/html"),
}


def chunk_text(rec: Recorded) -> str:
    return rec.json["messages"][-1]["content"].rsplit("Text: ", 1)[1].rsplit("\nTriples:", 1)[0]


def responder(fault: str | None, every: int):  # noqa: ANN201
    def reply(rec: Recorded) -> Reply:
        text = chunk_text(rec)
        if fault and zlib.crc32(text.encode()) % every == 0:  # a stable choice of faulty chunks
            return FAULTS[fault]()
        return Reply(200, chat_ok("\n".join(t.render() for t in extract_offline(text).triples)))
    return reply


def run(args: list[str]) -> tuple[int, dict]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, json.loads(out.getvalue())


def counts(db: Path) -> dict[str, int]:
    store = GraphStore.open(db)
    try:
        return {k: v for k, v in store.counts().items() if k != "Meta"}
    finally:
        store.close()


def probe(fault: str, every: int, tmp: Path, clean: dict[str, int]) -> dict:
    os.environ["KGVIZ_HOME"] = str(tmp / f"home-{fault}")
    db = tmp / f"db-{fault}"
    with FakeServer() as srv:
        srv.responder = responder(fault, every)
        args = ["build", str(CORPUS), "--db", str(db), "--json", "--no-ket", "--llm", f"openai-compatible:probe@{srv.url}/v1"]
        code1, rep1 = run(args)
        asked1 = len(srv.requests)
        srv.responder = responder(None, every)
        srv.requests.clear()
        code2, rep2 = run(args)
        asked2 = len(srv.requests)
    got = counts(db)
    return {"fault": fault, "faulty_build": {"exit": code1, "requests": asked1, "failed_chunks": len(rep1["failures"]),
                                             "triples": rep1["counts"]["Triple"], "first_reason": (rep1["failures"] or [["", ""]])[0][1]},
            "rerun": {"exit": code2, "requests": asked2, "failed_chunks": len(rep2["failures"]),
                      "triples": rep2["counts"]["Triple"]},
            "clean_triples": clean["Triple"], "rerun_equals_clean_build": got == clean}


def main_() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--every", type=int, default=1)
    a = ap.parse_args()
    for var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "KGVIZ_LLM", "KGVIZ_DB", "KGVIZ_TIMEOUT_S"):
        os.environ.pop(var, None)
    os.environ["KGVIZ_EMBEDDER"] = "hashing"
    os.environ["KGVIZ_WORKERS"] = "2"
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        os.environ["KGVIZ_HOME"] = str(tmp / "home-clean")
        with FakeServer() as srv:
            srv.responder = responder(None, a.every)
            code, _ = run(["build", str(CORPUS), "--db", str(tmp / "clean"), "--json", "--no-ket",
                           "--llm", f"openai-compatible:probe@{srv.url}/v1"])
            assert code == 0
            n_chunks = len(srv.requests)
        clean = counts(tmp / "clean")
        results = [probe(f, a.every, tmp, clean) for f in FAULTS]
    print(json.dumps({"corpus": str(CORPUS.relative_to(ROOT)), "chunks": n_chunks, "fault_every": a.every,
                      "probes": results}, indent=2))


if __name__ == "__main__":
    main_()
