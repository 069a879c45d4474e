"""kgviz Streamlit entry point: page navigation only. No logic lives here.

Run: streamlit run app.py

Every page starts with ``ctx = ui.page_setup()``, which draws the shared sidebar (workspace,
LLM, embedder, status). Streamlit treats the ``pages/`` folder next to this script as a legacy
multipage folder until st.navigation has run once; ``page_setup`` leaves that mode so a deep link
right after a server start shows this navigation (kgviz.ui.sidebar.leave_legacy_page_mode).
"""
import streamlit as st

# Before anything slow (importing kgviz.ui takes about a second in a fresh server): a page link
# clicked while this first run is still going drops ?ws= from the URL (kgviz.ui.state).
st.session_state.setdefault("_kgviz_url_workspace", st.query_params.get("ws"))

from kgviz import ui  # noqa: E402

# No icons: a material icon becomes a favicon fetched from a CDN (kgviz must work offline), and
# emoji show as empty boxes on machines without an emoji font.
st.set_page_config(page_title="kgviz", layout="wide")

pages = [
    st.Page("pages/home.py", title="Home", default=True),
    st.Page("pages/build.py", title="Build"),
    st.Page("pages/explore.py", title="Explore"),
    st.Page("pages/trace.py", title="Trace"),
    st.Page("pages/compare.py", title="Compare"),
    st.Page("pages/evaluate.py", title="Evaluate"),
]
# The last line of defence: pages wrap their own sections, and this catches what escapes them
# (one line for a KgvizError, a short message plus details for a bug; never a raw traceback).
with ui.error_boundary():
    ui.sidebar.app_navigation(pages).run()
