"""A recording session of the sample (``sample_data/``): the build, then every method on every
question with its answer and the judge. The same steps run when a real model is recorded
(``scripts/record_real_model.py`` with ``kgviz.providers.recorded.RecordingLLM``) and when the
recording is replayed (tests, the app's "recorded" sample, with ``RecordedLLM``), so a replay
sends exactly the prompts the recording saw.

What must match for a replay: the documents, ``SAMPLE_BUILD`` (chunking, KET defaults), the
embedder (``SAMPLE_EMBEDDER``), the questions, the methods' default params and every prompt.
"""
from __future__ import annotations

import json

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from kgviz.compare import MethodResult, assess
from kgviz.evaluate.qa import QAItem
from kgviz.graph import reads
from kgviz.graph.rows import ExtractionSummaryRow
from kgviz.graph.store import GraphStore
from kgviz.index.params import BuildParams, BuildReport, ProgressEvent
from kgviz.ingest import load_paths
from kgviz.methods.base import MethodContext
from kgviz.providers.base import LLM
from kgviz.providers.factory import make_embedder
from kgviz.providers.pricing import PriceTable
from kgviz.providers.usage import UsageLedger
from kgviz.reasoning import Reasoner
from kgviz.run import run_method

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_CORPUS = ROOT / "sample_data" / "corpus"
SAMPLE_QUESTIONS = ROOT / "sample_data" / "questions.jsonl"
# beside sample_data/, not in it: `kgviz build sample_data` walks that folder for documents
SAMPLE_RECORDING = ROOT / "sample_recorded"
RUNS_FILE = "runs.jsonl"  # one line per recorded (question, method): what the replay must reproduce
BUILD_FILE = "build.json"  # figures of the recorded build
DESCRIBE_FILE = "describe.json"  # figures of the recorded skeleton descriptions (KET Alg. 1 line 3)
SAMPLE_EMBEDDER = "hashing"
# the app's defaults (Settings.chunk_tokens / chunk_overlap) and BuildParams' KET defaults, so with
# the skeleton's LLM-written descriptions (KET Alg. 1 line 3, describe.<model>.jsonl, every sample
# document); workers do not change any prompt. SAMPLE_BUILD_UNDESCRIBED is the same graph with the
# skeleton's source-sentence descriptions (ours): the "before" of benchmarks/ket_descriptions.py,
# and the build that checks the recorded extraction before descriptions are recorded
SAMPLE_BUILD = BuildParams(chunk_tokens=300, chunk_overlap=30, ket_descriptions=True)
SAMPLE_BUILD_UNDESCRIBED = BuildParams(chunk_tokens=300, chunk_overlap=30, ket_descriptions=False)
# cheap retrieval first, so a recording cut short by time still covers whole questions
RECORD_METHODS = ("text-rag", "no-retrieval", "kg-retriever", "ket-rag", "kg-rag", "kg-infused")


def builds_without_descriptions(llm_spec: str) -> bool:
    """``llm_spec`` replays a recording whose builds go without the skeleton's LLM descriptions by
    default (the app and ``kgviz build``; ``--ket-descriptions`` asks for them): a recording with no
    file of the "descriptions" phase (one made before that prompt existed would otherwise stop at
    its first description prompt). The bundled sample holds them for every document."""
    kind, _, path = (llm_spec or "").partition(":")
    if kind != "recorded" or not path:
        return False
    where = Path(path)
    files = [where] if where.is_file() else sorted(where.glob("*.jsonl")) if where.is_dir() else []
    return not any(_phase(f) == "descriptions" for f in files)


def _phase(path: Path) -> str:
    """The ``phase`` named in a recording file's header line ("" when it has none or is unreadable:
    the recorded provider reports a bad file when it loads it)."""
    try:
        with path.open("rb") as fh:
            head = json.loads(fh.readline(1_000_000).decode("utf-8"))
    except (OSError, ValueError):
        return ""
    return str(head.get("phase", "")) if isinstance(head, dict) else ""


@dataclass
class Session:
    store: GraphStore
    reasoner: Reasoner

    def method_context(self) -> MethodContext:
        return MethodContext(self.store, self.reasoner)

    def close(self) -> None:
        self.store.close()


def open_session(db_dir: Path, llm: LLM) -> Session:
    """A graph at ``db_dir`` (created if new) with the sample's embedder and a reasoner on ``llm``."""
    embedder, notice = make_embedder(SAMPLE_EMBEDDER, fallback=False)
    store = GraphStore.open(Path(db_dir), embedder_id=embedder.id, dim=embedder.dim)
    return Session(store, Reasoner(llm, embedder, UsageLedger(), PriceTable()))


def build_sample(session: Session, workers: int = 1,
                 progress: Callable[[ProgressEvent], None] | None = None, *, described: bool = True) -> BuildReport:
    """The sample's build: ``SAMPLE_BUILD``, or without ``described`` ``SAMPLE_BUILD_UNDESCRIBED``
    (the same graph, no description calls)."""
    from dataclasses import replace

    from kgviz.index.pipeline import build

    loaded = load_paths([SAMPLE_CORPUS])
    if loaded.errors:
        raise loaded.errors[0]
    params = SAMPLE_BUILD if described else SAMPLE_BUILD_UNDESCRIBED
    return build(loaded.documents, session.store, session.reasoner, replace(params, workers=workers),
                 progress=progress)


def extraction_rows(store: GraphStore) -> list[ExtractionSummaryRow]:
    return reads.extraction_summaries(store)


def extraction_figures(report: BuildReport, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Rejected chunks, malformed lines and their share of the replies' non-blank lines, tokens and
    model seconds per chunk (the calls' own latency, which a replay reports as recorded)."""
    n = len(rows)
    lines = sum(sum(1 for ln in str(r["raw"] or "").splitlines() if ln.strip()) for r in rows)
    usage = report.usage_by_stage.get("extract")
    return {
        "chunks": n,
        "rejected_chunks": len(report.failures),
        "rejected": [list(f) for f in report.failures],
        "malformed_lines": report.n_malformed_lines,
        "reply_lines": lines,
        "malformed_share": round(report.n_malformed_lines / lines, 4) if lines else 0.0,
        "input_tokens_per_chunk": round(sum(int(r["input_tokens"] or 0) for r in rows) / n, 1) if n else 0.0,
        "output_tokens_per_chunk": round(sum(int(r["output_tokens"] or 0) for r in rows) / n, 1) if n else 0.0,
        "model_seconds_per_chunk": round(usage.latency_s / n, 2) if usage and n else 0.0,
    }


def parse_failures(result: MethodResult) -> list[str]:
    """Every reply a task could not read: a parse error in the trace, a judge reply that could not
    be read, a failed claim split. (A judge label downgraded because it disagreed with its own
    reason or evidence was read fine: see ``judge_disagreements``.)"""
    found = [f"step {s.index} {s.llm.task}: {s.llm.error}" for s in result.run.trace if s.llm and s.llm.error]
    found += [f"judge: unparsed reply for claim {c.text[:60]!r}" for c in result.verdict.claims if c.label == "unparsed"]
    found += [f"judge: {e}" for e in result.verdict.errors if e.startswith("claim split failed")]
    return found


def judge_disagreements(result: MethodResult) -> list[str]:
    return [f"judge: claim {i}: {c.adjustment}" for i, c in enumerate(result.verdict.claims, 1)
            if getattr(c, "adjustment", "")]


def run_and_judge(method: str, item: QAItem, ctx: MethodContext) -> MethodResult:
    """The method's run (retrieval + shared answer) and its claim-level verdict, with gold metrics."""
    run = run_method(method, item.question, ctx)
    return assess([run], ctx, list(item.answers)).results[0]


def run_row(item: QAItem, result: MethodResult) -> dict[str, Any]:
    """The runs.jsonl line of one recorded run."""
    run, verdict = result.run, result.verdict
    calls = [s.llm for s in run.trace if s.llm is not None]
    return {
        "id": item.id, "question": item.question, "golds": list(item.answers), "method": run.method,
        "mode": run.mode, "answer": run.answer, "error": run.error,
        "acc": result.metrics.acc if result.metrics else None,
        "coverage": result.metrics.coverage if result.metrics else None,
        "llm_steps": [c.task for c in calls],
        "judge": {"labels": [c.label for c in verdict.claims], "abstained": verdict.abstained,
                  "hallucinated": verdict.hallucinated, "split": verdict.split},
        "parse_failures": parse_failures(result),
        "judge_disagreements": judge_disagreements(result),
        "usage": (run.usage + verdict.usage).to_dict(),
    }


# --- checking, pruning and summarising recorded runs (scripts/record_real_model.py) ---------
def replay_difference(row: dict[str, Any], result: MethodResult, model: str) -> str:
    """Why a replayed run differs from its runs.jsonl line ("" when it replays exactly): the checks
    of tests/test_recorded_sample.py, plus the recorded usage (tokens and calls)."""
    run, verdict = result.run, result.verdict
    calls = [s.llm for s in run.trace if s.llm is not None]
    checks: list[tuple[str, Any, Any]] = [
        ("answer", run.answer, row["answer"]),
        ("error", run.error, row["error"]),
        ("LLM steps", [c.task for c in calls], row["llm_steps"]),
        ("parse failures", parse_failures(result), row["parse_failures"]),
        ("judge disagreements", judge_disagreements(result), row["judge_disagreements"]),
        ("judge labels", [c.label for c in verdict.claims], row["judge"]["labels"]),
        ("hallucinated", verdict.hallucinated, row["judge"]["hallucinated"]),
    ]
    usage = (run.usage + verdict.usage).to_dict()
    checks += [(f"usage {k}", usage[k], row["usage"][k]) for k in ("calls", "input_tokens", "output_tokens")]
    for what, now, then in checks:
        if now != then:
            return f"{what} differ: replay {str(now)[:80]!r}, recorded {str(then)[:80]!r}"
    wrong_mode = [c.task for c in calls if c.mode != f"recorded:{model}"]
    return f"steps not from the recording: {wrong_mode}" if wrong_mode else ""


def question_difference(row: dict[str, Any], item: QAItem | None) -> str:
    """Why a recorded run no longer belongs to the sample question it was recorded for."""
    if item is None:
        return f"question {row['id']} is no longer in the questions file"
    if item.question != row["question"]:
        return f"the question changed: now {item.question[:60]!r}, recorded {row['question'][:60]!r}"
    if list(item.answers) != list(row["golds"]):
        return f"the gold answers changed: now {list(item.answers)}, recorded {row['golds']}"
    return ""


def missing_runs(rows: list[dict[str, Any]], question_ids: list[str],
                 methods: tuple[str, ...] = RECORD_METHODS) -> list[str]:
    """"<question id> <method>" for every sample (question, method) pair runs.jsonl lacks."""
    have = {(r["id"], r["method"]) for r in rows}
    return [f"{q} {m}" for q in question_ids for m in methods if (q, m) not in have]


def runs_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures of runs.jsonl that build.json and the README quote."""
    by_method: dict[str, int] = {}
    for r in rows:
        by_method[r["method"]] = by_method.get(r["method"], 0) + 1
    return {"runs": len(rows), "questions": len({r["id"] for r in rows}), "by_method": by_method,
            "parse_failures": sum(len(r["parse_failures"]) for r in rows),
            "failed_runs": sum(1 for r in rows if r["error"])}


def runs_table(rows: list[dict[str, Any]], items: list[QAItem], methods: tuple[str, ...] = RECORD_METHODS) -> str:
    """The README's table: one line per question with a recorded run, one column per method
    (✓ = a gold answer in the reply, the answer's first 40 characters, the judge's labels)."""
    by_pair = {(r["id"], r["method"]): r for r in rows}
    lines = ["| question (gold) | " + " | ".join(methods) + " |", "|---" * (len(methods) + 1) + "|"]
    for item in items:
        if not any((item.id, m) in by_pair for m in methods):
            continue
        cells = []
        for m in methods:
            r = by_pair.get((item.id, m))
            if r is None:
                cells.append("not recorded")
                continue
            labels = "abstained" if r["judge"]["abstained"] else ", ".join(r["judge"]["labels"])
            answer = " ".join((r["answer"] or r["error"]).split())[:40]
            cells.append(f"{'✓' if r['acc'] else '✗'} {answer} ({labels})")
        gold = item.answers[0] if item.answers else ""
        lines.append(f"| {item.id} ({gold}) | " + " | ".join(cells) + " |")
    return "\n".join(lines)
