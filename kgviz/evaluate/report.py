"""Summaries of evaluation records: per-method means with bootstrap CIs and paired comparisons,
the median context tokens each method's answer step saw, the share of questions whose gold answer
is in the graph, as JSON-ready dicts and plain-text tables for the CLI and benchmarks.

A failed run is never a number: it is left out of every mean, CI, median and paired test (which
say "n of N": the runs that succeeded of the runs made) and counted as a failure with its error
(``EvalSummary.failures``). A metric over zero runs is None in JSON and "n/a" in text. A paired
test compares only the questions on which both methods succeeded."""
from __future__ import annotations

import itertools
import math
import statistics
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from kgviz.evaluate.judge_check import JudgeCheck, from_records
from kgviz.evaluate.runner import EvalRecord
from kgviz.evaluate.stats import DEFAULT_N_BOOT, DEFAULT_N_PERM, DEFAULT_SEED, Estimate, Paired, bootstrap_ci, \
    paired_comparison

# (key, label, higher is better?) in display order
SUMMARY_METRICS: tuple[tuple[str, str, bool], ...] = (
    ("em", "EM", True), ("f1", "F1", True), ("acc", "Acc", True), ("coverage", "Coverage", True),
    ("hallucination", "Hallucination", False), ("abstention", "Abstention", False),
    ("tokens", "Tokens", False), ("cost_usd", "$", False), ("latency_s", "Latency (s)", False),
)
RATE_METRICS = ("em", "f1", "acc", "coverage", "hallucination", "abstention")  # 0..1, shown as %
COMPARE_METRICS = ("em", "f1", "acc", "coverage", "hallucination")


def record_value(rec: EvalRecord, metric: str) -> float:
    """One per-question number of a record for a summary metric."""
    if metric in ("em", "f1", "acc", "coverage"):
        return float(rec.metrics.get(metric, 0.0))
    if metric == "hallucination":
        return float(bool(rec.hallucinated))
    if metric == "abstention":
        return float(bool(rec.abstained))
    if metric in ("tokens", "cost_usd", "latency_s"):
        return float(getattr(rec, metric))
    raise KeyError(metric)


@dataclass
class MethodSummary:
    method: str
    n: int  # runs made (N)
    n_errors: int  # of which failed: left out of every estimate
    estimates: dict[str, Estimate]  # over the runs that succeeded (each Estimate.n of N)
    # median tokens of context the answer step saw (None with no successful run): at an equal
    # budget B a method that stops on its own shows here how much of B it used
    median_context_tokens: float | None = None
    n_not_recorded: int = 0  # questions a recording did not cover: not run at all (kgviz.evaluate.coverage)

    @property
    def n_ok(self) -> int:
        return self.n - self.n_errors

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "n_ok": self.n_ok, "n_errors": self.n_errors, "n_not_recorded": self.n_not_recorded,
                "median_context_tokens": self.median_context_tokens,
                "metrics": {k: {**e.to_dict(), "of": self.n} for k, e in self.estimates.items()}}


@dataclass(frozen=True)
class FailureGroup:
    """Failed runs sharing one error message."""

    error: str
    count: int
    methods: tuple[str, ...]
    first_qid: str

    def to_dict(self) -> dict[str, Any]:
        return {"error": self.error, "count": self.count, "methods": list(self.methods), "first_qid": self.first_qid}


@dataclass
class Failures:
    """Every failed run of a summary: how many of how many, grouped by error (first seen first)."""

    count: int = 0
    of: int = 0
    groups: list[FailureGroup] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"count": self.count, "of": self.of, "errors": [g.to_dict() for g in self.groups]}

    def headline(self, shown: int = 3) -> str:
        """One line: the count and the first distinct errors ("" when nothing failed)."""
        if not self.count:
            return ""
        errors = "; ".join(f"{g.count}× ({', '.join(g.methods)}): {g.error}" for g in self.groups[:shown])
        more = f"; {len(self.groups) - shown} more distinct errors" if len(self.groups) > shown else ""
        return (f"{self.count} of {self.of} runs failed and are left out of every mean, CI and paired test: "
                f"{errors}{more}")


def failures_of(records: Sequence[EvalRecord]) -> Failures:
    groups: dict[str, list[EvalRecord]] = {}
    for r in records:
        if r.error:
            groups.setdefault(r.error, []).append(r)
    return Failures(sum(len(g) for g in groups.values()), len(records),
                    [FailureGroup(e, len(rs), tuple(dict.fromkeys(r.method for r in rs)), rs[0].qid)
                     for e, rs in groups.items()])


@dataclass
class EvalSummary:
    methods: dict[str, MethodSummary]
    comparisons: list[Paired]
    n_questions: int
    n_boot: int
    seed: int
    settings: dict[str, Any] = field(default_factory=dict)
    # share of questions whose gold answer the graph holds (the funnel's "in graph"); None when
    # no record carries a funnel (a scorer without one)
    gold_in_graph: float | None = None
    failures: Failures = field(default_factory=Failures)
    # how far to trust the claim judge on these gold answers (kgviz.evaluate.judge_check), one per judge
    judge_checks: list[JudgeCheck] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_questions": self.n_questions,
            "judge_check": [c.to_dict() for c in self.judge_checks],
            "gold_in_graph": self.gold_in_graph,
            "failures": self.failures.to_dict(),
            "methods": {m: s.to_dict() for m, s in self.methods.items()},
            "comparisons": [c.to_dict() for c in self.comparisons],
            "statistics": {"ci": f"percentile bootstrap 95% over questions, n_boot={self.n_boot}, seed={self.seed}",
                           "paired_test": "two-sided paired sign-flip permutation test on the mean difference "
                                          "(exact for n <= 16, else Monte Carlo), over the questions both "
                                          "methods answered without failing",
                           "failed_runs": "left out of every mean, CI, median and paired test; a metric "
                                          "over zero runs is null"},
            "settings": dict(self.settings),
        }

    def comparison(self, metric: str, a: str, b: str) -> Paired | None:
        for c in self.comparisons:
            if c.metric == metric and (c.a, c.b) == (a, b):
                return c
        return None


def summarise(records: Sequence[EvalRecord], methods: Sequence[str] | None = None, *,
              n_boot: int = DEFAULT_N_BOOT, n_perm: int = DEFAULT_N_PERM, seed: int = DEFAULT_SEED,
              settings: Mapping[str, Any] | None = None) -> EvalSummary:
    """Per-method estimates and all pairwise comparisons (A listed before B in ``methods``)."""
    order = list(methods) if methods else list(dict.fromkeys(r.method for r in records))
    by_method: dict[str, dict[str, EvalRecord]] = {m: {} for m in order}
    for r in records:
        if r.method in by_method:
            by_method[r.method].setdefault(r.qid, r)
    out: dict[str, MethodSummary] = {}
    for m in order:
        recs = list(by_method[m].values())
        ok = [r for r in recs if not r.error]  # a failed run is no value of any metric
        est = {key: bootstrap_ci([record_value(r, key) for r in ok], n_boot=n_boot, seed=seed)
               for key, _label, _hib in SUMMARY_METRICS}
        median = float(statistics.median(r.context_tokens for r in ok)) if ok else None
        out[m] = MethodSummary(m, len(recs), len(recs) - len(ok), est, median)
    comparisons: list[Paired] = []
    for a, b in itertools.combinations(order, 2):
        common = [q for q, r in by_method[a].items()
                  if not r.error and q in by_method[b] and not by_method[b][q].error]
        if not common:
            continue
        for metric in COMPARE_METRICS:
            xa = [record_value(by_method[a][q], metric) for q in common]
            xb = [record_value(by_method[b][q], metric) for q in common]
            comparisons.append(paired_comparison(xa, xb, metric=metric, names=(a, b), n_boot=n_boot,
                                                 n_perm=n_perm, seed=seed))
    kept = [r for m in order for r in by_method[m].values()]
    n_q = len({r.qid for r in kept})
    return EvalSummary(out, comparisons, n_q, n_boot, seed, dict(settings or {}), gold_in_graph_share(kept),
                       failures_of(kept), from_records(kept))


def gold_in_graph_share(records: Sequence[EvalRecord]) -> float | None:
    """Share of questions whose gold answer is in the graph. The funnel's "in graph" is a fact
    about the question (the same in every method's record), so the first record of each counts."""
    seen: dict[str, bool] = {}
    for r in records:
        if "in_graph" in r.funnel:
            seen.setdefault(r.qid, bool(r.funnel["in_graph"]))
    return sum(seen.values()) / len(seen) if seen else None


# --- text ----------------------------------------------------------------------------------------
NA = "n/a"  # a metric over zero runs: never 0 or 100 %


def _fmt(metric: str, e: Estimate) -> str:
    if e.n == 0 or not math.isfinite(e.mean):
        return NA
    if metric in RATE_METRICS:
        return f"{100 * e.mean:.1f} [{100 * e.lo:.1f}, {100 * e.hi:.1f}]"
    if metric == "cost_usd":
        return f"{e.mean:.4f} [{e.lo:.4f}, {e.hi:.4f}]"
    if metric == "tokens":
        return f"{e.mean:.0f} [{e.lo:.0f}, {e.hi:.0f}]"
    return f"{e.mean:.3f} [{e.lo:.3f}, {e.hi:.3f}]"


def format_table(summary: EvalSummary, *, alpha: float = 0.05) -> str:
    """Plain-text tables: per-method means [95% CI] (rates in %), then paired differences."""
    header = ["method", N_OF_LABEL, "failed", *[label for _k, label, _h in SUMMARY_METRICS], CONTEXT_LABEL]
    rows = [header]
    for m, s in summary.methods.items():
        rows.append([m, n_of(s), str(s.n_errors), *[_fmt(k, s.estimates[k]) for k, _l, _h in SUMMARY_METRICS],
                     _median(s)])
    lines = [f"{summary.n_questions} questions; means with 95% bootstrap CIs over the runs that succeeded "
             f"(rates in %)" + _budget_note(summary)]
    if summary.failures.count:
        lines.append("FAILED: " + summary.failures.headline())
    lines += _columns(rows)
    if summary.comparisons:
        lines.append("")
        lines.append(f"paired differences A - B in points, on the questions both answered without failing "
                     f"(sign-flip permutation test; * p < {alpha})")
        pairs: dict[tuple[str, str], list[Paired]] = {}
        for c in summary.comparisons:
            pairs.setdefault((c.a, c.b), []).append(c)
        label = {k: lab for k, lab, _h in SUMMARY_METRICS}
        for (a, b), cs in pairs.items():
            cells = [f"{label[c.metric]} {100 * c.mean_diff:+.1f} (p={c.p_value:.3f}){'*' if c.p_value < alpha else ''}"
                     for c in cs]
            lines.append(f"  {a} - {b} (n={cs[0].n}): " + "  ".join(cells))
    for check in summary.judge_checks:
        lines += ["", *check.lines()]
    return "\n".join(lines)


CONTEXT_LABEL = "Context tokens (median)"
N_OF_LABEL = "n of N"  # runs that succeeded of runs made


def n_of(s: MethodSummary) -> str:
    return f"{s.n_ok} of {s.n}" + (f" ({s.n_not_recorded} not recorded)" if s.n_not_recorded else "")


def _median(s: MethodSummary) -> str:
    return NA if s.median_context_tokens is None else f"{s.median_context_tokens:.0f}"


def _budget_note(summary: EvalSummary) -> str:
    budget = summary.settings.get("budget_tokens")
    note = f"; every method's context budget {budget} tokens" if budget else ""
    if summary.gold_in_graph is not None:
        note += f"; gold answer in the graph for {100 * summary.gold_in_graph:.1f}% of questions"
    return note


def _columns(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]


def format_equal_budget_table(summary: EvalSummary) -> str:
    """The must-show table (issue 12): per method coverage [95% CI], EM, F1 (in %) and the median
    context tokens the answer step saw."""
    rows = [["method", N_OF_LABEL, "failed", "Coverage [95% CI]", "EM", "F1", CONTEXT_LABEL]]
    for m, s in summary.methods.items():
        e = s.estimates
        rows.append([m, n_of(s), str(s.n_errors), _fmt("coverage", e["coverage"]),
                     NA if e["em"].n == 0 else f"{100 * e['em'].mean:.1f}",
                     NA if e["f1"].n == 0 else f"{100 * e['f1'].mean:.1f}", _median(s)])
    head = [f"FAILED: {summary.failures.headline()}"] if summary.failures.count else []
    return "\n".join(head + _columns(rows))
