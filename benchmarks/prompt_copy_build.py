"""`kgviz build` on four sample documents against a scripted loopback server whose "model" answers
every chunk with the extraction prompt's own few-shot examples (what Qwen2.5-Coder 0.5B did in
issue 23: 29 of 30 stored triples were examples), once per checkout. Prints JSON: per checkout,
the exit status, the triples stored (every one is an example: the replies hold nothing else) and
what the build said about them.

  python benchmarks/prompt_copy_build.py --baseline /work/main

Each checkout runs as its own process (``python -m kgviz.cli`` with that checkout first on
PYTHONPATH) with a fresh KGVIZ_HOME, so no cache or graph is shared.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.fake_server import FakeServer, Reply, chat_ok  # noqa: E402

from kgviz.prompts.extraction import EXTRACT_TRIPLES_EXAMPLES  # noqa: E402

FOUR = ("agnes_vohl.md", "aster_wren.md", "edda_lunn.txt", "kellhaven.md")
EXAMPLES_REPLY = "\n".join(ln for ln in EXTRACT_TRIPLES_EXAMPLES.splitlines() if ln.startswith("("))


def run(checkout: Path, url: str, docs: Path, work: Path) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KGVIZ_", "OPENAI_", "ANTHROPIC_"))}
    env.update({"PYTHONPATH": str(checkout), "KGVIZ_HOME": str(work / "home"), "KGVIZ_MAX_RETRIES": "0"})
    proc = subprocess.run(
        [sys.executable, "-m", "kgviz.cli", "build", str(docs), "--db", str(work / "db"), "--no-ket",
         "--workers", "1", "--json", "--llm", f"openai-compatible:qwen2.5-coder-0.5b-instruct@{url}/v1"],
        cwd=checkout, env=env, capture_output=True, text=True, timeout=600)
    report = json.loads(proc.stdout)
    keys = ("extracted_chunks", "failed_chunks", "facts_accepted", "facts_ungrounded", "facts_prompt_examples",
            "ungrounded_chunks", "not_following_prompt")
    return {"checkout": str(checkout), "exit_status": proc.returncode,
            "prompt_example_triples_stored": report["counts"].get("Triple", 0),
            "entities_stored": report["counts"].get("Entity", 0),
            **{k: report[k] for k in keys if k in report},
            "stderr_last_line": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ""}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", type=Path, help="another checkout for the 'before' figure")
    args = ap.parse_args()
    out: dict[str, Any] = {"documents": list(FOUR), "reply": "the prompt's 26 example triples, for every chunk"}
    with tempfile.TemporaryDirectory() as tmp, FakeServer() as srv:
        srv.responder = lambda rec: Reply(200, chat_ok(EXAMPLES_REPLY))
        docs = Path(tmp) / "docs"
        docs.mkdir()
        for name in FOUR:
            shutil.copy(ROOT / "sample_data" / "corpus" / name, docs / name)
        for label, checkout in (("before", args.baseline), ("after", ROOT)):
            if checkout is not None:
                work = Path(tmp) / label
                work.mkdir()
                out[label] = run(checkout.resolve(), srv.url, docs, work)
        out["requests"] = len(srv.requests)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
