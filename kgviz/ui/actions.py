"""One call per page action: load documents, estimate, build, explore. Each wires the session's
resources (store, reasoner, embedder) to one kgviz library call, so pages stay widget-only."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import streamlit as st

from kgviz.errors import IngestError, KgvizError
from kgviz.index.params import BuildParams, BuildReport, CostEstimate
from kgviz.ingest import LoadLimits, LoadResult, load_paths
from kgviz.ingest import load_uploads as _load_uploads
from kgviz.types import Document
from kgviz.ui import jobs, provenance, resources, sidebar
from kgviz.ui.state import K_LAST_REPORT, SAMPLE_DIR, AppContext
from kgviz.viz import explore
from kgviz.viz.graph_html import graph_html


def load_uploads(ctx: AppContext, files: Iterable[Any]) -> LoadResult:
    """Streamlit UploadedFile objects -> ingest LoadResult (bad files listed, others kept)."""
    return _load_uploads([(f.name, f.getvalue()) for f in files], max_bytes=ctx.settings.max_file_bytes,
                         limits=LoadLimits(chunk_tokens=ctx.settings.chunk_tokens))


def load_sample(ctx: AppContext) -> LoadResult:
    """The bundled sample corpus (sample_data/corpus) as a LoadResult."""
    if not SAMPLE_DIR.is_dir():
        raise IngestError(str(SAMPLE_DIR), "the sample corpus folder is missing",
                          hint="Run kgviz from a source checkout that includes sample_data/.")
    return load_paths([SAMPLE_DIR], max_bytes=ctx.settings.max_file_bytes,
                      limits=LoadLimits(chunk_tokens=ctx.settings.chunk_tokens))


def build_params(ctx: AppContext, **overrides: Any) -> BuildParams:
    """BuildParams from the settings (chunk size, overlap, workers) plus page overrides."""
    base: dict[str, Any] = {"chunk_tokens": ctx.settings.chunk_tokens, "chunk_overlap": ctx.settings.chunk_overlap,
                            "workers": ctx.settings.workers}
    from kgviz.replay import builds_without_descriptions

    if builds_without_descriptions(ctx.llm_spec):
        # a recording without description replies: kgviz.replay.builds_without_descriptions
        base["ket_descriptions"] = False
    base.update({k: v for k, v in overrides.items() if v is not None})
    return BuildParams(**base)


def default_params(ctx: AppContext) -> BuildParams:
    """The build parameters a page starts from (settings + BuildParams defaults)."""
    return build_params(ctx)


def estimate(ctx: AppContext, documents: Sequence[Document], params: BuildParams) -> CostEstimate:
    from kgviz.index.pipeline import estimate_cost

    return estimate_cost(list(documents), params, ctx.llm_spec, resources.prices(ctx), cache_dir=ctx.settings.cache_dir)


def calibrate(ctx: AppContext, params: BuildParams, documents: Sequence[Document] = ()) -> None:
    """Time a few short calls to the session's local model and its extraction of chunks of
    ``documents`` until their output length settles (the Build page's Calibrate button), showing
    each extraction call as it ends."""
    from kgviz.index.estimate import calibrate_spec

    status = st.empty()

    def shown(done: int, most: int) -> None:
        status.caption(f"Extraction call {done} on these documents done (at most {most}; the calibration stops "
                       "once their output length settles).")

    calibrate_spec(ctx.llm_spec, ctx.settings, workers=params.workers, documents=documents, params=params,
                   on_sample_call=shown)
    status.empty()


def build(ctx: AppContext, documents: Sequence[Document], params: BuildParams, *,
          label: str = "Building the graph", refresh: bool = False) -> BuildReport:
    """Build into the workspace with live progress; the report is also kept for this session, with
    the settings it was made with. ``refresh`` bypasses cached LLM replies (the model is asked
    again for every new chunk)."""
    if not documents:
        raise KgvizError("nothing to build: no document could be loaded",
                         hint="Fix or remove the rejected files listed above, or load the sample.")
    store = resources.store(ctx)
    report = jobs.run_build(documents, store, resources.reasoner(ctx, refresh=refresh), params, label=label)
    sidebar.clear_unfinished_notice()  # this build finished what an earlier one left
    provenance.keep(K_LAST_REPORT, report, ctx)
    return report


def build_sample(ctx: AppContext) -> BuildReport:
    result = load_sample(ctx)
    if result.errors:
        raise result.errors[0]
    return build(ctx, result.documents, build_params(ctx), label="Building the sample corpus")


# --- the sample with recorded replies of a real model -------------------------------------------
RECORDED_WORKSPACE = "sample-recorded"  # its own database: an offline sample graph differs


@dataclass(frozen=True)
class SampleRecording:
    spec: str  # the LLM spec that replays it
    label: str  # "recorded from <model>"
    detail: str  # which model recorded what, when, from which kgviz commit


def sample_recording() -> SampleRecording | None:
    """The bundled recording (sample_recorded), or None when there is none to offer."""
    from kgviz.providers.recorded import cached_recording
    from kgviz.replay import SAMPLE_RECORDING

    try:
        rec = cached_recording(SAMPLE_RECORDING)
    except KgvizError:
        return None
    parts = (f"{h.get('phase', h['file'])} by {h['model']} on {str(h.get('recorded_at', '?'))[:10]} "
             f"(kgviz {str(h.get('kgviz_commit', '?'))[:10]})" for h in rec.headers)
    detail = "; ".join(dict.fromkeys(parts))  # side-by-side files of one phase read as one
    return SampleRecording(f"recorded:{SAMPLE_RECORDING}", f"recorded from {' + '.join(rec.models)}", detail)


def choose_sample_replies(recording: SampleRecording | None) -> None:
    """Button callback (it runs before the sidebar is drawn, so it may set the sidebar's keys):
    each choice selects its own workspace, LLM and embedder, whatever the one before it set.

    The recording: its own workspace, the recording as this session's LLM and the embedder it
    was recorded with. Offline heuristics: the offline LLM; coming from the recording's workspace,
    also the configured workspace and embedder (staying there would run offline heuristics over a
    real model's graph, with the recording's embedder); any other workspace is the user's choice
    and is kept with its embedder."""
    from kgviz.replay import SAMPLE_EMBEDDER
    from kgviz.ui.state import K_EMBEDDER, K_LLM_CHOICE, K_LLM_CUSTOM, K_WORKSPACE, OTHER_SPEC, settings

    s = settings()
    recorded = s.workspaces_dir / RECORDED_WORKSPACE
    if recording is None:
        st.session_state[K_LLM_CHOICE] = "offline"
        current = st.session_state.get(K_WORKSPACE)
        if current is None or Path(current).resolve() == recorded.resolve():
            st.session_state[K_WORKSPACE] = str(s.db_dir)
            st.session_state[K_EMBEDDER] = s.embedder_spec
        return
    recorded.mkdir(parents=True, exist_ok=True)
    st.session_state[K_WORKSPACE] = str(recorded)
    st.session_state[K_LLM_CHOICE] = OTHER_SPEC
    st.session_state[K_LLM_CUSTOM] = recording.spec
    st.session_state[K_EMBEDDER] = SAMPLE_EMBEDDER


def last_report() -> BuildReport | None:
    """The last build report of this session (the Build page checks where it came from first)."""
    return st.session_state.get(K_LAST_REPORT)


def degrees(ctx: AppContext) -> list[int]:
    return explore.degrees(resources.store(ctx))


def counts(ctx: AppContext) -> dict[str, int]:
    return dict(resources.store(ctx).counts())


# --- explore ------------------------------------------------------------------------------------
def search(ctx: AppContext, text: str, limit: int = 20) -> list[explore.EntityHit]:
    store = resources.store(ctx)
    emb, _ = resources.embedder(ctx)
    return explore.search_entities(store, text, limit=limit, embedder=emb)


@dataclass(frozen=True)
class GraphView:
    html: str
    height: int
    caption: str
    names: dict[str, str]  # node id -> name, for the details picker


def neighbourhood_view(ctx: AppContext, entity_id: str, *, hops: int, cap: int, height: int = 560) -> GraphView:
    nb = explore.neighbourhood(resources.store(ctx), entity_id, hops=hops, cap=cap)
    page = graph_html(nb.graph.nodes, nb.graph.edges, height=height, label_px=explore.LABEL_PX)
    return GraphView(page, height, nb.caption(), nb.names)


def details(ctx: AppContext, entity_id: str) -> explore.EntityDetails:
    return explore.entity_details(resources.store(ctx), entity_id)


def workspace_has_graph(ctx: AppContext) -> bool:
    """True when the workspace database exists and has at least one entity."""
    if not resources.database_exists(ctx):
        return False
    return int(resources.store(ctx).counts().get("Entity", 0)) > 0


def sample_available() -> bool:
    return Path(SAMPLE_DIR).is_dir()
