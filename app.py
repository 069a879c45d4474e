"""kgviz Streamlit entry point: page navigation only. No logic lives here.

Run: streamlit run app.py

Every page starts with ``ctx = ui.page_setup()``, which draws the shared sidebar (workspace,
LLM, embedder, status). The page files live in ``views/``, not ``pages/``: Streamlit treats a
folder named ``pages/`` next to the entry script as a legacy multipage folder, and a deep link
or a refresh right after a server start then showed its raw page list (app, build, compare, ...)
instead of this navigation (tests/e2e/test_state_e2e.py).
"""
import streamlit as st

from kgviz import ui

# No icons: a material icon becomes a favicon fetched from a CDN (kgviz must work offline), and
# emoji show as empty boxes on machines without an emoji font.
st.set_page_config(page_title="kgviz", layout="wide")

pages = [
    st.Page("views/home.py", title="Home", default=True),
    st.Page("views/build.py", title="Build"),
    st.Page("views/explore.py", title="Explore"),
    st.Page("views/trace.py", title="Trace"),
    st.Page("views/compare.py", title="Compare"),
    st.Page("views/evaluate.py", title="Evaluate"),
]
# The last line of defence: pages wrap their own sections, and this catches what escapes them
# (one line for a KgvizError, a short message plus details for a bug; never a raw traceback).
with ui.error_boundary():
    st.navigation(pages).run()
