"""Explore: find an entity, see its neighbourhood, and inspect where each fact came from."""
import streamlit as st

from kgviz import ui

ctx = ui.page_setup()
st.title("Explore the graph")

with ui.error_boundary("Explore"):
    if not ui.actions.workspace_has_graph(ctx):
        st.info("This workspace has no entities yet: build documents or load the sample first.")
        st.stop()
    query = st.text_input("Search an entity", placeholder="e.g. Vohl")
    hits = ui.actions.search(ctx, query) if query.strip() else []
    if query.strip() and not hits:
        st.warning("No entity matches that name.")
    if hits:
        if hits[0].match == "vector":
            st.caption("No name contains the text; showing the closest entities by embedding.")
        hit = st.selectbox("Entity", hits, format_func=lambda h: ui.render.plain(h.label()))
        c = st.columns(2)
        hops = c[0].radio("Hops", [1, 2], horizontal=True)
        cap = c[1].slider("Node cap", 5, 300, 60, step=5)
        view = ui.actions.neighbourhood_view(ctx, hit.id, hops=hops, cap=cap)
        st.caption(view.caption)
        ui.render.graph(view.html, height=view.height)
        picked = st.selectbox("Details for node", list(view.names),
                              format_func=lambda i: ui.render.plain(view.names[i]))
        if picked:
            ui.render.entity_details(ui.actions.details(ctx, picked))
