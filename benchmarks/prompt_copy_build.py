"""`kgviz build` on four sample documents against a scripted loopback server whose "model" answers
every chunk with the extraction prompt's own few-shot examples (what Qwen2.5-Coder 0.5B did in
issue 23: 29 of 30 stored triples were examples), once per checkout. Prints JSON: per checkout,
the exit status, the triples stored (every one is an example: the replies hold nothing else) and
what the build said about them.

  python benchmarks/prompt_copy_build.py --baseline /work/main
  python benchmarks/prompt_copy_build.py --baseline /work/main --llm recorded:sample_recorded/grounding

``--llm`` replaces the scripted server with any spec (a live local model, or the recorded replies of
one: scripts/record_grounding.py). A stored triple counts as a prompt example when one of its
names is a proper name of the prompt's examples (none occurs in the sample corpus).

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


def example_names() -> list[str]:
    """The proper names of the prompt's examples ("Ana Pell", "Vey Dam", "The Salt Road", ...)."""
    from kgviz.facts.parse import parse_triples

    lines = "\n".join(ln for ln in EXTRACT_TRIPLES_EXAMPLES.splitlines() if ln.startswith("("))
    names = {m.text for t in parse_triples(lines).triples for m in t.mentions() if m.text[:1].isupper()}
    return sorted(names)


def stored_examples(db: Path) -> list[str]:
    from kgviz.graph.store import GraphStore

    names = [n.lower() for n in example_names()]
    store = GraphStore.open(db)
    try:
        texts = [str(r["t"]) for r in store.query("MATCH (t:Triple) RETURN t.text AS t")]
    finally:
        store.close()
    return sorted(t for t in texts if any(n in t.lower() for n in names))


def run(checkout: Path, spec: str, docs: Path, work: Path) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KGVIZ_", "ANTHROPIC_"))}
    env.update({"PYTHONPATH": str(checkout), "KGVIZ_HOME": str(work / "home"), "KGVIZ_MAX_RETRIES": "0",
                "KGVIZ_EMBEDDER": "hashing", "KGVIZ_TIMEOUT_S": os.environ.get("KGVIZ_TIMEOUT_S", "900")})
    env.setdefault("OPENAI_API_KEY", "local")
    proc = subprocess.run(
        [sys.executable, "-m", "kgviz.cli", "build", str(docs), "--db", str(work / "db"),
         "--workers", "1", "--json", "--llm", spec],
        cwd=checkout, env=env, capture_output=True, text=True, timeout=3600)
    report = json.loads(proc.stdout)
    examples = stored_examples(work / "db") if "error" not in report else []
    keys = ("extracted_chunks", "failed_chunks", "facts_accepted", "facts_ungrounded", "facts_prompt_examples",
            "ungrounded_chunks", "not_following_prompt")
    counts = report.get("counts", {})
    return {"checkout": str(checkout), "exit_status": proc.returncode,
            "triples_stored": counts.get("Triple", 0), "prompt_example_triples_stored": len(examples),
            "prompt_example_triples": examples[:10], "entities_stored": counts.get("Entity", 0),
            **{k: report[k] for k in keys if k in report},
            "stderr_last_line": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ""}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", type=Path, help="another checkout for the 'before' figure")
    ap.add_argument("--llm", help="a model spec instead of the scripted server (e.g. recorded:sample_recorded/grounding)")
    args = ap.parse_args()
    reply = args.llm or "the prompt's 26 example triples, for every chunk (scripted server)"
    out: dict[str, Any] = {"documents": list(FOUR), "reply": reply}
    with tempfile.TemporaryDirectory() as tmp, FakeServer() as srv:
        srv.responder = lambda rec: Reply(200, chat_ok(EXAMPLES_REPLY))
        spec = args.llm or f"openai-compatible:qwen2.5-coder-0.5b-instruct@{srv.url}/v1"
        if spec.startswith("recorded:"):  # each checkout runs in its own folder: name the recording absolutely
            spec = "recorded:" + str((Path.cwd() / spec.split(":", 1)[1]).resolve())
        docs = Path(tmp) / "docs"
        docs.mkdir()
        for name in FOUR:
            shutil.copy(ROOT / "sample_data" / "corpus" / name, docs / name)
        for label, checkout in (("before", args.baseline), ("after", ROOT)):
            if checkout is not None:
                work = Path(tmp) / label
                work.mkdir()
                out[label] = run(checkout.resolve(), spec, docs, work)
        out["scripted_requests"] = len(srv.requests)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
