"""Build: upload files (or use the sample), see the cost, build with progress, read the report,
and the graph overview (KET-RAG: KNN degrees, PageRank core chunks, skeleton vs full KG cost)."""
import streamlit as st

from kgviz import ui
from kgviz.config import WORKERS_RANGE
from kgviz.ui import build_ket

ctx = ui.page_setup()
st.title("Build the graph")

# One boundary around the whole page (sections keep their own, so one failing section does not
# hide the others): nothing on it may end in a traceback.
with ui.error_boundary("Build page"):
    source = st.radio("Documents", ["Upload files", "Sample corpus"], horizontal=True)
    files = []
    if source == "Upload files":
        files = st.file_uploader("Text, Markdown, PDF or JSONL corpus ({\"title\", \"text\"} per line)",
                                 type=["txt", "md", "markdown", "pdf", "jsonl"], accept_multiple_files=True) or []

    defaults = ui.actions.default_params(ctx)
    with st.expander("Options", expanded=False):
        c = st.columns(4)
        chunk = c[0].number_input("Chunk size (tokens)", 50, 4000, defaults.chunk_tokens, step=50)
        overlap = c[1].number_input("Overlap (tokens)", 0, 1000, defaults.chunk_overlap, step=10)
        workers = c[2].number_input("Workers", *WORKERS_RANGE, defaults.workers)
        similar_k = c[3].number_input("SIMILAR_DOC K", 0, 50, defaults.similar_docs_k,
                                      help="Each document links to its K most similar documents (KG-Retriever §3.2.1)")
        ket = build_ket.ket_options(defaults)
        refresh = False if ctx.offline else st.checkbox(
            "Ask the model again (ignore cached replies)",
            help="Replies are cached only when they parsed; tick this to re-ask even those.")
        batch = False if ctx.offline else st.checkbox(
            "Batch API", key="kgviz_build_batch",
            help="Extract through the provider's batch API (OpenAI and Anthropic models): half the price, replies "
                 "within 24 hours. Progress shows the batch as submitted / in progress / done; a build stopped "
                 "meanwhile resumes the same batch when run again, never paying twice.")

    loaded = None
    with ui.error_boundary("Build"):
        params = ui.actions.build_params(ctx, chunk_tokens=int(chunk), chunk_overlap=int(overlap),
                                         workers=int(workers), similar_docs_k=int(similar_k), batch=batch, **ket)
        if source == "Sample corpus":
            loaded = ui.actions.load_sample(ctx)
        elif files:
            loaded = ui.actions.load_uploads(ctx, files)
        if loaded is not None:
            ui.render.ingest_problems(loaded)
            if loaded.documents:
                st.write(f"{len(loaded.documents)} document(s) ready.")
                est = ui.actions.estimate(ctx, loaded.documents, params)
                if est.local and st.button("Calibrate", help="Time a few short calls to the local model "
                                           "(alone, and two at once with 2+ workers) and its extraction of "
                                           "3 to 8 chunks of these documents (until their output length "
                                           "settles), for the time estimate."):
                    with st.spinner("Timing the local model…"):
                        ui.actions.calibrate(ctx, params, loaded.documents)
                    est = ui.actions.estimate(ctx, loaded.documents, params)
                ui.render.cost_estimate(est)
                if ui.provenance.run_wanted(st.button("Build", type="primary"), ui.actions.K_LAST_REPORT):
                    ui.actions.build(ctx, loaded.documents, params, refresh=refresh)
        else:
            st.info("Upload files or choose the sample corpus.")

    report = ui.actions.last_report()
    if report is not None:
        with ui.error_boundary("Report"):
            ready = loaded is not None and bool(loaded.documents)  # what Re-run would build
            if ui.provenance.mark(ctx, "build report", ui.actions.K_LAST_REPORT, rerun=ready):
                ui.render.build_report(report, degrees=ui.actions.degrees(ctx))
                build_ket.build_cost(ctx, report)

    with ui.error_boundary("Graph overview"):  # has_chunks opens the database: it may be locked
        if build_ket.has_chunks(ctx):
            st.subheader("Graph overview")
            build_ket.overview(ctx)
