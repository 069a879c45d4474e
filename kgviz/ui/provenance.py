"""Results that know where they came from, on every page.

Pages keep their last result with ``keep`` (the settings it was made with go beside it, see
kgviz.ui.state.keep_result) and show it only after one call to ``mark``: a result made with the
current workspace, LLM and embedder gets a one-line caption saying so; one made with other
settings is not drawn (its charts, overlay and exports would read the current workspace, which is
not the one it came from) and a warning names where it came from and what changed, with a button
to re-run the page's action here and one to switch back to its settings. A page ORs
``run_wanted`` into its run button so "Re-run" does what that button does with the page's inputs.
"""
from __future__ import annotations

import time

import streamlit as st

from kgviz.errors import KgvizError
from kgviz.provenance import Provenance, changes, describe, llm_label
from kgviz.ui import resources
from kgviz.ui.render import md_text
from kgviz.ui.state import (
    K_EMBEDDER,
    K_LLM_CHOICE,
    K_LLM_CUSTOM,
    K_WORKSPACE,
    LLM_PRESETS,
    OTHER_SPEC,
    AppContext,
    ask_rerun,
    keep_result,
    made,
    rerun_asked,
)


def current(ctx: AppContext, *, stamped: bool = True) -> Provenance:
    """The settings in force for ``ctx``: the embedder as loaded (what "auto" became), or its spec
    marked "not loaded" when it cannot load (no result can then be current)."""
    try:
        emb, _notice = resources.embedder(ctx)
        embedder = str(emb.id)
    except KgvizError:
        embedder = f"{ctx.embedder_spec} (not loaded)"
    return Provenance.of(ctx.db_dir, ctx.llm_spec, embedder, time.time() if stamped else None,
                         embedder_spec=ctx.embedder_spec)


def keep(key: str, value: object, ctx: AppContext) -> None:
    """Keep a page's result under ``key`` with the settings it was made with."""
    keep_result(key, value, current(ctx))


def made_at(key: str) -> float | None:
    """When the result under ``key`` was made (for export names); None when unknown."""
    p = made(key)
    return p.made_at if p is not None else None


def run_wanted(clicked: bool, key: str, *, possible: bool = True) -> bool:
    """The page's run button, or the stale mark's "Re-run" for the result under ``key`` (the
    request is used up either way, so it never fires twice)."""
    asked = rerun_asked(key)
    return bool(clicked) or (asked and possible)


def switch_to(p: Provenance) -> None:
    """Button callback (runs before the sidebar is drawn): the sidebar's workspace, LLM and
    embedder become the ones ``p`` was made with."""
    st.session_state[K_WORKSPACE] = p.workspace
    if p.llm in LLM_PRESETS:
        st.session_state[K_LLM_CHOICE] = p.llm
    else:
        st.session_state[K_LLM_CHOICE] = OTHER_SPEC
        st.session_state[K_LLM_CUSTOM] = p.llm
    if p.embedder_spec:
        st.session_state[K_EMBEDDER] = p.embedder_spec


def mark(ctx: AppContext, what: str, key: str | None = None, *, rerun: bool = True) -> bool:
    """The one call before a page draws its kept result. True: draw it (a caption saying where it
    came from is shown). False: it came from other settings (or unknown ones) and must not be
    drawn; a warning says so, with Re-run (when ``rerun``) and switch-back buttons.

    ``key`` is the session key of the kept result; None for a result cached by the settings
    themselves (Trace's runs are keyed by workspace, embedder and LLM), which is current by
    construction."""
    now = current(ctx, stamped=False)
    if key is None:
        st.caption(md_text(f"This {what} is from {describe(now)} (the current settings)."))
        return True
    was = made(key)
    diff = ["made with settings kgviz did not record"] if was is None else changes(was, now)
    if was is not None and not diff:
        st.caption(md_text(f"This {what} is from {describe(was)} (the current settings)."))
        return True
    origin = "unknown settings" if was is None else describe(was)
    with st.container(border=True, key=f"kgviz_stale_{key}"):
        st.warning(md_text(f"Your last {what} is from {origin}, not from the current settings "
                           f"({'; '.join(diff)}), so it is not shown."))
        cols = st.columns(2)
        if rerun:
            cols[0].button("Re-run with the current settings", key=f"kgviz_rerun_{key}", on_click=ask_rerun,
                           args=(key,), help=f"Runs this page's {what} again here, with the page's inputs.")
        if was is not None:
            cols[1].button(md_text(f"Switch back to {was.workspace_name} / {llm_label(was.llm)}"),
                           key=f"kgviz_switch_back_{key}", on_click=switch_to, args=(was,),
                           help="Sets the sidebar's workspace, LLM and embedder to the ones this result was made with.")
    return False
