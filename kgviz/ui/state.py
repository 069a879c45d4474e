"""Session-level choices (workspace, LLM spec, API key, embedder spec) and workspace folders.

The API key lives in ``st.session_state`` only: it is never written to disk, never logged and
never part of a cache key that could be persisted.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import streamlit as st

from kgviz.config import DEFAULT_ANTHROPIC_MODEL, DEFAULT_OPENAI_MODEL, Settings, resolve_llm_spec
from kgviz.errors import ConfigError
from kgviz.provenance import Provenance

# session_state keys (widget keys too, so the sidebar widgets and these helpers agree)
K_WORKSPACE = "kgviz_workspace"
K_LLM_CHOICE = "kgviz_llm_choice"
K_LLM_CUSTOM = "kgviz_llm_custom"
K_API_KEY = "kgviz_api_key"
K_EMBEDDER = "kgviz_embedder"
K_LAST_REPORT = "kgviz_last_report"
K_MADE = "kgviz_made"  # result key -> Provenance of the result kept under it
K_RERUN = "kgviz_rerun"  # result keys whose page was asked to re-run (by the stale mark's button)

OTHER_SPEC = "other (type a spec)"
LLM_PRESETS = ("offline", f"anthropic:{DEFAULT_ANTHROPIC_MODEL}", f"openai:{DEFAULT_OPENAI_MODEL}")
_WORKSPACE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
SAMPLE_DIR = Path(__file__).resolve().parents[2] / "sample_data" / "corpus"


@dataclass(frozen=True)
class AppContext:
    """What every page needs: settings, the chosen database folder and provider specs."""

    settings: Settings
    db_dir: Path
    llm_spec: str  # resolved: "offline" or "provider:model[...]"
    embedder_spec: str
    api_key: str | None = field(default=None, repr=False)

    @property
    def offline(self) -> bool:
        return self.llm_spec == "offline"


def settings() -> Settings:
    """Settings from the environment (read every run: cheap, and tests change the env)."""
    return Settings.from_env()


def list_workspaces(s: Settings) -> list[Path]:
    """Database folders to offer: every folder under ``workspaces_dir`` plus ``db_dir`` (which
    KGVIZ_DB may put elsewhere), the configured one first."""
    found: list[Path] = [s.db_dir]
    if s.workspaces_dir.is_dir():
        for p in sorted(s.workspaces_dir.iterdir()):
            if p.is_dir() and p.resolve() != s.db_dir.resolve():
                found.append(p)
    return found


def create_workspace(s: Settings, name: str) -> Path:
    """Make ``workspaces_dir/name`` (the database itself is created when first opened)."""
    name = name.strip()
    if not _WORKSPACE_NAME.match(name):
        raise ConfigError(
            f"invalid workspace name {name!r}",
            hint="Use letters, digits, '-', '_' or '.', starting with a letter or digit (max 64).",
        )
    path = s.workspaces_dir / name
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def default_llm_choice(s: Settings) -> tuple[str, str]:
    """(preset choice, custom spec) for the initial sidebar state."""
    spec = resolve_llm_spec(s.llm_spec)
    return (spec, "") if spec in LLM_PRESETS else (OTHER_SPEC, spec)


def current_context() -> AppContext:
    """The context for this run, from session state (set by the sidebar widgets) and defaults.
    Recomputed each call: cheap, and never stale when a page runs without the sidebar."""
    s = settings()
    ws = st.session_state.get(K_WORKSPACE)
    db_dir = Path(ws) if ws else s.db_dir
    choice, custom = default_llm_choice(s)
    choice = st.session_state.get(K_LLM_CHOICE, choice)
    spec = (st.session_state.get(K_LLM_CUSTOM, custom) or "").strip() if choice == OTHER_SPEC else choice
    emb = (st.session_state.get(K_EMBEDDER) or s.embedder_spec).strip()
    key = st.session_state.get(K_API_KEY) or None
    return AppContext(s, db_dir, spec or "offline", emb or s.embedder_spec, key)


# --- state that survives a reload or a page switch -----------------------------------------------
Q_WORKSPACE = "ws"  # query parameter naming the workspace: a reload (a new session) keeps it


K_URL_WORKSPACE = "_kgviz_url_workspace"  # the ?ws= name the session opened with (app.py sets it first)


def remember_url_workspace() -> None:
    """Keep the URL's workspace name in the session before the page links are drawn. A click on
    a page link that interrupts the session's first run switches pages with the query
    parameters cleared, so a page that read the URL only then started in the default workspace
    (issue 28: 2 of 7 clicks within 0.2 s of opening ``?ws=NAME``)."""
    name = st.query_params.get(Q_WORKSPACE)
    if name and K_WORKSPACE not in st.session_state and not st.session_state.get(K_URL_WORKSPACE):
        st.session_state[K_URL_WORKSPACE] = name


def workspace_from_url(options: list[str]) -> str | None:
    """The workspace the URL names (``?ws=<folder name>``, or the name remembered from the URL
    the session opened with) if it is one of ``options``: the name, never a path, so a link
    cannot point the app at an arbitrary folder."""
    name = st.query_params.get(Q_WORKSPACE) or st.session_state.get(K_URL_WORKSPACE)
    if not name:
        return None
    return next((o for o in options if Path(o).name == name), None)


def restore_workspace(options: list[str]) -> None:
    """Before the sidebar's selectbox: a new session (a reload) starts in the URL's workspace."""
    if K_WORKSPACE not in st.session_state:
        found = workspace_from_url(options)
        if found is not None:
            st.session_state[K_WORKSPACE] = found
    st.session_state.pop(K_URL_WORKSPACE, None)


def publish_workspace() -> None:
    """After the selectbox: write the chosen workspace into the URL (every run, since a page
    switch clears query parameters)."""
    ws = st.session_state.get(K_WORKSPACE)
    if ws and st.query_params.get(Q_WORKSPACE) != Path(ws).name:
        st.query_params[Q_WORKSPACE] = Path(ws).name


# the Trace, Compare and Evaluate inputs (question, method, parameters, Compare setup, QA choice)
PAGE_INPUTS = ("kgviz_trace_", "kgviz_cmp_", "kgviz_eval_")
# buttons, download buttons and uploaders: Streamlit refuses assignments to these
NOT_ASSIGNABLE = ("kgviz_cmp_run", "kgviz_cmp_upload", "kgviz_cmp_trace_", "kgviz_cmp_export_", "kgviz_cmp_to_",
                  "kgviz_eval_upload", "kgviz_eval_run", "kgviz_eval_to_", "kgviz_trace_prev", "kgviz_trace_next",
                  "kgviz_trace_play", "kgviz_trace_lesson")


def keep_inputs(prefixes: tuple[str, ...] = PAGE_INPUTS, skip: tuple[str, ...] = NOT_ASSIGNABLE) -> None:
    """Streamlit forgets a widget's value at the end of a run that did not draw it (another page
    was shown). Re-assigning the keys at the start of *every* page's run (kgviz.ui.sidebar does)
    turns them into session values that survive the visit."""
    for key in list(st.session_state):
        k = str(key)
        if k.startswith(prefixes) and not k.startswith(skip):
            st.session_state[k] = st.session_state[k]


# --- results and where they came from (kgviz.provenance) -----------------------------------------
MAX_LOOSE_PROVENANCE = 64  # records for results kept elsewhere (Trace runs), oldest dropped first


def keep_result(key: str, value: object, made: Provenance) -> None:
    """Keep a result for this session together with the settings it was made with: every page
    that shows a kept result checks them against the current ones first (kgviz.ui.provenance)."""
    st.session_state[key] = value
    note_made(key, made)


def note_made(key: str, made: Provenance) -> None:
    """Record ``made`` for a result kept under ``key`` (a session key, or a key into a cache such
    as the Trace page's runs). Records of the latter are bounded; a session key's is kept."""
    records: dict[str, Provenance] = st.session_state.setdefault(K_MADE, {})
    records.pop(key, None)  # re-inserted last: the newest are dropped last
    records[key] = made
    loose = [k for k in records if k not in st.session_state]
    for k in loose[: max(0, len(loose) - MAX_LOOSE_PROVENANCE)]:
        del records[k]


def made(key: str) -> Provenance | None:
    """The settings the result under ``key`` was made with; None when unknown."""
    return st.session_state.get(K_MADE, {}).get(key)


K_RERUN_NOW = "kgviz_rerun_now"  # the requests this script run may act on


def ask_rerun(key: str) -> None:
    """Button callback: the page holding ``key`` runs its action again on its next run."""
    st.session_state.setdefault(K_RERUN, set()).add(key)


def take_rerun_requests() -> None:
    """At the start of every run (the sidebar): requests made by the last click are this run's,
    and only this run's, so a request its page could not act on never fires later."""
    st.session_state[K_RERUN_NOW] = st.session_state.pop(K_RERUN, set())


def rerun_asked(key: str) -> bool:
    """True in the run that follows ``ask_rerun(key)`` (once): the page ORs it into its run
    button."""
    asked: set[str] = st.session_state.get(K_RERUN_NOW, set())
    if key in asked:
        asked.discard(key)
        return True
    return False


K_EXPORTS = "kgviz_exports"  # {button key: (fingerprint, file text)}


def export_text(key: str, fingerprint: tuple[object, ...], make: Callable[[], str]) -> str:
    """The text a download button hands out, made once per ``fingerprint`` and kept for this
    session's reruns (a case file or lesson costs about as much as the page around it). Made in
    the script, not on click: Streamlit's on-click ``data`` callable gave no file when the button
    was clicked while the page was still finishing (the provenance e2e, 2 of 5 runs)."""
    kept: dict[str, tuple[tuple[object, ...], str]] = st.session_state.setdefault(K_EXPORTS, {})
    old = kept.get(key)
    if old is not None and old[0] == fingerprint:
        return old[1]
    text = make()
    kept[key] = (fingerprint, text)
    return text
