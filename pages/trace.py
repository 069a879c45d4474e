"""Trace: run one method on one question and step through what it did, on the graph."""
import streamlit as st

from kgviz import ui
from kgviz.ui import trace as tui

ctx = ui.page_setup()
st.title("Trace a method")
st.caption("Run one retrieval method and replay its steps: the graph highlights what each step "
           "touched, and the panel beside it shows the step's scores, LLM call and cost.")

with ui.error_boundary("Trace"):
    if not tui.check_graph(ctx):
        st.stop()
    question = tui.question_input()
    c = st.columns([2, 1])
    with c[0]:
        method = tui.method_picker()
    with c[1]:
        preset = tui.preset_picker(method)
    params = tui.params_form(method, preset)
    b = st.columns([1, 2, 2], vertical_alignment="center")
    clicked = b[0].button("Run", type="primary", disabled=not question)
    st.session_state.setdefault(tui.K_AUTO, ctx.offline)  # a default, not value=: kept across pages
    auto = b[1].toggle("Re-run when an input changes", key=tui.K_AUTO,
                       help="Runs are cached for this session; with an LLM each new setting costs calls.")
    with b[2]:
        present = tui.presentation_toggle()
    if not question:
        st.info("Type a question or pick a sample question.")
        st.stop()
    run = tui.get_run(ctx, method, question, params, preset, clicked=clicked, auto=auto)
    if run is None:
        st.info("Press Run to trace this method on the question.")
        st.stop()
    key = tui.run_key(ctx, method, question, params, preset)
    ui.provenance.mark(ctx, "trace")  # runs are cached by workspace, embedder and LLM: always current
    tui.run_error(run)
    tui.step_viewer(run, key, ctx, present=present)
    tui.lesson_button(run, ctx, key)
    tui.outcome(run, ctx)
