"""Compare: one question, several methods side by side, with claim-level hallucination checks,
the evidence overlay, the gold funnel and an exportable case file."""
import streamlit as st

from kgviz import ui
from kgviz.ui import compare as uc
from kgviz.verify.judge import HALLUCINATION_DEFINITION

ctx = ui.page_setup()
st.title("Compare methods")
st.caption(HALLUCINATION_DEFINITION)

with ui.error_boundary("Compare"):
    if not ui.actions.workspace_has_graph(ctx):
        st.info("This workspace has no graph yet: build documents or load the sample first.")
        st.stop()
    source = st.radio("Question", ["Type a question", "Sample questions", "Upload a JSONL file"], horizontal=True,
                      key="kgviz_cmp_source")
    question, golds = "", []
    if source == "Type a question":
        question = st.text_input("Question", key="kgviz_cmp_question")
        gold_text = st.text_input("Gold answer(s), optional (separate several with |)", key="kgviz_cmp_gold")
        golds = [g.strip() for g in gold_text.split("|") if g.strip()]
    else:
        items = []
        if source == "Sample questions":
            items = uc.sample_questions()
        else:
            upload = st.file_uploader('JSONL: {"question": ..., "answers": [...]} per line', type=["jsonl"],
                                      key="kgviz_cmp_upload")
            items = uc.uploaded_questions(upload) if upload is not None else []
        if items:
            item = st.selectbox("Question", items, format_func=lambda q: q.question, key="kgviz_cmp_pick")
            question, golds = item.question, list(item.answers)
            st.caption(ui.render.md_text("Gold: " + (" | ".join(golds) or "(none)")))

    titles = uc.method_titles()
    for m in titles:  # defaults in session state (not value=), so a page visit keeps the choice
        st.session_state.setdefault(f"kgviz_cmp_m_{m}", True)
    st.session_state.setdefault("kgviz_cmp_budget", 4000)
    st.markdown("**Methods**")
    boxes = st.columns(4)
    chosen = [m for i, m in enumerate(titles)
              if boxes[i % 4].checkbox(m, key=f"kgviz_cmp_m_{m}", help=titles[m])]
    budget = st.number_input("Answer-step context budget (tokens)", 100, 100_000, step=500,
                             key="kgviz_cmp_budget",
                             help="At 4000 (the default) each method's context reaches the answer whole, under its "
                                  "own budget (KET's λ, kg-rag's max_context_tokens, text-rag's budget_tokens); "
                                  "any other value cuts every method's context to it.")
    if ui.provenance.run_wanted(st.button("Compare", type="primary", disabled=not question.strip(), key="kgviz_cmp_run"),
                               uc.K_COMPARISON, possible=bool(question.strip())):
        uc.run_comparison(ctx, question, chosen, golds, budget_tokens=int(budget))

last = uc.last_comparison()
if last is not None:
    with ui.error_boundary("Comparison"):
        if ui.provenance.mark(ctx, "comparison", uc.K_COMPARISON):
            uc.render_comparison(*last, ctx)
