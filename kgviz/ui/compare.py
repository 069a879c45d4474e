"""Compare page support: running a comparison through the Trace page's run cache, and its
renderers.

Runs share the Trace page's session cache (``kgviz.ui.trace.K_RUNS``, keyed by
``kgviz.ui.trace.run_key``) with the parameters the Trace form starts from, so a method already
traced is not re-run here, and "Open in Trace" shows exactly the run compared here (Trace finds
it in the cache instead of asking to run it again). A non-default answer budget gets its own key.

While a comparison runs, each method's card is drawn as soon as that method is run and verified
(``live_cards``), in the place it will keep; when all are done the live cards make way for the
full comparison (cards with their "Open in Trace" buttons, overlay, funnel, export).
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

import pandas as pd
import streamlit as st

from kgviz import compare as cmp
from kgviz.answer import DEFAULT_BUDGET_TOKENS
from kgviz.evaluate.qa import QAItem, load_questions, parse_question_bytes
from kgviz.methods.base import MethodContext
from kgviz.methods.registry import get_method, list_methods
from kgviz.provenance import export_name
from kgviz.run import Run
from kgviz.ui import claim_evidence as uce
from kgviz.ui import provenance, resources
from kgviz.ui.provenance import made_at
from kgviz.ui import trace as tui
from kgviz.ui.render import OFFLINE_LABEL, graph, md_text
from kgviz.ui.state import AppContext, export_text
from kgviz.verify.evidence import ClaimEvidence
from kgviz.verify.outcome import judge_caution
from kgviz.viz.case_file import LABEL_COLOURS, LABEL_TEXT, badge_html, esc, highlight_answer
from kgviz.viz.graph_html import graph_html
from kgviz.viz.overlay import (GOLD_MARK, HIGHLIGHT_BORDERS, Overlay, build_overlay, default_methods, facet,
                               highlight, overlay_html, overlay_positions)

K_COMPARISON = "kgviz_comparison"
TRACE_PAGE = "pages/trace.py"
SAMPLE_QUESTIONS = Path(__file__).resolve().parents[2] / "sample_data" / "questions.jsonl"
COLUMNS_PER_ROW = 3  # ours: wider columns keep answers readable; more methods wrap to a new row
SHOWN_EVIDENCE = 3  # ours: evidence ids listed per claim; the export and the Trace page have them all


def trace_form_defaults(method: str) -> dict[str, Any]:
    """The parameter values the Trace page's form starts from with no preset (same rounding)."""
    base = get_method(method).Params()
    values: dict[str, Any] = {}
    for spec in tui.param_specs(type(base)):
        value = getattr(base, spec.name)
        if spec.kind == "bool":
            values[spec.name] = bool(value)
        elif spec.kind == "int":
            values[spec.name] = int(value)
        elif spec.kind == "float":
            values[spec.name] = round(float(value), 4 if 0.0 <= float(value) <= 1.0 else 6)
        else:
            values[spec.name] = str(value)
    return values


def run_key(ctx: AppContext, method: str, question: str, budget_tokens: int | None = None) -> str:
    """The Trace page's key for this method with default parameters (plus a non-default budget)."""
    budget = None if budget_tokens in (None, DEFAULT_BUDGET_TOKENS) else budget_tokens
    return tui.run_key(ctx, method, question.strip(), trace_form_defaults(method), "", budget_tokens=budget)


def cached_run(key: str) -> Run | None:
    return tui.cached_run(key)


def method_context(ctx: AppContext) -> MethodContext:
    return MethodContext(resources.store(ctx), resources.reasoner(ctx))


def method_titles() -> dict[str, str]:
    return {m: getattr(get_method(m), "title", m) for m in list_methods()}


def sample_questions() -> list[QAItem]:
    return load_questions(SAMPLE_QUESTIONS) if SAMPLE_QUESTIONS.is_file() else []


def uploaded_questions(upload: Any) -> list[QAItem]:
    return parse_question_bytes(upload.getvalue(), upload.name)


def run_comparison(ctx: AppContext, question: str, methods: Sequence[str], golds: Sequence[str], *,
                   budget_tokens: int | None = None) -> cmp.Comparison:
    """Run (or reuse) every chosen method, verify them, and keep the comparison for this session."""
    if not methods:
        from kgviz.errors import ConfigError

        raise ConfigError("no method chosen", hint="tick at least one method")
    question = question.strip()
    budget = None if budget_tokens in (None, DEFAULT_BUDGET_TOKENS) else int(budget_tokens)
    keys = {m: run_key(ctx, m, question, budget) for m in methods}
    cached = {m: run for m, k in keys.items() if (run := cached_run(k)) is not None}
    live = st.empty()
    try:
        with live.container():
            on_result = live_cards(list(methods), cached)
            comparison = cmp.compare(question, list(methods), method_context(ctx), golds, cached=cached,
                                     budget_tokens=budget, on_result=on_result)
    finally:  # the full comparison is drawn below, from the session state (or the error, by the page)
        live.empty()
    cache: dict[str, Run] = st.session_state.setdefault(tui.K_RUNS, {})
    for r in comparison.results:
        if not r.run.error:  # a failed run is retried next time rather than cached
            cache.pop(keys[r.method], None)  # re-insert: the newest runs are the last evicted
            cache[keys[r.method]] = r.run
    while len(cache) > max(tui.MAX_RUNS, len(methods)):  # the Trace page's bound on kept runs
        cache.pop(next(iter(cache)))
    provenance.keep(K_COMPARISON, (comparison, keys if budget is None else {}), ctx)
    return comparison


def live_cards(methods: list[str], cached: dict[str, Run]) -> cmp.OnResult:
    """A card per method, each saying it is running, in the grid the comparison will use; returns
    the callback that draws a finished method's card in its place (no buttons: the full
    comparison that follows has them)."""
    status = st.empty()
    total = len(methods)
    done: list[str] = []

    def say() -> None:
        pending = [m for m in methods if m not in done]
        status.caption(md_text(f"{len(done)} of {total} methods done (reusing {len(cached)} runs already "
                               f"made); running: {', '.join(pending) or 'none'}; each card is verified as it "
                               "finishes."))

    say()
    slots = []
    for start in range(0, total, COLUMNS_PER_ROW):
        for col, m in zip(st.columns(COLUMNS_PER_ROW, border=True), methods[start: start + COLUMNS_PER_ROW]):
            slot = col.empty()
            with slot.container():
                st.subheader(m)
                st.caption("running…")
            slots.append(slot)

    def on_result(i: int, result: cmp.MethodResult) -> None:
        with slots[i].container():
            method_column(result, "")
        done.append(methods[i])
        say()

    return on_result


def open_in_trace(ctx: AppContext, run: Run) -> None:
    """Point the Trace page's widgets at this run (question, method, default preset and params,
    whose cached result it then finds) and switch to it."""
    st.session_state[tui.K_QUESTION] = run.question
    st.session_state[tui.K_METHOD] = run.method
    st.session_state[f"{tui.K_PRESET}|{run.method}"] = tui.NO_PRESET
    stale = [k for k in st.session_state if str(k).startswith(f"kgviz_trace_p|{run.method}||")]
    for k in stale:  # a form the user edited earlier would point at another run
        del st.session_state[k]
    st.session_state[tui.K_STARTED] = True
    st.switch_page(TRACE_PAGE)


def last_comparison() -> tuple[cmp.Comparison, dict[str, str]] | None:
    return st.session_state.get(K_COMPARISON)


# --- renderers ------------------------------------------------------------------------------------
def _fmt_metric(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".") if x else "0"


def claims_html(claims: Sequence[Any]) -> str:
    """The judged claims as a short list, verdict badge first (a table in a third of the page
    showed only a cut-off claim column). Every text is escaped: claims and reasons come from LLMs."""
    rows = []
    for c in claims:
        label = LABEL_TEXT.get(c.label, c.label)
        colour = LABEL_COLOURS.get(c.label, "#e0e0e0")
        ev = list(c.evidence)
        more = f" +{len(ev) - SHOWN_EVIDENCE} more" if len(ev) > SHOWN_EVIDENCE else ""
        notes = ([f"evidence: {esc(', '.join(ev[:SHOWN_EVIDENCE]))}{more}"] if ev else []) + \
            ([esc(c.reason)] if c.reason else [])
        rows.append(
            f'<li class="kgviz-claim claim-{esc(c.label)}" style="margin:0 0 6px 0">'
            f'<span class="kgviz-claim-verdict" style="background:{colour};color:#222;padding:1px 7px;'
            f'border-radius:9px;font-size:12px;white-space:nowrap;margin-right:6px">{esc(label)}</span>'
            f'{esc(c.text)}'
            + (f'<div style="color:#777;font-size:12px;margin-left:2px;overflow-wrap:anywhere">'
               f'{" · ".join(notes)}</div>' if notes else "")
            + "</li>")
    return ('<ul class="kgviz-claims" style="list-style:none;padding:0;margin:4px 0;font-size:14px">'
            + "".join(rows) + "</ul>")


def method_column(result: cmp.MethodResult, key: str) -> Run | None:
    """One method's column; returns the run when its \"Open in Trace\" button was pressed."""
    run, v = result.run, result.verdict
    st.subheader(run.method)
    st.html(f'<div class="kgviz-verdict">{badge_html(result.outcome)}</div>')
    if run.error:
        st.error(md_text(run.error))
    else:
        st.html(f'<div class="kgviz-answer" style="font-size:1.05rem;padding:4px 0">'
                f'{highlight_answer(run.answer, v.claims)}</div>')
    u = run.usage
    facts = [f"context {len(run.context.items)} items / {run.context.n_tokens} tok",
             f"{u.total_tokens:,} tok", f"{u.calls} calls", f"${u.cost_usd:.4f}", f"{run.seconds:.2f} s"]
    if result.metrics is not None:
        facts.insert(0, f"EM {_fmt_metric(result.metrics.em)} · F1 {_fmt_metric(result.metrics.f1)}")
    lines = [" · ".join(facts)]
    if result.funnel is not None:
        lines.append(md_text(f"funnel: {result.funnel.label}"))
    if run.context.notes.get("curated"):  # kg-rag with use_curated: facts the corpus KG does not hold
        lines.append(md_text(f"curated KG: {run.context.notes['curated']}"))
    st.caption("  \n".join(lines))  # one element, a line each: every card is drawn twice (live, then in full)
    ours = [s for s in run.trace if s.ours]
    if ours:  # the steps that depart from the method's paper (TraceStep.ours), each with its reason
        with st.expander(f"{len(ours)} of {len(run.trace)} steps marked ours"):
            # one caption, a line per step: a caption each was a third of the cards' elements
            # (39 on HotpotQA with every method, drawn twice: live, then in the full comparison)
            st.caption("  \n".join(md_text(f"{s.index + 1}. {s.title} — ours: {s.ours}") for s in ours))
    if v.claims:
        st.html(claims_html(v.claims))
    for e in v.errors:
        st.warning(md_text(e))
    if key and st.button("Open in Trace", key=f"kgviz_cmp_trace_{run.method}",
                         help="Step through this run on the Trace page (the same cached run)."):
        return run
    return None


def columns(comparison: cmp.Comparison, keys: dict[str, str]) -> Run | None:
    results = comparison.results
    picked: Run | None = None
    for start in range(0, len(results), COLUMNS_PER_ROW):
        row = results[start: start + COLUMNS_PER_ROW]
        for col, result in zip(st.columns(COLUMNS_PER_ROW, border=True), row):
            with col:
                picked = method_column(result, keys.get(result.method, "")) or picked
    return picked


K_OVERLAY_METHODS = "kgviz_cmp_overlay_methods"
K_OVERLAY_VIEW = "kgviz_cmp_overlay_view"
K_OVERLAY_FOR = "kgviz_cmp_overlay_for"  # the methods of the comparison the pick belongs to
VIEWS = ("One graph, coloured by method", "One graph per method (same places)")
FACETS_PER_ROW = 3


def overlay(comparison: cmp.Comparison, ctx: AppContext, *, height: int = 560,
            evidence: ClaimEvidence | None = None) -> None:
    """The evidence graph for the methods picked (a few by default: nine colours on one graph are
    a grey blob), as one overlay or as facets that line up node for node. With ``evidence`` (a
    clicked claim) the nodes its judge cited are highlighted and the claim's method is drawn."""
    ran = [r.method for r in comparison.results]
    picked_before = [m for m in st.session_state.get(K_OVERLAY_METHODS, []) if m in ran]
    # a comparison of other methods starts from the defaults; the same one keeps the user's pick
    # (re-assigned each run so it also survives a visit to another page)
    if st.session_state.get(K_OVERLAY_FOR) != ran or not picked_before:
        picked_before = default_methods(ran)
    if evidence is not None and evidence.method not in picked_before:  # the clicked claim's evidence is drawn
        picked_before.append(evidence.method)
    st.session_state[K_OVERLAY_METHODS] = picked_before
    st.session_state[K_OVERLAY_FOR] = ran
    c = st.columns([3, 2], vertical_alignment="bottom")
    chosen = c[0].multiselect("Methods on the graph", ran, key=K_OVERLAY_METHODS,
                              help="Start with two or three: evidence most methods share is drawn grey.")
    view = c[1].radio("View", VIEWS, key=K_OVERLAY_VIEW, horizontal=False)
    runs = [r.run for r in comparison.results if r.method in chosen]
    if not runs:
        st.info("Pick at least one method to draw its evidence.")
        return
    ov = build_overlay(runs, resources.store(ctx), golds=comparison.golds)
    if comparison.golds:
        found = [n for n in ov.graph.nodes if n.label.startswith(GOLD_MARK)]
        st.caption(f"{GOLD_MARK} = a node naming the gold answer (gold border): {len(found)} on the graph"
                   if found else "No retrieved node names the gold answer.")
    cited: list[str] = []
    if evidence is not None:
        ov, cited = highlight(ov, evidence.node_ids, evidence.label)
        st.caption(md_text(f"Claim → evidence: {len(cited)} of the {len(evidence.node_ids)} nodes the judge's "
                           f"citation stands for are on this graph, drawn large with a thick border; the rest is "
                           f"faded.") if evidence.node_ids else "Claim → evidence: the judge cited no graph node "
                   "for this claim.")
    if view == VIEWS[1]:
        _facets(ov, chosen, cited, HIGHLIGHT_BORDERS.get(evidence.label, "#000000") if evidence else "")
    else:
        st.caption(f"{ov.graph.caption()} · {ov.shared} retrieved by more than one method (grey, darker = "
                   "shared by more; the border is the first method's colour, ×k = found by k methods); labelled: the gold "
                   "answer, each method's top evidence and the most shared nodes, each where it covers no label before it "
                   "(hover a node for its text; zoom in for the labels that did not fit)")
        graph(overlay_html(ov, height=height), height=height)
    _method_legend(ov, chosen)


def _facets(ov: Overlay, methods: Sequence[str], cited: Sequence[str] = (), border: str = "") -> None:
    positions = overlay_positions(ov)
    st.caption("Each method's evidence at the same places: full colour = only this method found it; "
               "paler = other methods found it too (paler the more of them).")
    for start in range(0, len(methods), FACETS_PER_ROW):
        cols = st.columns(FACETS_PER_ROW)
        for col, m in zip(cols, methods[start: start + FACETS_PER_ROW]):
            nodes, edges = facet(ov, m)
            nodes = [replace(n, border=border, size=(n.size or 12) + 8) if n.id in cited else n for n in nodes]
            with col:
                st.markdown(f"**{md_text(m)}** · {len(nodes)} nodes")
                if nodes:
                    graph(graph_html(nodes, edges, height=FACET_HEIGHT, legend=False, directed=False,
                                     positions=positions), height=FACET_HEIGHT, legend=False)
                else:
                    st.caption("No graph evidence.")


FACET_HEIGHT = 360


def _method_legend(ov: Overlay, methods: Sequence[str]) -> None:
    own = {m: 0 for m in methods}
    total = dict(own)
    for ms in ov.by_node.values():
        for m in ms:
            if m in total:
                total[m] += 1
        if len(ms) == 1 and ms[0] in own:
            own[ms[0]] += 1
    legend = "".join(
        f'<span style="margin-right:14px"><span style="display:inline-block;width:11px;height:11px;'
        f'border-radius:6px;background:{ov.colours[m]};margin-right:4px"></span>{esc(m)}: {total[m]} nodes '
        f"({own[m]} only here)</span>" for m in own)
    st.html(f'<div class="kgviz-method-legend" style="font-size:16px">{legend}</div>')


def overlap_table(comparison: cmp.Comparison) -> None:
    if not comparison.overlap:
        return
    methods, rows = cmp.overlap_matrix(comparison)
    st.caption("Jaccard index of the graph nodes each pair of methods retrieved (shared nodes in brackets).")
    st.dataframe(pd.DataFrame([r[1:] for r in rows], index=methods, columns=methods), width="stretch")


def funnel_table(comparison: cmp.Comparison) -> None:
    rows = [r.funnel for r in comparison.results if r.funnel is not None]
    if not rows:
        st.caption("Give a gold answer to see where each method lost it.")
        return
    st.dataframe(pd.DataFrame([{"method": f.method, "in corpus": f.in_corpus, "in graph": f.in_graph,
                                "in context": f.in_context, "in kept context": f.in_kept_context,
                                "in answer": f.in_answer, "failure": f.label, "why": f.explanation}
                               for f in rows]), hide_index=True, width="stretch")


def exports(comparison: cmp.Comparison, ctx: AppContext) -> None:
    """The case file (HTML) and the comparison (JSON), each made once per comparison and state of
    the human labels (``export_text``): a case file with its graph costs about as much as the rest
    of the page, and making both on every rerun kept each session's script busy (issue 28.6). A
    label saved after the comparison changes the fingerprint, so it is in the next file."""
    from kgviz.evaluate.labels import LABELS_FILE, load_labels

    store = resources.store(ctx)
    path = Path(ctx.db_dir) / LABELS_FILE
    stat = path.stat() if path.is_file() else None
    fingerprint = (id(comparison), made_at(K_COMPARISON), stat and (stat.st_mtime_ns, stat.st_size))
    html = export_text("kgviz_cmp_export_html", fingerprint,
                       lambda: cmp.case_file_html(comparison, store, labels=load_labels(ctx.db_dir)))
    doc = export_text("kgviz_cmp_export_json", fingerprint,
                      lambda: cmp.case_file_json(comparison, store, labels=load_labels(ctx.db_dir)))
    c = st.columns(2)
    c[0].download_button("Download case file (HTML)", html,
                         file_name=export_name("case", comparison.question, made_at(K_COMPARISON), "html"),
                         mime="text/html", key="kgviz_cmp_export_html")
    c[1].download_button("Download JSON", doc,
                         file_name=export_name("comparison", comparison.question, made_at(K_COMPARISON), "json"),
                         mime="application/json", key="kgviz_cmp_export_json")


def render_comparison(comparison: cmp.Comparison, keys: dict[str, str], ctx: AppContext) -> None:
    s = comparison.summary()
    judge = comparison.judge + (f" — {OFFLINE_LABEL}" if comparison.mode == "offline" else "")
    vu = comparison.verification_usage
    cost = f" · verification: {vu.calls} calls, {vu.total_tokens:,} tokens, ${vu.cost_usd:.4f}" if vu.calls else ""
    ran = s['methods'] - s['failed']  # abstentions ran and count in both shares (as on Evaluate)
    right = f"Right: {s['right']} of {ran} methods that ran · " if comparison.golds else ""
    st.caption(md_text(f"Judge: {judge}. {right}Hallucinated: {s['hallucinated']} of {ran} "
                       f"methods that ran · abstained: {s['abstained']} · failed: {s['failed']}{cost}"))
    caution = judge_caution(comparison.judge)
    if caution:  # the same warning as on Evaluate, wherever a verdict is shown
        st.info(md_text(caution))
    if not comparison.golds:
        st.caption("No gold answer: each badge says only whether the answer is grounded in its context, "
                   "not whether it is right.")
    picked = columns(comparison, keys)
    if picked is not None:
        open_in_trace(ctx, picked)
    evidence = uce.pick_claim(ctx, comparison)
    st.subheader("Evidence overlay")
    overlay(comparison, ctx, evidence=evidence)
    overlap_table(comparison)
    st.subheader("Gold funnel")
    funnel_table(comparison)
    st.subheader("Export")
    exports(comparison, ctx)
