"""Evaluate page, failure explorer: the taxonomy of where each method's answers were lost (chart
and table with 95 % CIs), the "A right / B wrong" questions between two methods, and the failure
table (one row per question x method, one page at a time, sorted over every filtered row) with
filters, a filter saved by name in the workspace, CSV / JSONL downloads of the filtered rows, a row
handed to Trace or Compare, and a person's label on a row's answer with the agreements of the run
and claim labels (kgviz.evaluate.labels).

Rows, stages, filters and exports come from kgviz.evaluate.failures; this module only draws them.
Widget keys start with ``kgviz_eval_fx_`` so the filter survives a visit to Trace and back
(kgviz.ui.state.keep_inputs); buttons start with ``kgviz_eval_to_`` (never assigned to).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import pandas as pd
import streamlit as st

from kgviz.evaluate import failures as fx
from kgviz.evaluate import labels as lb
from kgviz.evaluate.batch import EvalOutcome
from kgviz.ui import evaluate as ue
from kgviz.ui.render import md_text
from kgviz.ui.state import AppContext
from kgviz.verify.outcome import KIND_LABELS
from kgviz.viz import eval_charts

K = "kgviz_eval_fx_"
NO_SAVED = "—"


def taxonomy_frame(tax: dict[str, fx.MethodTaxonomy]) -> pd.DataFrame:
    """One row per method: runs, failures and, per stage some method has, "n · share% [lo, hi]"."""
    present = [s for s in fx.FAILURE_STAGES if any(t.stages.get(s) for t in tax.values())]
    rows = []
    for m, t in tax.items():
        row: dict[str, Any] = {"method": m, "runs": t.runs, "failures": t.failures}
        for s in t.shares:
            if s.stage in present:
                row[s.stage] = f"{s.count} · {100 * s.share:.0f}% [{100 * s.lo:.0f}, {100 * s.hi:.0f}]"
        rows.append(row)
    return pd.DataFrame(rows)


def rows_frame(rows: Sequence[fx.FailureRow]) -> pd.DataFrame:
    # every column of the export, in its order: what you see is what you download
    return pd.DataFrame([r.to_dict() for r in rows], columns=list(fx.COLUMNS))


def _open_saved(folder: str, methods: Sequence[str]) -> None:
    """on_click: put a saved filter's values into the filter widgets (before they are drawn); a
    method this evaluation did not run (or a stage or outcome this version does not know: a file
    edited by hand) is dropped, since a widget refuses a value it does not offer."""
    name = st.session_state.get(K + "saved")
    f = fx.load_filters(folder).get(str(name))
    if f is None:
        return
    st.session_state[K + "methods"] = [m for m in f.methods if m in methods]
    st.session_state[K + "stages"] = [x for x in f.stages if x in fx.STAGES]
    st.session_state[K + "outcomes"] = [x for x in f.outcomes if x in fx.OUTCOME_KINDS]
    st.session_state[K + "disagree"] = f.disagree
    st.session_state[K + "gold_ctx"] = f.gold_in_context_wrong
    st.session_state[K + "text"] = f.text


def _filter_widgets(methods: Sequence[str]) -> fx.FailureFilter:
    c = list(st.columns(3))
    chosen = c[0].multiselect("Show methods", list(methods), key=K + "methods")
    stages = c[1].multiselect("Show stages", list(fx.STAGES), key=K + "stages")
    outcomes = c[2].multiselect("Show outcomes", list(fx.OUTCOME_KINDS), key=K + "outcomes",
                                format_func=lambda kind: KIND_LABELS.get(kind, kind))
    c = st.columns([1, 1, 2])
    disagree = c[0].checkbox("Methods disagree", key=K + "disagree",
                             help="Questions right for some methods and wrong for others "
                                  "(failed runs count as neither).")
    gold_ctx = c[1].checkbox("Gold in context but wrong", key=K + "gold_ctx",
                             help="A gold answer was in the context the answer step kept, yet the answer is wrong.")
    text = c[2].text_input("Search question, gold, answer, error", key=K + "text")
    return fx.FailureFilter(tuple(chosen), tuple(stages), tuple(outcomes), disagree, gold_ctx, text)


def _saved_filters(ctx: AppContext, current: fx.FailureFilter, methods: Sequence[str]) -> None:
    folder = str(ctx.db_dir)
    saved = fx.load_filters(folder)
    c = st.columns([2, 1, 2, 1], vertical_alignment="bottom")
    c[0].selectbox("Saved filter", [NO_SAVED, *saved], key=K + "saved")
    c[1].button("Open saved filter", key="kgviz_eval_to_fx_open", on_click=_open_saved, args=(folder, list(methods)),
                disabled=not saved)
    name = c[2].text_input("Save this filter as", key=K + "name")
    if c[3].button("Save", key="kgviz_eval_to_fx_save", disabled=not name.strip()):
        path = fx.save_filter(folder, name, current)
        st.success(md_text(f"Saved filter '{name.strip()}' in {path}"))


def _examples(rows: Sequence[fx.FailureRow], tax: dict[str, fx.MethodTaxonomy]) -> None:
    """One example question per (method, stage), opened in Compare."""
    by = {(r.qid, r.method): r for r in rows}
    examples = {f"{m} · {stage}: {qid}": by[(qid, m)] for m, t in tax.items() for stage, qid in t.examples.items()}
    if not examples:
        return
    c = st.columns([3, 1], vertical_alignment="bottom")
    pick = c[0].selectbox("An example per method and stage", list(examples), key=K + "example")
    row = examples.get(str(pick))
    if row is not None and c[1].button("Open example in Compare", key="kgviz_eval_to_fx_example"):
        ue.open_in_compare(row.question, row.gold.split(" | ") if row.gold else [])


def pair_view(rows: Sequence[fx.FailureRow], methods: Sequence[str]) -> None:
    st.markdown("**A right / B wrong** (both ran without failing; right = EM or the gold answer contained)")
    if len(methods) < 2:
        st.caption("Needs two methods.")
        return
    c = st.columns(2)
    a = c[0].selectbox("A (right)", list(methods), key=K + "pair_a")
    st.session_state.setdefault(K + "pair_b", methods[1])  # a session default, not index= (keep_inputs)
    b = c[1].selectbox("B (wrong)", list(methods), key=K + "pair_b")
    pairs = fx.pair_rows(rows, a, b) if a != b else []
    st.caption(f"{len(pairs)} question{'s' * (len(pairs) != 1)} where {a} is right and {b} is wrong")
    if pairs:
        st.dataframe(pd.DataFrame([{"qid": x.qid, "question": x.question, "gold": x.gold, f"{a} answer": x.answer,
                                    f"{b} answer": y.answer, f"{b} stage": y.stage} for x, y in pairs]),
                     hide_index=True, width="stretch")


K_CACHE = "kgviz_fx_cache"  # not under kgviz_eval_: no widget's, kgviz.ui.state.keep_inputs leaves it


def _derived(ctx: AppContext, outcome: EvalOutcome) -> tuple[lb.Labels, list[fx.FailureRow],
                                                              dict[str, fx.MethodTaxonomy], lb.Agreement]:
    """Rows, taxonomy and claim agreement of this evaluation, kept between reruns (every widget
    click reruns the page: on 10,000 runs the rows and the bootstrap CIs take seconds) and made
    again when the evaluation or the workspace's labels file changes."""
    path = Path(ctx.db_dir) / lb.LABELS_FILE
    stat = path.stat() if path.is_file() else None
    sig = (str(ctx.db_dir), stat.st_mtime_ns if stat else None, stat.st_size if stat else None)
    hit = st.session_state.get(K_CACHE)
    if hit is not None and hit[0] is outcome and hit[1] == sig:
        return hit[2]
    labels = lb.load_labels(ctx.db_dir)
    rows = fx.rows_of(outcome.records, labels)
    # stages do not depend on the labels: the same evaluation keeps its taxonomy
    tax = hit[2][2] if hit is not None and hit[0] is outcome else fx.taxonomy(rows, n_boot=outcome.summary.n_boot)
    claims = lb.agreement(lb.claim_pairs(lb.record_claims(outcome.records), labels))
    st.session_state[K_CACHE] = (outcome, sig, (labels, rows, tax, claims))
    return labels, rows, tax, claims


def render(ctx: AppContext, outcome: EvalOutcome, methods: Sequence[str]) -> None:
    labels, rows, tax, claim_agreement = _derived(ctx, outcome)
    if not rows:
        return
    st.subheader("Failures")
    st.caption("Each run's stage is the first that applies: run failed; correct; judge disagreement (right but "
               "judged unsupported, or wrong but judged supported); abstained; else where the gold funnel lost "
               "the gold answer (extraction miss, retrieval/traversal miss, budget cut, generation error, ...).")
    st.plotly_chart(eval_charts.failure_taxonomy(tax), width="stretch", key=K + "chart")
    st.dataframe(taxonomy_frame(tax), hide_index=True, width="stretch")
    _examples(rows, tax)
    pair_view(rows, methods)

    st.markdown("**Failure table**")
    current = _filter_widgets(methods)
    _saved_filters(ctx, current, methods)
    shown = fx.apply_filter(rows, current)
    page = _page(shown)
    st.caption(f"{len(shown)} of {len(rows)} runs · human labels vs the automatic 'correct' mark: "
               + lb.agreement(lb.labelled_pairs(rows, labels)).line()
               + " · claim labels vs the judge: "
               + claim_agreement.line("claim"))
    st.dataframe(rows_frame(page.rows), hide_index=True, width="stretch", key=K + "table")
    st.caption(f"rows {page.first}–{page.last} of {len(shown)} · page {page.number} of {page.pages} "
               "(a column header sorts this page; 'Sort by' sorts every filtered row)")
    c = st.columns(2)
    c[0].download_button("Download rows (CSV)", fx.to_csv(shown), file_name="failures.csv", mime="text/csv",
                         key="kgviz_eval_to_fx_csv")
    c[1].download_button("Download rows (JSONL)", fx.to_jsonl(shown), file_name="failures.jsonl",
                         mime="application/jsonl", key="kgviz_eval_to_fx_jsonl")
    if page.rows:
        _open_row(ctx, page.rows)


PAGE_SIZES = (50, 100, 500)  # ours: a page the browser draws at once; downloads hold every filtered row
UNSORTED = "(results order)"


def _page(shown: Sequence[fx.FailureRow]) -> fx.Page:
    """Sort every filtered row (server side), then cut the page the table draws."""
    c = st.columns([2, 1, 1, 1], vertical_alignment="bottom")
    column = c[0].selectbox("Sort by", [UNSORTED, *fx.COLUMNS], key=K + "sort")
    descending = c[1].checkbox("Descending", key=K + "desc")
    size = int(c[2].selectbox("Rows per page", PAGE_SIZES, key=K + "page_size"))
    pages = max(1, -(-len(shown) // size))
    if int(st.session_state.get(K + "page", 1)) > pages:  # fewer rows now (a filter): stay in range
        st.session_state[K + "page"] = pages
    number = c[3].number_input("Page", 1, pages, key=K + "page")
    ordered = list(shown) if column == UNSORTED else fx.sort_rows(shown, str(column), descending=descending)
    return fx.page_of(ordered, int(number), size)


def _label_row(ctx: AppContext, row: fx.FailureRow) -> None:
    """A person's verdict on the picked run's answer, saved in the workspace (kgviz.evaluate.labels)."""
    key = lb.label_key(row.question, row.method, row.answer)
    if st.session_state.get(K + "label_for") != key:  # another row: show its saved label
        st.session_state[K + "label_for"] = key
        st.session_state[K + "label_right"] = ("unlabelled" if row.human_right is None
                                               else "right" if row.human_right else "wrong")
        st.session_state[K + "label_note"] = row.human_note
    c = st.columns([2, 3, 1], vertical_alignment="bottom")
    verdict = c[0].radio("Your verdict on this answer", ["unlabelled", "right", "wrong"], horizontal=True,
                         key=K + "label_right")
    note = c[1].text_input("Note", key=K + "label_note")
    if c[2].button("Save label", key="kgviz_eval_to_fx_label"):
        lb.save_label(ctx.db_dir, key, lb.RunLabel({"right": True, "wrong": False}.get(verdict), note))
        st.rerun()  # the table and the agreement figure read the labels again


def _open_row(ctx: AppContext, shown: Sequence[fx.FailureRow]) -> None:
    labels = {f"{r.qid} · {r.method}": r for r in shown}
    c = st.columns([3, 1, 1], vertical_alignment="bottom")
    pick = c[0].selectbox("Row", list(labels), key=K + "row")
    row = labels.get(str(pick))
    if row is None:
        return
    if c[1].button("Open row in Trace", key="kgviz_eval_to_fx_trace",
                   help="Reruns this question with this method at its default parameters."):
        ue.open_in_trace(row.question, row.method)
    if c[2].button("Open row in Compare", key="kgviz_eval_to_fx_compare"):
        ue.open_in_compare(row.question, row.gold.split(" | ") if row.gold else [])
    if not row.failed:
        _label_row(ctx, row)
