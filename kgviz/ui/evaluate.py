"""Evaluate page support: pick a QA file, run a batch evaluation at one equal context budget
(with the bm25 / dense baselines unless turned off) with live progress, render the summary (CIs,
median context tokens, paired tests, charts) and hand a question over to Compare or Trace.

Failed runs are never numbers (kgviz.evaluate.report): a banner names how many failed and their
first distinct errors, and every mean says "n of N". With recorded replies the runs the recording
does not cover are found before anything runs (kgviz.evaluate.coverage), left out and named; the
form's defaults are then the recorded methods at each method's own budget, as recorded.

Results go to ``$KGVIZ_HOME/evals/app-<hash>`` (one folder per workspace, QA source, embedder
and mode), so pressing Run again after an interruption, or with more questions, reuses every
finished (question, method, params) result.
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Sequence

import pandas as pd
import streamlit as st

from kgviz.errors import EvaluationError
from kgviz.evaluate import EvalOutcome, QAItem, load_questions, parse_question_bytes, read_results, run_evaluation
from kgviz.evaluate.budget import with_baselines
from kgviz.evaluate.coverage import recorded_methods
from kgviz.evaluate.report import CONTEXT_LABEL, N_OF_LABEL, NA, RATE_METRICS, SUMMARY_METRICS, EvalSummary, n_of
from kgviz.methods.registry import list_methods
from kgviz.providers.recorded import RecordedLLM
from kgviz.evaluate.judge_check import RIGHT_LABEL, WRONG_LABEL
from kgviz.methods.base import MethodContext
from kgviz.ui import provenance, resources
from kgviz.ui import trace as tui
from kgviz.ui.render import OFFLINE_LABEL, md_text
from kgviz.offline.judge import OFFLINE_JUDGE_LABEL
from kgviz.verify.outcome import judge_caution, of_record
from kgviz.ui.state import AppContext
from kgviz.viz import eval_charts

K_OUTCOME = "kgviz_eval_outcome"  # (EvalOutcome, methods) of the last run in this session
SAMPLE_QUESTIONS = Path(__file__).resolve().parents[2] / "sample_data" / "questions.jsonl"
COMPARE_PAGE = "pages/compare.py"
TRACE_PAGE = "pages/trace.py"
SOURCES = ("Sample questions", "Upload a JSONL file", "Path on the server")


# --- inputs --------------------------------------------------------------------------------------
def load_qa(source: str, upload: Any = None, path: str = "") -> tuple[list[QAItem], str]:
    """(items, a name identifying the source) for the chosen QA source; ([], "") when nothing is
    chosen yet. Bad files raise EvaluationError naming the bad lines."""
    if source == SOURCES[0]:
        if not SAMPLE_QUESTIONS.is_file():
            raise EvaluationError("sample_data/questions.jsonl is missing",
                                  hint="run kgviz from a source checkout, or upload a QA file")
        return load_questions(SAMPLE_QUESTIONS), str(SAMPLE_QUESTIONS)
    if source == SOURCES[1]:
        if upload is None:
            return [], ""
        data = upload.getvalue()
        return parse_question_bytes(data, upload.name), f"upload:{hashlib.sha256(data).hexdigest()[:16]}"
    if not path.strip():
        return [], ""
    p = Path(path.strip()).expanduser()
    return load_questions(p), str(p.resolve())


K_DEFAULTS_FOR = "kgviz_eval_defaults_for"  # the LLM spec the form's defaults were set for
DEFAULT_BUDGET = 4000


def form_defaults(ctx: AppContext) -> None:
    """The form's starting values, set once per LLM (a session default, not value=, so a visit to
    another page keeps the user's choice). With recorded replies: the methods the recording holds,
    at each method's own budget (an equal budget changes prompts the recording never saw)."""
    if st.session_state.get(K_DEFAULTS_FOR) == ctx.llm_spec:
        return
    st.session_state[K_DEFAULTS_FOR] = ctx.llm_spec
    llm = resources.llm(ctx) if ctx.llm_spec.startswith("recorded:") else None
    recorded = recorded_methods(llm) if isinstance(llm, RecordedLLM) else []
    st.session_state["kgviz_eval_methods"] = [m for m in list_methods() if m in recorded] or list_methods()
    st.session_state["kgviz_eval_equal"] = not recorded
    st.session_state.setdefault("kgviz_eval_budget", DEFAULT_BUDGET)
    st.session_state.setdefault("kgviz_eval_workers", 2)
    st.session_state.setdefault("kgviz_eval_baselines", True)


def runs_note(ctx: AppContext) -> str:
    if ctx.offline:
        return ""
    if ctx.llm_spec.startswith("recorded:"):
        return (" · replayed from the recording: runs it does not cover are found before anything runs, "
                "left out and named")
    return " (each costs LLM calls; finished runs are reused)"


def out_dir(ctx: AppContext, source_id: str) -> Path:
    key = f"{Path(ctx.db_dir).resolve()}|{source_id}|{ctx.embedder_spec}|{ctx.llm_spec}"
    return ctx.settings.home / "evals" / f"app-{hashlib.sha256(key.encode()).hexdigest()[:12]}"


# --- running -------------------------------------------------------------------------------------
def run(ctx: AppContext, items: Sequence[QAItem], methods: Sequence[str], source_id: str, *,
        budget_tokens: int | None, workers: int = 2, baselines: bool = True) -> EvalOutcome:
    """Evaluate with an st.progress bar; the outcome is kept for this session."""
    if not methods:
        raise EvaluationError("no method chosen", hint="tick at least one method")
    mctx = MethodContext(resources.store(ctx), resources.reasoner(ctx))
    total = len(items) * len(with_baselines(methods, budget_tokens, baselines))
    recorded = isinstance(mctx.reasoner.llm, RecordedLLM)
    bar = st.progress(0.0, text=f"checking which of the {total} runs the recording covers…" if recorded
                      else f"0/{total} runs")

    def progress(ev: Any) -> None:  # called in this (the script) thread by the runner
        last = f" — {ev.record.method} on {ev.record.qid}" if ev.record is not None else ""
        reused = f", {ev.skipped} reused" if ev.skipped else ""
        bar.progress(ev.fraction, text=md_text(f"{ev.done}/{ev.total} runs{reused}{last}"))

    outcome = run_evaluation(items, methods, mctx, out_dir=out_dir(ctx, source_id), budget_tokens=budget_tokens,
                             workers=workers, progress=progress, baselines=baselines, not_recorded="skip",
                             settings={"db": str(ctx.db_dir), "mode": ctx.llm_spec, "source": source_id})
    bar.progress(1.0, text=f"done: {outcome.ran} run now, {outcome.skipped} reused")
    provenance.keep(K_OUTCOME, (outcome, list(outcome.summary.methods)), ctx)  # baselines included
    return outcome


def last_outcome() -> tuple[EvalOutcome, list[str]] | None:
    return st.session_state.get(K_OUTCOME)


# --- rendering -----------------------------------------------------------------------------------
def _cell(metric: str, mean: float | None, lo: float | None, hi: float | None) -> str:
    if mean is None:  # no run succeeded: nothing to average, never 0 or 100 %
        return NA
    if metric in RATE_METRICS:
        return f"{100 * mean:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]"  # type: ignore[operator]
    if metric == "cost_usd":
        return f"{mean:.4f} [{lo:.4f}, {hi:.4f}]"
    if metric == "tokens":
        return f"{mean:.0f} [{lo:.0f}, {hi:.0f}]"
    return f"{mean:.3f} [{lo:.3f}, {hi:.3f}]"


def summary_frame(summary: EvalSummary) -> pd.DataFrame:
    rows = []
    for m, s in summary.methods.items():
        row: dict[str, Any] = {"method": m, N_OF_LABEL: n_of(s), "failed": s.n_errors}
        for key, label, _h in SUMMARY_METRICS:
            e = s.estimates[key].to_dict()
            row[label + (" %" if key in RATE_METRICS else "")] = _cell(key, e["mean"], e["lo"], e["hi"])
        # text like the other cells: "n/a" when every run failed (a null shows "None" in the grid)
        med = s.median_context_tokens
        row[CONTEXT_LABEL] = NA if med is None else f"{med:.0f}" if med == int(med) else f"{med:.1f}"
        rows.append(row)
    return pd.DataFrame(rows)


def comparisons_frame(summary: EvalSummary) -> pd.DataFrame:
    return pd.DataFrame([{"metric": c.metric, "A": c.a, "B": c.b, "n": c.n,
                          "A − B (points)": round(100 * c.mean_diff, 1),
                          "95% CI": f"[{100 * c.lo:+.1f}, {100 * c.hi:+.1f}]", "p": round(c.p_value, 4),
                          "p < 0.05": bool(c.p_value < 0.05)} for c in summary.comparisons])


def judge_note(records: Sequence[Any]) -> str:
    """Which mode answered and which judge checked the claims: offline results say so, and say
    that the offline check is weaker than an LLM judge."""
    modes = sorted({r.mode for r in records if getattr(r, "mode", "")})
    if not modes:
        return ""
    parts = []
    if "offline" in modes:  # the caution's wording is shared with Compare and the case file
        parts.append(f"Mode: {OFFLINE_LABEL} — answers are extractive sentences picked from each context. "
                     + judge_caution(OFFLINE_JUDGE_LABEL))
    llms = [m for m in modes if m != "offline"]
    if llms:
        parts.append(f"Answered by {', '.join(llms)}. " + judge_caution(f"LLM judge ({', '.join(llms)})"))
    return " ".join(parts)


def failure_banner(outcome: EvalOutcome) -> None:
    """Failed runs, loud: how many, and their first distinct errors (each with its count and
    methods); they are in no number below. Runs a recording does not cover, named."""
    note = outcome.coverage_note()
    if note:
        st.warning(md_text("Not recorded: " + note))
    f = outcome.summary.failures
    if not f.count:
        return
    lines = [f"**{f.count} of {f.of} runs failed** and are left out of every mean, CI, chart and paired test "
             "(each figure says n of N). First distinct errors:"]
    lines += [f"- {g.count}× ({md_text(', '.join(g.methods))}, first on {md_text(g.first_qid)}): {md_text(g.error)}"
              for g in f.groups[:3]]
    if len(f.groups) > 3:
        lines.append(f"- … {len(f.groups) - 3} more distinct errors (the results file has every one)")
    st.error("\n".join(lines))


def render(outcome: EvalOutcome, methods: Sequence[str]) -> None:
    s = outcome.summary
    st.subheader("Results")
    failure_banner(outcome)
    if not outcome.records:
        st.info("Nothing was evaluated: no chosen run is covered (see above).")
        return
    note = judge_note(outcome.records)
    if note:
        st.info(md_text(note))
    budget = s.settings.get("budget_tokens")
    st.caption(md_text(f"{s.n_questions} questions × {len(methods)} methods · means with 95% percentile-bootstrap "
                       f"CIs (n_boot={s.n_boot})"
                       + (f" · every method's context budget {budget} tokens" if budget else "")
                       + (f" · gold answer in the graph for {100 * s.gold_in_graph:.1f}% of questions"
                          if s.gold_in_graph is not None else "")
                       + f" · results file: {outcome.results_path}"))
    st.dataframe(summary_frame(s), hide_index=True, width="stretch")
    judge_check_panel(s)
    st.plotly_chart(eval_charts.metric_bars(s), width="stretch", key="kgviz_eval_bars")
    coverage_charts(outcome, methods)
    left, right = st.columns(2)
    with left:
        no_tokens = all(m.estimates["tokens"].mean == 0 for m in s.methods.values() if m.n_ok)
        # offline runs spend no tokens: latency is the cost. A session default, not index=: the key is
        # kept across pages (ui.state.keep_inputs), and Streamlit warns when a kept key also gets a default
        st.session_state.setdefault("kgviz_eval_cost", "latency_s" if no_tokens else "tokens")
        cost = st.selectbox("Cost axis", ["tokens", "cost_usd", "latency_s"], key="kgviz_eval_cost",
                            format_func=lambda k: {"tokens": "tokens", "cost_usd": "$", "latency_s": "latency"}[k])
        st.plotly_chart(eval_charts.quality_vs_cost(s, cost=cost), width="stretch", key="kgviz_eval_cost_chart")
    with right:
        st.plotly_chart(eval_charts.hallucination_vs_coverage(s), width="stretch", key="kgviz_eval_hall")
    metric = st.radio("Heatmap metric", ["acc", "em", "coverage"], horizontal=True, key="kgviz_eval_hm",
                      format_func=lambda k: {"acc": "Acc", "em": "EM", "coverage": "Coverage"}[k])
    st.plotly_chart(eval_charts.question_heatmap(outcome.records, methods, metric=metric), width="stretch",
                    key="kgviz_eval_heatmap")
    with st.expander("Paired comparisons (sign-flip permutation test)", expanded=False):
        st.caption("A − B on the questions both methods answered without failing (n); p from a two-sided "
                   "paired sign-flip permutation test on the mean difference. A method with no successful run "
                   "is in no pair.")
        st.dataframe(comparisons_frame(s), hide_index=True, width="stretch")
    question_picker(outcome, methods)


# --- judge check (issue 22.3): how far to trust the claim judge on these gold answers -------------
def judge_check_panel(summary: EvalSummary) -> None:
    """Per judge: the share of right answers (EM 1) and of wrong answers (EM 0, F1 < 0.5) it called
    supported; the figures are kgviz.evaluate.judge_check's, as in `kgviz eval --json`."""
    for check in summary.judge_checks:
        st.markdown("**Judge check** " + md_text(f"({check.judge or 'claim judge'}): {RIGHT_LABEL}: "
                                                  f"{check.right.text()} · {WRONG_LABEL}: {check.wrong.text()}"
                                                  + (f" · {check.unparsed} left out (judge reply not parsed)"
                                                     if check.unparsed else "")))
        st.caption("A judge worth trusting calls most right answers supported and few wrong ones; "
                   "a judge that calls everything supported scores high on both.")


def coverage_charts(outcome: EvalOutcome, methods: Sequence[str]) -> None:
    """Coverage against the context each method used; beside it coverage by budget when the
    results file holds runs at more than one budget (earlier runs on this page, same questions)."""
    qids = {r.qid for r in outcome.records}
    earlier = read_results(outcome.results_path) if outcome.results_path is not None else outcome.records
    by_budget = eval_charts.coverage_by_budget([r for r in earlier if r.qid in qids], methods)
    left, right = st.columns(2) if by_budget is not None else (st.container(), None)
    with left:
        st.plotly_chart(eval_charts.coverage_vs_context(outcome.summary), width="stretch",
                        key="kgviz_eval_cov_tokens")
    if right is not None:
        with right:
            st.plotly_chart(by_budget, width="stretch", key="kgviz_eval_cov_budget")


def question_picker(outcome: EvalOutcome, methods: Sequence[str]) -> None:
    """Pick one question: see every method's answer and open it in Compare or Trace."""
    st.subheader("One question")
    questions = {r.qid: r for r in outcome.records}
    qid = st.selectbox("Question", list(questions), key="kgviz_eval_pick",
                       format_func=lambda q: f"{q}: {questions[q].question[:90]}")
    if qid is None:
        return
    recs = [r for r in outcome.records if r.qid == qid]
    st.text(f"Gold: {' | '.join(recs[0].answers)}")
    frame, colours = question_frame(recs)
    # the verdict cell in its outcome's colour (kgviz.verify.outcome: green only when right and grounded)
    styled = frame.style.apply(lambda col: [f"background-color: {c}; color: white" for c in colours],
                               subset=["verdict"])
    st.dataframe(styled, hide_index=True, width="stretch")
    c = st.columns([1, 1, 2], vertical_alignment="bottom")
    if c[0].button("Open in Compare", key="kgviz_eval_to_compare"):
        open_in_compare(recs[0].question, recs[0].answers)
    method = c[2].selectbox("Method", list(methods), key="kgviz_eval_trace_method")
    if c[1].button("Open in Trace", key="kgviz_eval_to_trace"):
        open_in_trace(recs[0].question, method)


def question_frame(recs: Sequence[Any]) -> tuple[pd.DataFrame, list[str]]:
    """One row per method on one question: the verdict (right x grounded), its two marks and the
    numbers; a failed run shows its error and no number. Returns the colours of the verdicts too."""
    rows, colours = [], []
    for r in recs:
        o = of_record(r)
        colours.append(o.colour)
        rows.append({"method": r.method, "answer": f"error: {r.error}" if r.error else r.answer,
                     "verdict": o.label,
                     "correct": f"{o.correct.symbol} {o.correct.text}" if o.correct else "",
                     "grounded": f"{o.grounded.symbol} {o.grounded.text}" if o.grounded else "",
                     # text, so a failed run's cell is empty (a null reads "None" in the grid)
                     "EM": "" if r.error else f"{r.metrics.get('em', 0.0):.0f}",
                     "F1": "" if r.error else f"{r.metrics.get('f1', 0.0):.2f}",
                     "funnel": r.funnel.get("label", "")})
    return pd.DataFrame(rows), colours


def open_in_compare(question: str, golds: Sequence[str]) -> None:
    """Fill the Compare page's "type a question" inputs and switch to it."""
    st.session_state["kgviz_cmp_source"] = "Type a question"
    st.session_state["kgviz_cmp_question"] = question
    st.session_state["kgviz_cmp_gold"] = " | ".join(golds)
    st.switch_page(COMPARE_PAGE)


def open_in_trace(question: str, method: str) -> None:
    """Point the Trace page at this question and method (default parameters) and switch to it."""
    st.session_state[tui.K_QUESTION] = question
    st.session_state[tui.K_METHOD] = method
    st.session_state[f"{tui.K_PRESET}|{method}"] = tui.NO_PRESET
    st.session_state[tui.K_STARTED] = True
    st.switch_page(TRACE_PAGE)
