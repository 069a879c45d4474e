"""Batch evaluation: chosen methods over a QA file on a built graph, one record per
(question, method), appended to ``results.jsonl`` as each finishes.

Equal budget: with ``budget_tokens`` B each run is asked for B as its equal budget
(``run_method(..., equal_budget=True)``; kgviz.run.resolve_run sets the method's context-budget
param to B and the answer step's budget to B, kgviz.evaluate.budget); the params given here are
passed on as they are. Each record keeps the tokens the answer step
saw (``context_tokens``) and the tokens the method retrieved (``retrieved_tokens``).

Resume: a record's key is (question id, method, params hash); the hash covers the method's
resolved params (with the budget param set to B), preset, the context budget and the reasoning
mode, so changing any of them runs again instead of reusing a stale answer. A re-run skips keys
already in the file, except records of failed runs (``retry_failed``): a failure may be transient
(a provider outage, an index built since), so those lines are removed from the file (rewritten
atomically) and run again. Each record is written as one ``write`` of a whole line under a lock; a
run killed mid-write leaves at most a truncated last line, which is cut off (and re-run) the next
time.

Recorded replies (``recorded:<path>``): before anything runs, every pending run is checked
against the recording (kgviz.evaluate.coverage); with ``not_recorded="stop"`` a run the recording
does not cover stops the evaluation with one line naming them all, with ``"skip"`` only the
covered runs are evaluated and ``EvalResult.coverage`` names the others.

Concurrency: a thread pool of ``workers``. The store hands each thread its own Kùzu connection,
the usage ledger is locked, and each run has its own Tracer; so runs share the MethodContext.
The progress callback is called from the calling thread (results are collected there), so a
Streamlit page can update its widgets from it.
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from kgviz.errors import ConfigError, EvaluationError
from kgviz.evaluate.budget import budget_param
from kgviz.evaluate.coverage import NotRecordedError, RecordingCoverage, check_recording, recorded_llm
from kgviz.evaluate.qa import QAItem
from kgviz.evaluate.scoring import Scored, Scorer, VerifyScorer
from kgviz.methods.base import MethodContext, params_to_dict
from kgviz.methods.registry import get_method
from kgviz.run import Run, resolve_run, run_method

RESULTS_FILE = "results.jsonl"
SUMMARY_FILE = "summary.json"


@dataclass
class EvalRecord:
    """One method's result on one question (one line of results.jsonl)."""

    qid: str
    question: str
    answers: list[str]
    method: str
    params_hash: str
    answer: str
    error: str
    metrics: dict[str, float]  # em, f1, acc, coverage (0..1)
    hallucinated: bool
    abstained: bool
    verdict: dict[str, Any] = field(default_factory=dict)  # claims and their support
    funnel: dict[str, Any] = field(default_factory=dict)  # gold in corpus / graph / context / answer
    tokens: int = 0
    calls: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    context_tokens: int = 0  # what the shared answer step saw (after its budget cut)
    mode: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    budget_tokens: int | None = None
    retrieved_tokens: int = 0  # what the method retrieved (before the answer step's cut)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.qid, self.method, self.params_hash)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "EvalRecord":
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in d.items() if k in known})


@dataclass(frozen=True)
class EvalProgress:
    done: int  # records available (skipped + finished in this run)
    total: int  # questions x methods
    skipped: int  # already in results.jsonl
    record: EvalRecord | None = None  # the one that just finished

    @property
    def fraction(self) -> float:
        return 1.0 if self.total <= 0 else min(1.0, self.done / self.total)


@dataclass
class EvalResult:
    records: list[EvalRecord]  # in (question, method) order, for this run's keys only
    results_path: Path | None
    skipped: int  # reused from a previous run
    ran: int
    coverage: RecordingCoverage | None = None  # with recorded replies: what the recording covers


Progress = Callable[[EvalProgress], None]


def params_hash(method: str, params: Mapping[str, Any], preset: str, budget_tokens: int | None, mode: str) -> str:
    # the budget param's name is in the blob too: a method that gains one re-runs at equal budget
    blob = json.dumps({"method": method, "params": dict(params), "preset": preset, "budget": budget_tokens,
                       "budget_param": budget_param(method) if budget_tokens is not None else None,
                       "mode": mode}, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


# --- the results file ----------------------------------------------------------------------------
def drop_failed(path: Path) -> int:
    """Remove the records of failed runs from ``path`` (atomic rewrite); returns how many."""
    records = read_results(path, repair=True)
    kept = [r for r in records if not r.error]
    if len(kept) == len(records):
        return 0
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(json.dumps(r.to_dict(), ensure_ascii=False, default=str) + "\n" for r in kept),
                   encoding="utf-8")
    tmp.replace(path)
    return len(records) - len(kept)


def read_results(path: Path, *, repair: bool = False) -> list[EvalRecord]:
    """Records in ``path`` (none when it does not exist). A last line without its newline is a
    write cut short: ignored, and cut from the file when ``repair``. A bad line elsewhere means the
    file was damaged by something else: EvaluationError naming it."""
    if not path.exists():
        return []
    data = path.read_bytes()
    complete = data.rfind(b"\n") + 1
    if repair and complete < len(data):
        with path.open("r+b") as f:
            f.truncate(complete)
    records: list[EvalRecord] = []
    for n, line in enumerate(data[:complete].decode("utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append(EvalRecord.from_dict(json.loads(line)))
        except (ValueError, TypeError) as exc:
            raise EvaluationError(f"{path}: line {n} is not a result record ({exc})",
                                  hint="delete that line (or the file, to start over) and re-run") from exc
    return records


class _Appender:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._f = path.open("a", encoding="utf-8")
        self._lock = threading.Lock()

    def write(self, record: EvalRecord) -> None:
        line = json.dumps(record.to_dict(), ensure_ascii=False, default=str) + "\n"
        with self._lock:
            self._f.write(line)
            self._f.flush()
            os.fsync(self._f.fileno())

    def close(self) -> None:
        self._f.close()


# --- running -------------------------------------------------------------------------------------
def answered_tokens(run: Run) -> int:
    """Tokens of context the answer step used (``run.answer_cut``), else what was retrieved."""
    return run.answer_cut.used_tokens if run.answer_cut is not None else run.context.n_tokens


def _record(item: QAItem, run: Run, scored: Scored, phash: str, budget_tokens: int | None) -> EvalRecord:
    u = run.usage
    return EvalRecord(
        qid=item.id, question=item.question, answers=list(item.answers), method=run.method, params_hash=phash,
        answer=run.answer, error=run.error, metrics=dict(scored.metrics), hallucinated=scored.hallucinated,
        abstained=scored.abstained, verdict=dict(scored.verdict), funnel=dict(scored.funnel),
        tokens=u.total_tokens, calls=u.calls, cost_usd=u.cost_usd, latency_s=run.seconds,
        context_tokens=answered_tokens(run), mode=run.mode, params=dict(run.params), budget_tokens=budget_tokens,
        retrieved_tokens=run.context.n_tokens,
    )


def evaluate(
    items: Sequence[QAItem],
    methods: Sequence[str],
    ctx: MethodContext,
    *,
    out_dir: str | Path | None = None,
    budget_tokens: int | None = None,
    workers: int = 1,
    params: Mapping[str, Any] | None = None,
    presets: Mapping[str, str] | None = None,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
    scorer: Scorer | None = None,
    retry_failed: bool = True,
    not_recorded: str = "stop",
) -> EvalResult:
    """Run every method on every item, scoring each run; see the module docstring.

    ``params`` / ``presets`` map method name -> overrides / preset name, as in ``run_methods``;
    with ``budget_tokens`` each run is asked for it as its equal budget: the method's budget param
    reads it (an override saying otherwise is a ConfigError) and so does the answer step's.
    With ``out_dir`` the records go to ``out_dir/results.jsonl`` and a re-run resumes.
    ``not_recorded`` ("stop" or "skip"): what to do, with recorded replies, about runs the
    recording does not cover (module docstring)."""
    if not items:
        raise EvaluationError("no questions to evaluate")
    if not methods:
        raise EvaluationError("no methods chosen", hint="pick at least one method (see `kgviz methods`)")
    if workers < 1:
        raise ConfigError(f"workers must be at least 1 (got {workers})")
    if budget_tokens is not None and budget_tokens < 1:
        raise ConfigError(f"the context budget must be at least 1 token (got {budget_tokens})")
    if len({i.id for i in items}) != len(items):
        raise EvaluationError("two questions share an id; ids key the results file",
                              hint="give every question a unique \"id\"")
    if len(set(methods)) != len(methods):
        raise EvaluationError(f"a method is listed twice: {', '.join(methods)}")
    if not_recorded not in ("stop", "skip"):
        raise ConfigError(f"not_recorded must be 'stop' or 'skip' (got {not_recorded!r})")
    presets = dict(presets or {})
    params = dict(params or {})
    equal = budget_tokens is not None
    scorer = scorer or VerifyScorer()
    hashes: dict[str, str] = {}
    for name in methods:  # validates names and params before anything runs
        p, _ = resolve_run(get_method(name), params.get(name), presets.get(name), budget_tokens, equal_budget=equal)
        hashes[name] = params_hash(name, params_to_dict(p), presets.get(name, ""), budget_tokens, ctx.reasoner.mode)

    path = Path(out_dir) / RESULTS_FILE if out_dir is not None else None
    done: dict[tuple[str, str, str], EvalRecord] = {}
    if path is not None:
        if retry_failed:
            drop_failed(path)
        for rec in read_results(path, repair=True):
            done.setdefault(rec.key, rec)
    todo = [(item, m) for item in items for m in methods if (item.id, m, hashes[m]) not in done]
    coverage: RecordingCoverage | None = None
    replayed: dict[tuple[str, str], Run] = {}
    llm = recorded_llm(ctx)
    if llm is not None and todo:  # before anything is scored or saved
        coverage = check_recording(todo, ctx, llm, params=params, presets=presets, budget_tokens=budget_tokens,
                                   n_questions=len(items))
        if coverage.missing and not_recorded == "stop":
            raise NotRecordedError(coverage.line(),
                                   hint="evaluate only the recorded runs (kgviz eval --only-recorded), or use the "
                                        "offline mode or a live model for the others")
        replayed = coverage.runs
        todo = [(item, m) for item, m in todo if (item.id, m) in replayed]
    total = len(items) * len(methods) - (len(coverage.missing) if coverage else 0)
    skipped = total - len(todo)
    if progress:
        progress(EvalProgress(skipped, total, skipped))

    def one(item: QAItem, name: str) -> EvalRecord:
        run = replayed.get((item.id, name)) or run_method(name, item.question, ctx, params.get(name),
                                                          preset=presets.get(name), budget_tokens=budget_tokens,
                                                          equal_budget=equal)
        return _record(item, run, scorer(run, item, ctx, budget_tokens), hashes[name], budget_tokens)

    appender = _Appender(path) if path is not None else None
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="kgviz-eval")
    finished = 0
    try:
        pending: set[Future[EvalRecord]] = set()
        queue = iter(todo)
        # submit lazily (at most 2 x workers in flight) so a cancel stops promptly
        for item, name in _take(queue, 2 * workers):
            pending.add(pool.submit(one, item, name))
        while pending:
            ready, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in ready:
                rec = fut.result()
                done[rec.key] = rec
                if appender:
                    appender.write(rec)
                finished += 1
                if progress:
                    progress(EvalProgress(skipped + finished, total, skipped, rec))
            if cancel is not None and cancel.is_set():
                break
            for item, name in _take(queue, len(ready)):
                pending.add(pool.submit(one, item, name))
        if cancel is not None and cancel.is_set():
            for fut in pending:
                fut.cancel()
            for fut in pending:
                if not fut.cancelled():
                    rec = fut.result()
                    if appender:
                        appender.write(rec)
            raise EvaluationError("evaluation cancelled; finished results were kept",
                                  hint="re-run the same command to resume")
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        if appender:
            appender.close()
    records = [done[(item.id, m, hashes[m])] for item in items for m in methods
               if (item.id, m, hashes[m]) in done]
    return EvalResult(records, path, skipped, finished, coverage)


def _take(it: Iterable[tuple[QAItem, str]], n: int) -> list[tuple[QAItem, str]]:
    out = []
    for x in it:
        out.append(x)
        if len(out) >= n:
            break
    return out
