"""KET-RAG on every recorded sample question, with the skeleton's LLM-written descriptions (KET
Alg. 1 line 3, the recorded sample's build) and with the offline source-sentence descriptions
(ours), side by side (issue 27.1).

    python benchmarks/ket_descriptions_sample.py [--method ket-rag] [--json]

Both graphs come from the same recorded replies (sample_recorded): "sentences" is
kgviz.replay.SAMPLE_BUILD_UNDESCRIBED, "LLM" is SAMPLE_BUILD. ``--method`` runs with its default
params, as the recorded runs did; its answer step runs offline on both graphs (the extractive
answer: retrieval alone decides it, and no recorded reply is needed for the graph the method runs
were not recorded on). Per question and graph: the skeleton channel's seed entities, chosen
relationships and text units, its coverage (a gold answer in the text of the skeleton channel's
context items) and the whole context's, and the offline answer with its accuracy. The last column
is the recorded real model's answer on the LLM graph (runs.jsonl, replayed by
tests/test_recorded_sample.py), where that run is recorded. No model, server or network.
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

from kgviz.evaluate.qa import QAItem, load_questions  # noqa: E402
from kgviz.methods.base import MethodContext  # noqa: E402
from kgviz.providers.offline import OfflineLLM  # noqa: E402
from kgviz.providers.recorded import RecordedLLM  # noqa: E402
from kgviz.reasoning import Reasoner  # noqa: E402
from kgviz.replay import RUNS_FILE, SAMPLE_QUESTIONS, SAMPLE_RECORDING, build_sample, open_session  # noqa: E402
from kgviz.run import Run, run_method  # noqa: E402
from kgviz.verify.metrics import accuracy, coverage  # noqa: E402


def skeleton_items(run: Run) -> list[Any]:
    """The context items the skeleton channel chose: its seed entities, its relationships and its
    text units (the keyword channel's sub-chunks are the rest of the context)."""
    ids: set[str] = set()
    for step in run.trace:
        if step.data.get("channel") != "skeleton":
            continue
        ids.update(n.id for n in step.nodes if n.role in ("seed", "chosen"))
        ids.update(step.data.get("items", ()))
    return [i for i in run.context.items if i.id in ids]


def side(run: Run, item: QAItem) -> dict[str, Any]:
    sk = skeleton_items(run)
    seeds = next((s for s in run.trace if s.title == "Skeleton channel: seed entities"), None)
    return {
        "seeds": [n.label for n in seeds.nodes if n.role == "seed"] if seeds else [],
        "entities": sum(i.kind == "entity" for i in sk),
        "relationships": sum(i.kind == "triple" for i in sk),
        "text_units": sum(i.kind in ("chunk", "subchunk") for i in sk),
        "skeleton_tokens": sum(i.n_tokens for i in sk),
        # a gold answer in the entities and relationships as stated (the descriptions' part) ...
        "er_coverage": coverage("\n".join(i.text for i in sk if i.kind in ("entity", "triple")), item.answers)
        if sk else 0.0,
        # ... and in the whole skeleton channel (its text units too)
        "skeleton_coverage": coverage("\n".join(i.text for i in sk), item.answers) if sk else 0.0,
        "coverage": coverage("\n".join(i.text for i in run.context.items), item.answers),
        "answer": run.error or run.answer,
        "acc": accuracy(run.answer, item.answers) if not run.error else 0.0,
        "ours": [s.title for s in run.trace if s.title.startswith("Skeleton channel") and s.ours],
    }


def graph_runs(described: bool, method: str, items: list[QAItem], tmp: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    session = open_session(tmp / ("llm" if described else "sentences"), RecordedLLM(SAMPLE_RECORDING))
    try:
        report = build_sample(session, described=described)
        ctx = MethodContext(session.store, Reasoner(OfflineLLM(), session.reasoner.embedder))
        return ({i.id: side(run_method(method, i.question, ctx), i) for i in items},
                {"counts": dict(report.counts), "descriptions": report.ket.get("descriptions")})
    finally:
        session.close()


def recorded_answers(method: str) -> dict[str, dict[str, Any]]:
    path = SAMPLE_RECORDING / RUNS_FILE
    rows = [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
    return {r["id"]: r for r in rows if r["method"] == method}


def cell(s: dict[str, Any]) -> str:
    return (f"{len(s['seeds'])}/{s['relationships']}/{s['text_units']} · "
            f"{s['er_coverage']:.0f} / {s['skeleton_coverage']:.0f} / {s['coverage']:.0f} · {'✓' if s['acc'] else '✗'} "
            + " ".join(str(s["answer"]).split())[:32])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--method", default="ket-rag")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    items = load_questions(SAMPLE_QUESTIONS)
    tmp = Path(tempfile.mkdtemp(prefix="kgviz-ketdesc-all-"))
    try:
        before, built_before = graph_runs(False, args.method, items, tmp)
        after, built_after = graph_runs(True, args.method, items, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    recorded = recorded_answers(args.method)
    if args.json:
        print(json.dumps({"method": args.method, "sentences": before, "llm": after, "builds": {
            "sentences": built_before, "llm": built_after},
            "recorded": {k: {f: r[f] for f in ("answer", "acc", "coverage")} for k, r in recorded.items()}},
            indent=2, ensure_ascii=False))
        return 0
    print(f"{args.method}, default params, offline answer; cells: seeds/relationships/text units · "
          "coverage: entities+relationships / skeleton channel / context · offline answer")
    print(f"| question (gold) | source sentences (ours) | LLM descriptions (Alg. 1 line 3) | "
          f"recorded 0.5B answer, LLM graph |")
    print("|---|---|---|---|")
    for i in items:
        r = recorded.get(i.id)
        rec = (f"{'✓' if r['acc'] else '✗'} " + " ".join((r['answer'] or r['error']).split())[:32]
               + f" (cov {r['coverage']:.0f})") if r else "not recorded"
        print(f"| {i.id} ({i.answers[0]}) | {cell(before[i.id])} | {cell(after[i.id])} | {rec} |")
    for name, runs in (("source sentences", before), ("LLM descriptions", after)):
        n = len(runs)
        print(f"{name}: entity+relationship coverage {sum(s['er_coverage'] for s in runs.values()):.0f}/{n}, "
              f"skeleton coverage {sum(s['skeleton_coverage'] for s in runs.values()):.0f}/{n}, "
              f"context coverage {sum(s['coverage'] for s in runs.values()):.0f}/{n}, offline answers right "
              f"{sum(s['acc'] for s in runs.values()):.0f}/{n}, mean skeleton tokens "
              f"{sum(s['skeleton_tokens'] for s in runs.values()) / n:.0f}, entities/relationships stated "
              f"{sum(s['entities'] for s in runs.values())}/{sum(s['relationships'] for s in runs.values())}")
    d = built_after["descriptions"] or {}
    print(f"descriptions: {d.get('items')} asked, {d.get('accepted')} kept, rejected {d.get('rejected')}, "
          f"{d.get('failed')} failed; {d.get('entities')} entities, {d.get('relationships')} relationships described")
    return 0


if __name__ == "__main__":
    sys.exit(main())
