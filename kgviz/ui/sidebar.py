"""The shared sidebar: workspace, LLM provider + API key, embedder, and a status line."""
from __future__ import annotations

from pathlib import Path

from typing import Any

import streamlit as st

from kgviz.errors import KgvizError
from kgviz.ui import resources
from kgviz.ui.render import OFFLINE_LABEL, md_text
from kgviz.ui.state import (
    K_API_KEY,
    K_EMBEDDER,
    K_LLM_CHOICE,
    K_LLM_CUSTOM,
    K_WORKSPACE,
    LLM_PRESETS,
    OTHER_SPEC,
    AppContext,
    create_workspace,
    current_context,
    default_llm_choice,
    keep_inputs,
    list_workspaces,
    publish_workspace,
    remember_url_workspace,
    restore_workspace,
    settings,
    take_rerun_requests,
)


def _workspace_label(path: str, home: Path) -> str:
    p = Path(path)
    try:
        return str(p.relative_to(home))
    except ValueError:
        return str(p)


def page_setup() -> AppContext:
    """First line of every page: draw the shared sidebar and return the session's context.
    A bad setting (KGVIZ_* variable) stops the page with the one-line message: nothing on the
    page can work without settings, and a traceback would hide which variable is wrong."""
    leave_legacy_page_mode()
    try:
        ctx = render_sidebar()
    except KgvizError as exc:
        st.error(md_text(exc.user_message()) + " — fix it and restart kgviz.")
        st.stop()
        raise  # unreachable: st.stop raises; keeps the return type honest for type checkers
    unfinished_build_notice(ctx)
    return ctx


K_UNFINISHED_SLOT = "_kgviz_unfinished_build_slot"


def unfinished_build_notice(ctx: AppContext) -> None:
    """Top of every page: a workspace whose last build stopped before its end says so, with the
    stage it stopped in (leaving a page cancels the build running on it, so this is how a user
    who went on to Compare learns why a search has no index). While another session's build
    runs, it says that instead. A build finishing on this run clears the slot
    (``clear_unfinished_notice``)."""
    st.session_state.pop(K_UNFINISHED_SLOT, None)
    if not resources.database_exists(ctx):
        return
    try:
        store = resources.store(ctx)
    except KgvizError:  # the page that needs the store shows this error itself
        return
    from kgviz.index.steps import unfinished_build, unfinished_notice

    stage = unfinished_build(store)
    if stage is None:
        return
    if store.build_running():
        _watch_running_build(ctx)
        return
    slot = st.empty()
    st.session_state[K_UNFINISHED_SLOT] = slot
    slot.warning(md_text(unfinished_notice(stage)))


BUILD_WATCH_S = 1.0  # how often a page polls a running build of its workspace


@st.fragment(run_every=BUILD_WATCH_S)
def _watch_running_build(ctx: AppContext) -> None:
    """While a build of this workspace runs (another session's, or this session's own on a page
    just left: Streamlit starts the new page while the old one is still stopping its build), say
    so and its stage; when it ends, rerun the page so it shows the graph as the build left it."""
    from kgviz.index.steps import unfinished_build

    store = resources.store(ctx)
    if not store.build_running():
        st.rerun(scope="app")
    stage = unfinished_build(store) or "last"
    st.info(md_text(f"A build of this workspace is running (now in its {stage} stage; a build whose page was left "
                    "stops at the end of its current stage). This page shows the graph as it is now and "
                    "reloads when the build ends."))


def clear_unfinished_notice() -> None:
    """A build finished on this run: the notice drawn at the top of the page is out of date."""
    slot = st.session_state.pop(K_UNFINISHED_SLOT, None)
    if slot is not None:
        slot.empty()


def leave_legacy_page_mode() -> None:
    """Streamlit (1.67) treats a ``pages/`` folder beside the entry script as a legacy multipage
    app until ``st.navigation`` has run once in the server: the very first request, if it is a
    deep link such as /trace, runs pages/trace.py directly under a raw page list (app, build,
    compare, ...). kgviz keeps its pages in ``pages/`` and navigates with ``st.navigation`` in
    app.py, so a page that finds itself run in that legacy mode turns it off (the flag that
    ``st.navigation`` itself clears) and reruns: the rerun goes through app.py's navigation to
    the same page (tests/e2e/test_state_e2e.py). A session that has been through app.py's
    navigation already only clears the flag: a rerun would drop the widget event of this run
    (AppTest resets the flag before every run, so there it happens on every run)."""
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        if not st.session_state.get(_NAVIGATED):
            st.rerun()


_NAVIGATED = "_kgviz_app_navigation"


def app_navigation(pages: list) -> Any:
    """app.py's ``st.navigation``, remembering that this session has been through it."""
    st.session_state[_NAVIGATED] = True
    remember_url_workspace()  # before the links exist: a click cannot outrun it
    return st.navigation(pages)


_PERSISTENT = (K_WORKSPACE, K_LLM_CHOICE, K_LLM_CUSTOM, K_API_KEY, K_EMBEDDER)


def render_sidebar() -> AppContext:
    # Each page draws these widgets itself, and Streamlit drops a widget's value when the page
    # that drew it changes; re-assigning the keys first turns them into session values that
    # survive page switches (and a hidden API key field).
    for key in _PERSISTENT:
        if key in st.session_state:
            st.session_state[key] = st.session_state[key]
    keep_inputs()  # the same for the Trace / Compare / Evaluate inputs
    take_rerun_requests()  # a stale result's "Re-run" acts in this run or not at all
    s = settings()
    choice, custom = default_llm_choice(s)
    st.session_state.setdefault(K_LLM_CHOICE, choice)
    st.session_state.setdefault(K_LLM_CUSTOM, custom)
    st.session_state.setdefault(K_EMBEDDER, s.embedder_spec)
    options = [str(p) for p in list_workspaces(s)]
    restore_workspace(options)  # a reload keeps the workspace named in the URL
    chosen = st.session_state.get(K_WORKSPACE)
    if chosen not in options:  # e.g. a resolved path (a result's "switch back"): the option it names
        same = [o for o in options if chosen and Path(o).resolve() == Path(chosen).resolve()]
        st.session_state[K_WORKSPACE] = same[0] if same else options[0]

    with st.sidebar:
        st.header("kgviz")
        st.selectbox("Workspace (database folder)", options, key=K_WORKSPACE,
                     format_func=lambda p: _workspace_label(p, s.home),
                     help="Each workspace is one Kùzu database. Create one on the Home page.")
        st.selectbox("LLM", [*LLM_PRESETS, OTHER_SPEC], key=K_LLM_CHOICE,
                     help="offline = deterministic heuristics, no LLM and no network.")
        if st.session_state[K_LLM_CHOICE] == OTHER_SPEC:
            st.text_input("Provider spec", key=K_LLM_CUSTOM,
                          placeholder="openai-compatible:llama3.1@http://localhost:11434/v1")
        if st.session_state[K_LLM_CHOICE] != "offline":
            st.text_input("API key (kept in this browser session only)", key=K_API_KEY, type="password",
                          help="Never written to disk. Leave empty to use ANTHROPIC_API_KEY / OPENAI_API_KEY.")
        st.text_input("Embedder", key=K_EMBEDDER,
                      help="auto (a local fastembed model if one loads, else hashing; a workspace with a "
                           "graph keeps the embedder it was built with), hashing (offline), or "
                           "fastembed:<model>[@<local dir>]")
        ctx = current_context()
        publish_workspace()
        status(ctx)
    return ctx


def status(ctx: AppContext, *, notices: bool = True) -> None:
    """Which LLM and embedder this session uses; problems are shown, never hidden. An embedder
    fallback is one short warning with its full reason folded below it; ``notices=False`` (Home,
    under the sidebar that already says it) leaves the warning out and names the fallback only."""
    if ctx.offline:
        st.info(f"Mode: {OFFLINE_LABEL}")
    else:
        try:
            client = resources.llm(ctx)
            st.success(md_text(f"LLM: {client.provider}:{client.model}"))
        except KgvizError as exc:
            st.warning(md_text(f"LLM {ctx.llm_spec}: {exc.user_message()}"))
    try:
        emb, notice = resources.embedder(ctx)
        became = "auto → " if ctx.embedder_spec == "auto" else ""  # what auto resolved to, visibly
        fallback = " (a fallback: see the sidebar)" if notice and not notices else ""
        st.caption(md_text(f"Embedder: {became}{emb.id} ({emb.dim} dims){fallback}"))
        if notice and notices:
            st.warning(md_text(f"{emb.id} is a fallback: no neural embedder loaded."))
            with st.expander("Why, and how to use one"):
                st.caption(md_text(notice))
    except KgvizError as exc:
        st.warning(md_text(f"Embedder {ctx.embedder_spec}: {exc.user_message()}"))


def workspace_form() -> None:
    """Create a workspace folder and switch to it. The switch happens in a callback because the
    sidebar's workspace selectbox has already been drawn in this run."""

    def _create() -> None:
        try:
            path = create_workspace(settings(), st.session_state.get("kgviz_new_workspace", ""))
        except KgvizError as exc:
            st.session_state["kgviz_workspace_error"] = md_text(exc.user_message())
            return
        path.mkdir(parents=True, exist_ok=True)
        st.session_state.pop("kgviz_workspace_error", None)
        st.session_state[K_WORKSPACE] = str(path)

    cols = st.columns([3, 1], vertical_alignment="bottom")
    cols[0].text_input("New workspace name", key="kgviz_new_workspace", placeholder="e.g. lecture-3")
    cols[1].button("Create and switch", on_click=_create)
    if st.session_state.get("kgviz_workspace_error"):
        st.error(st.session_state["kgviz_workspace_error"])
