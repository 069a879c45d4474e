"""Evaluate: run several methods over a QA file, with bootstrap CIs, paired tests and charts."""
import streamlit as st

from kgviz import ui
from kgviz.methods.registry import list_methods
from kgviz.ui import evaluate as ue
from kgviz.ui import failures as uf

ctx = ui.page_setup()
st.title("Evaluate methods")
st.caption("Every chosen method answers every question; answers are scored (EM, F1, Acc, Coverage), "
           "checked claim by claim for hallucination, and summarised with 95% bootstrap confidence intervals.")

with ui.error_boundary("Evaluate"):
    if not ui.actions.workspace_has_graph(ctx):
        st.info("This workspace has no graph yet: build documents or load the sample first.")
        st.stop()
    source = st.radio("QA file", ue.SOURCES, horizontal=True, key="kgviz_eval_source")
    upload, path = None, ""
    if source == ue.SOURCES[1]:
        upload = st.file_uploader('JSONL: {"id": ..., "question": ..., "answers": [...]} per line', type=["jsonl"],
                                  key="kgviz_eval_upload")
    elif source == ue.SOURCES[2]:
        path = st.text_input("Path of a questions.jsonl file", key="kgviz_eval_path")
    items, source_id = ue.load_qa(source, upload, path)
    if not items:
        st.info("Choose a QA file.")
        st.stop()
    ue.form_defaults(ctx)  # per LLM: a recording's own methods and budgets, so the defaults replay
    if not 1 <= int(st.session_state.get("kgviz_eval_limit", 0)) <= len(items):  # a new, shorter file
        st.session_state["kgviz_eval_limit"] = min(len(items), 20)
    methods = st.multiselect("Methods", list_methods(), key="kgviz_eval_methods")
    equal = st.checkbox("One equal context budget for every method", key="kgviz_eval_equal",
                        help="Off: each method answers from its own context budget (KET's λ, kg-rag's "
                             "max_context_tokens, ...), as the recorded sample was recorded.")
    c = st.columns(3)
    limit = c[0].number_input("Questions (first N)", 1, len(items), key="kgviz_eval_limit")
    budget = c[1].number_input("Context budget (tokens)", 100, 100_000, step=500, key="kgviz_eval_budget",
                               disabled=not equal,
                               help="Equal budget: every method's own context budget and the shared answer "
                                    "step's are set to this; methods that stop on their own may use less.")
    workers = c[2].number_input("Workers", 1, 16, key="kgviz_eval_workers")
    baselines = st.checkbox("Add the BM25-only and dense-only baselines at this budget", key="kgviz_eval_baselines",
                            disabled=not equal)
    budget_tokens = int(budget) if equal else None
    run_methods = ue.with_baselines(methods, budget_tokens, baselines) if methods else []
    st.caption(f"{int(limit)} questions × {len(run_methods)} methods = {int(limit) * len(run_methods)} runs"
               + ue.runs_note(ctx))
    if ui.provenance.run_wanted(st.button("Run evaluation", type="primary", disabled=not methods, key="kgviz_eval_run"),
                               ue.K_OUTCOME, possible=bool(methods)):
        ue.run(ctx, items[: int(limit)], methods, source_id, budget_tokens=budget_tokens, workers=int(workers),
               baselines=baselines)

last = ue.last_outcome()
if last is not None:
    with ui.error_boundary("Results"):
        if ui.provenance.mark(ctx, "evaluation", ue.K_OUTCOME):
            ue.render(*last)
            uf.render(ctx, *last)
