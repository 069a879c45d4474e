"""The only package (besides pages/, the page files) that imports streamlit: cached resources, session state,
the shared sidebar, page actions and renderers. Pages use ``from kgviz import ui``."""
from kgviz.ui import actions, models, provenance, render, resources
from kgviz.ui.render import error_boundary
from kgviz.ui.sidebar import page_setup, render_sidebar, status, workspace_form
from kgviz.ui.state import AppContext, current_context, keep_inputs

__all__ = [
    "AppContext",
    "actions",
    "current_context",
    "error_boundary",
    "keep_inputs",
    "models",
    "page_setup",
    "provenance",
    "render",
    "render_sidebar",
    "resources",
    "status",
    "workspace_form",
]
