"""kgviz Streamlit entry point: page navigation only. No logic lives here.

Run: streamlit run app.py

Every page starts with ``ctx = ui.page_setup()``, which draws the shared sidebar (workspace,
LLM, embedder, status). The sidebar is drawn by the page rather than here because Streamlit
treats a folder named ``pages/`` next to the entry script as a legacy multipage folder: AppTest
(and the server's very first run) may execute a page file directly, without this script.
"""
import streamlit as st

from kgviz import ui

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
    st.navigation(pages).run()
