"""One call for the CLI, the app and benchmarks/multihop.py: run (or resume) an evaluation,
summarise it, save the summary. With a context budget the BM25-only and dense-only baselines
join the chosen methods (kgviz.evaluate.budget) unless ``baselines=False``."""
from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from kgviz.config import Settings
from kgviz.evaluate.budget import with_baselines
from kgviz.evaluate.coverage import RecordingCoverage
from kgviz.evaluate.qa import QAItem
from kgviz.evaluate.report import EvalSummary, summarise
from kgviz.evaluate.runner import SUMMARY_FILE, EvalRecord, Progress, evaluate
from kgviz.evaluate.scoring import Scorer
from kgviz.evaluate.stats import DEFAULT_N_BOOT, DEFAULT_SEED
from kgviz.methods.base import MethodContext


@dataclass
class EvalOutcome:
    summary: EvalSummary
    records: list[EvalRecord]
    results_path: Path | None
    ran: int
    skipped: int
    coverage: RecordingCoverage | None = None  # recorded replies: what the recording covers

    def to_dict(self) -> dict[str, Any]:
        return {**self.summary.to_dict(), "results": str(self.results_path) if self.results_path else None,
                "ran": self.ran, "reused": self.skipped,
                "recording_coverage": self.coverage.to_dict() if self.coverage else None}

    def coverage_note(self) -> str:
        """"" unless a recording left runs out: then one line saying which, and that only the
        recorded runs were evaluated."""
        c = self.coverage
        if c is None or not c.missing:
            return ""
        return (f"{c.line()}; evaluated only the {c.covered} recorded runs "
                "(the others were not run and count nowhere)")


def default_out_dir(settings: Settings, questions: str | Path, db: str | Path) -> Path:
    """$KGVIZ_HOME/evals/<questions stem>-<hash of questions path + database path>: the same
    command resumes; another database or QA file gets its own folder."""
    key = f"{Path(questions).resolve()}|{Path(db).resolve()}"
    return settings.home / "evals" / f"{Path(questions).stem}-{hashlib.sha256(key.encode()).hexdigest()[:8]}"


def run_evaluation(items: Sequence[QAItem], methods: Sequence[str], ctx: MethodContext, *,
                   out_dir: str | Path | None = None, budget_tokens: int | None = None, workers: int = 1,
                   n_boot: int = DEFAULT_N_BOOT, seed: int = DEFAULT_SEED, progress: Progress | None = None,
                   cancel: threading.Event | None = None, scorer: Scorer | None = None,
                   settings: Mapping[str, Any] | None = None, baselines: bool = True,
                   not_recorded: str = "stop", presets: Mapping[str, str] | None = None) -> EvalOutcome:
    """``evaluate`` then ``summarise``; with ``out_dir`` the summary is saved as summary.json.
    ``outcome.summary.methods`` lists the methods run, baselines included; with recorded replies
    a method the recording covers on no question is left out of it (``outcome.coverage`` names it).
    ``presets`` maps method name -> preset name (``kgviz eval --preset``)."""
    methods = with_baselines(methods, budget_tokens, baselines)
    result = evaluate(items, methods, ctx, out_dir=out_dir, budget_tokens=budget_tokens, workers=workers,
                      progress=progress, cancel=cancel, scorer=scorer, not_recorded=not_recorded,
                      presets=presets)
    info = {**dict(settings or {}), "methods": list(methods), "n_questions": len(items), "presets": dict(presets or {}),
            "budget_tokens": budget_tokens, "equal_budget": budget_tokens is not None, "workers": workers}
    ran = [m for m in methods if any(r.method == m for r in result.records)] if result.coverage else methods
    summary = summarise(result.records, ran, n_boot=n_boot, seed=seed, settings=info)
    if result.coverage is not None:
        for method, qids in result.coverage.by_method().items():
            if method in summary.methods:
                summary.methods[method].n_not_recorded = len(qids)
    outcome = EvalOutcome(summary, result.records, result.results_path, result.ran, result.skipped,
                          result.coverage)
    if out_dir is not None:
        path = Path(out_dir) / SUMMARY_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(outcome.to_dict(), indent=2, default=str), encoding="utf-8")
        tmp.replace(path)  # never a half-written summary
    return outcome
