"""Home: what kgviz is, the workspace, provider status, and a one-click sample build."""
import streamlit as st

from kgviz import ui

ctx = ui.page_setup()
st.title("kgviz")

# The whole page inside one boundary; sections keep their own so one failure hides nothing else.
with ui.error_boundary("Home page"):
    st.markdown(
        "Build a knowledge graph from your documents, then watch four KG-RAG retrieval methods "
        "(KG-RAG, KG-Retriever, KG-Infused RAG, KET-RAG) walk it step by step, next to plain "
        "text retrieval. Everything runs locally in an embedded Kùzu database; without an API key "
        "kgviz runs in an offline mode with deterministic heuristics instead of an LLM."
    )

    # first, so "Load sample data" is on the first screen (1280×720) above the workspace and status
    st.subheader("Sample data")
    st.caption("A small corpus written for kgviz (fictional towns, people and institutions).")
    recording = ui.actions.sample_recording()
    OFFLINE_REPLIES = "offline heuristics"
    choice = st.radio("Replies", [OFFLINE_REPLIES] + ([recording.label] if recording else []), horizontal=True,
                      help="Recorded: a real model's replies for the sample corpus and questions, replayed "
                           "without the model (no key, no network); anything else has no recorded reply.")
    picked = recording if recording is not None and choice == recording.label else None
    if picked is not None:
        st.caption(ui.render.md_text(f"Recorded replies, replayed: {picked.detail}. Costs shown are the recorded ones. "
                                     f"Builds into the workspace '{ui.actions.RECORDED_WORKSPACE}'."))
    if st.button("Load sample data", type="primary", disabled=not ui.actions.sample_available(),
                 on_click=ui.actions.choose_sample_replies, args=(picked,)):
        with ui.error_boundary("Sample build"):
            report = ui.actions.build_sample(ctx)
            u = report.usage_by_stage.get("extract")
            cost = (f" Recorded replies ({report.mode}): {u.calls} calls, {u.input_tokens:,} + {u.output_tokens:,} "
                    f"tokens, {u.latency_s:,.0f} s of model time when recorded." if picked is not None and u is not None else "")
            st.success(
                f"Sample built: {report.new_documents} new documents, {report.counts.get('Entity', 0)} entities, "
                f"{report.counts.get('Triple', 0)} triples.{cost} Open Explore to look around."
            )

    st.subheader("Workspace")
    st.caption("A workspace is one database folder. Pick one in the sidebar or create a new one.")
    st.code(str(ctx.db_dir), language=None)
    summary = st.container()  # filled last, so it reflects a sample build made on this run
    ui.workspace_form()

    st.subheader("Providers")
    ui.status(ctx, notices=False)  # the sidebar already warns about an embedder fallback

    st.subheader("Neural embedder")
    with ui.error_boundary("Neural embedder"):
        ui.models.embedder_pull(ctx)

    with summary, ui.error_boundary("Workspace"):
        ui.render.workspace_summary(ui.actions.counts(ctx) if ui.resources.database_exists(ctx) else None)
