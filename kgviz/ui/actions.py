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
from kgviz.ui import jobs, resources
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
    base = {"chunk_tokens": ctx.settings.chunk_tokens, "chunk_overlap": ctx.settings.chunk_overlap,
            "workers": ctx.settings.workers}
    base.update({k: v for k, v in overrides.items() if v is not None})
    return BuildParams(**base)


def default_params(ctx: AppContext) -> BuildParams:
    """The build parameters a page starts from (settings + BuildParams defaults)."""
    return build_params(ctx)


def estimate(ctx: AppContext, documents: Sequence[Document], params: BuildParams) -> CostEstimate:
    from kgviz.index.pipeline import estimate_cost

    return estimate_cost(list(documents), params, ctx.llm_spec, resources.prices(ctx))


def build(ctx: AppContext, documents: Sequence[Document], params: BuildParams, *,
          label: str = "Building the graph", refresh: bool = False) -> BuildReport:
    """Build into the workspace with live progress; the report is also kept for this session.
    ``refresh`` bypasses cached LLM replies (the model is asked again for every new chunk)."""
    if not documents:
        raise KgvizError("nothing to build: no document could be loaded",
                         hint="Fix or remove the rejected files listed above, or load the sample.")
    store = resources.store(ctx)
    report = jobs.run_build(documents, store, resources.reasoner(ctx, refresh=refresh), params, label=label)
    st.session_state[K_LAST_REPORT] = report
    return report


def build_sample(ctx: AppContext) -> BuildReport:
    result = load_sample(ctx)
    if result.errors:
        raise result.errors[0]
    return build(ctx, result.documents, build_params(ctx), label="Building the sample corpus")


def last_report() -> BuildReport | None:
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
    page = graph_html(nb.graph.nodes, nb.graph.edges, height=height)
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
