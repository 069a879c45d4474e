"""KET-RAG's skeleton channel with source-sentence descriptions (ours) and with the LLM-written
descriptions of Algorithm 1 line 3, side by side, on the recorded sample (issue 27.1).

    python benchmarks/ket_descriptions.py [--question s03] [--method skeleton-rag] [--json]

Both graphs are built from the same recorded replies (sample_recorded: the extraction of
qwen2.5-coder-1.5b, the descriptions of qwen2.5-coder-0.5b), over every sample document:
"before" with ``ket_descriptions`` off (kgviz.replay.SAMPLE_BUILD_UNDESCRIBED), "after" with it on
(SAMPLE_BUILD, the recorded sample's build). No model or network: a request the recording lacks stops the script. Printed:
the description calls' figures, then per graph the skeleton channel's seed entities and chosen
relationships as the context states them, with the steps' "ours" marks, and the steps ket-rag's
'paper' preset marks ours on that graph.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kgviz.evaluate.qa import load_questions  # noqa: E402
from kgviz.methods.base import MethodContext  # noqa: E402
from kgviz.providers.offline import OfflineLLM  # noqa: E402
from kgviz.providers.recorded import RecordedLLM  # noqa: E402
from kgviz.reasoning import Reasoner  # noqa: E402
from kgviz.replay import SAMPLE_QUESTIONS, SAMPLE_RECORDING, build_sample, open_session  # noqa: E402
from kgviz.run import run_method  # noqa: E402

# the skeleton as built (no β simulation) and the paper's cosine seeds, so the
# only difference between the two graphs is the entities' and relationships' texts and vectors
PARAMS = {"skeleton_beta": 0.0, "entity_match": "embedding", "context_limit": 1200}


def skeleton(question: str, method: str, described: bool, tmp: Path) -> dict[str, Any]:
    session = open_session(tmp / ("after" if described else "before"), RecordedLLM(SAMPLE_RECORDING))
    try:
        # the same documents both times, with the descriptions off or on
        report = build_sample(session, described=described)
        # retrieval only reads the graph: the answer step runs offline (no recorded reply needed)
        run = run_method(method, question, MethodContext(session.store, Reasoner(OfflineLLM(), session.reasoner.embedder)),
                         PARAMS)
        if run.error:
            raise SystemExit(f"{method} failed: {run.error}")
        steps = {s.title: s for s in run.trace}
        paper = run_method("ket-rag", question, MethodContext(session.store, Reasoner(OfflineLLM(), session.reasoner.embedder)),
                           preset="paper")
        return {
            "ket_rag_paper_ours": [(s.title, s.ours) for s in paper.trace if s.ours],
            "descriptions": report.ket.get("descriptions"),
            "entities": [i.text for i in run.context.items if i.kind == "entity"],
            "relationships": [i.text for i in run.context.items if i.kind == "triple"],
            "ours": {t: s.ours for t, s in steps.items() if t.startswith("Skeleton channel") and s.ours},
        }
    finally:
        session.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--question", default="s03")
    ap.add_argument("--method", default="skeleton-rag")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    item = next(q for q in load_questions(SAMPLE_QUESTIONS) if q.id == args.question)
    tmp = Path(tempfile.mkdtemp(prefix="kgviz-ketdesc-"))
    try:
        before = skeleton(item.question, args.method, False, tmp)
        after = skeleton(item.question, args.method, True, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        print(json.dumps({"question": item.question, "before": before, "after": after}, indent=2))
        return 0
    d = after["descriptions"] or {}
    print(f"{item.id}: {item.question}  ({args.method}, {PARAMS})")
    print(f"descriptions: {d.get('items')} asked, {d.get('accepted')} kept, rejected {d.get('rejected')}, "
          f"{d.get('failed')} failed; {d.get('entities')} entities and {d.get('relationships')} relationships described")
    for label, side in (("before: source sentences (ours)", before), ("after: LLM descriptions (Alg. 1 line 3)", after)):
        print(f"\n== {label}")
        for kind in ("entities", "relationships"):
            for text in side[kind]:
                print(f"  [{kind[:3]}] {text[:200]}")
        for title, why in side["ours"].items():
            print(f"  ours, {title}: {why}")
        print(f"  ket-rag, preset 'paper' (index built with the default KET preset): "
              f"{len(side['ket_rag_paper_ours'])} steps marked ours")
        for title, why in side["ket_rag_paper_ours"]:
            print(f"    {title}: {why[:160]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
