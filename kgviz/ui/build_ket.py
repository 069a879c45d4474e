"""The Build page's KET-RAG parts (paper 004): the index options, and the graph overview — the KNN
degree distribution (log-log, as the paper's Figure 2), the PageRank core chunks, and what the
extraction costs for the skeleton against a full KG (§5.3).

``ket_overview`` gathers the figures (no streamlit); ``ket_options``, ``overview`` and
``build_cost`` draw them. Chunk text is shown in dataframes, which render it as plain text (no
markdown, no HTML), and every other string from the graph goes through ``md_text``.

Which chunks are "core". On a graph built with β < 1 they are the built ones (Chunk.core: only
they were extracted). On a graph whose KG covers every chunk (β = 1, the default build) every
chunk is core, so the overview shows instead the skeleton ket-rag's default params simulate:
the top-⌈b·n⌉ chunks by PageRank, b = KetRagParams().skeleton_beta (0.8, §6.1), and what a real
β = b build would have cost.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import pandas as pd
import streamlit as st

from kgviz.graph import reads
from kgviz.graph.protocol import GraphStore
from kgviz.index.ket import core_ranking, ket_info, knn_degree_distribution, n_core, skeleton_cost
from kgviz.index.params import BuildParams, BuildReport
from kgviz.ui import resources
from kgviz.ui.render import OFFLINE_LABEL, md_text
from kgviz.ui.state import AppContext
from kgviz.viz import charts
from kgviz.viz.labels import human_title

CORE_COLUMNS = ["rank", "chunk", "pagerank", "excerpt", "id"]  # chunk: "Title · part N"; id last, for debugging
CORE_ROWS = 20  # ours: core chunks listed on the page (the table is sorted best first)
EXCERPT_CHARS = 160
_CACHE = "kgviz_build_ket_overview"


@dataclass
class KetOverview:
    info: dict[str, Any]  # kgviz.index.ket.ket_info: built β, measured skeleton β, KetParams
    degrees: dict[int, int]  # KNN degree -> chunks
    skeleton_beta: float  # β of the skeleton shown: built (< 1), or simulated by ket-rag's default
    simulated: bool  # True when the graph's KG covers every chunk and the skeleton is ket-rag's simulation
    core_rows: list[dict[str, Any]] = field(default_factory=list)  # best first, CORE_ROWS of them
    n_chunks: int = 0
    n_core: int = 0
    cost: dict[str, Any] = field(default_factory=dict)  # kgviz.index.ket.SkeletonCost.to_dict()


def _excerpt(text: str) -> str:
    flat = " ".join(str(text or "").split())
    return flat if len(flat) <= EXCERPT_CHARS else flat[: EXCERPT_CHARS - 1].rstrip() + "…"


def _where(row: Mapping[str, Any], titles: dict[str, str]) -> str:
    """"Title · part 2": the chunk named by its document and position, not by its hash id."""
    title = titles.get(str(row.get("doc")), str(row.get("doc") or row["id"]))
    return f"{title} · part {int(row['ord']) + 1}" if row.get("ord") is not None else title


def ket_overview(store: GraphStore, *, expected_output_ratio: float | None = None) -> KetOverview | None:
    """The KET figures of the graph in ``store``; None when it has no KET index."""
    from kgviz.methods.ket_rag import KetRagParams

    info = ket_info(store)
    if not info:
        return None
    rows = reads.chunk_overview(store)
    built = float(info.get("skeleton_beta", 1.0))
    selection = str(info.get("params", {}).get("selection", "pagerank"))
    seed = int(info.get("params", {}).get("seed", 42))
    ids = [r["id"] for r in rows]
    pr = {r["id"]: float(r["pr"] or 0.0) for r in rows}
    simulated = built >= 1.0 - 1e-9
    if simulated:
        beta = float(KetRagParams().skeleton_beta)
        ranking = core_ranking(ids, [pr[c] for c in ids], "pagerank", seed)
        core = set(ranking[: n_core(len(ids), beta)])
    else:
        beta = float(info.get("beta", built))
        ranking = core_ranking(ids, [pr[c] for c in ids], selection, seed)
        core = {r["id"] for r in rows if r["core"]}
    by_id = {r["id"]: r for r in rows}
    shown = [c for c in ranking if c in core][:CORE_ROWS]
    titles = {d["id"]: human_title(str(d["title"] or ""), str(d["text"] or ""))
              for d in reads.documents_for_labels(store, sorted({str(by_id[c]["doc"]) for c in shown}))}
    core_rows = [{"rank": i + 1, "chunk": _where(by_id[c], titles), "pagerank": round(pr[c], 6),
                  "excerpt": _excerpt(by_id[c]["text"]), "id": c} for i, c in enumerate(shown)]
    ratio = BuildParams().expected_output_ratio if expected_output_ratio is None else expected_output_ratio
    cost = skeleton_cost([(r["id"], r["text"] or "", int(r["n"] or 0)) for r in rows], core, beta,
                         expected_output_ratio=ratio).to_dict()
    return KetOverview(info, knn_degree_distribution(store), beta, simulated, core_rows, len(ids), len(core), cost)


def cached_overview(ctx: AppContext) -> KetOverview | None:
    """``ket_overview`` of the workspace, recomputed only when its chunks or KET index change."""
    store = resources.store(ctx)
    key = (str(ctx.db_dir), tuple(sorted(store.counts().items())), str(sorted(ket_info(store).items())))
    held = st.session_state.get(_CACHE)
    if held is None or held[0] != key:
        held = (key, ket_overview(store))
        st.session_state[_CACHE] = held
    return held[1]


def has_chunks(ctx: AppContext) -> bool:
    """True when the workspace database exists and holds chunks (opened only if it exists)."""
    return resources.database_exists(ctx) and int(resources.store(ctx).counts().get("Chunk", 0)) > 0


# --- widgets ---------------------------------------------------------------------------------------
def ket_options(defaults: BuildParams) -> dict[str, Any]:
    """KET-RAG index widgets (inside the page's Options expander) -> BuildParams overrides."""
    st.markdown("**KET-RAG index** (paper 004, Algorithm 3)")
    c = st.columns([1.2, 1.8, 1.3, 1, 1])
    enabled = c[0].checkbox("Enabled", value=defaults.ket_enabled, key="kgviz_build_ket",
                            help="KNN chunk graph, PageRank core chunks, sub-chunks and keywords. "
                                 "ket-rag and keyword-rag need it.")
    beta = c[1].slider("β (core fraction)", 0.05, 1.0, float(defaults.core_fraction), 0.05, key="kgviz_build_beta",
                       disabled=not enabled,
                       help="Share of chunks, by PageRank, whose triples are extracted. 1 = a full KG (ket-rag's "
                            "default then simulates β=0.8); 0.8 = the paper's skeleton, ~20% fewer extraction tokens.")
    selection = c[2].selectbox("Core selection", ["pagerank", "random"],
                               index=["pagerank", "random"].index(defaults.core_selection), key="kgviz_build_sel",
                               disabled=not enabled, help="KET-RAG-P (PageRank) or KET-RAG-U (uniform, seeded)")
    k = c[3].number_input("KNN K", 2, 20, defaults.knn_k, step=2, key="kgviz_build_knn_k", disabled=not enabled,
                          help="K/2 lexical + K/2 semantic neighbours per chunk (§6.1: K=2)")
    tau = c[4].number_input("τ (−1 = auto)", -1, 8, defaults.subchunk_tau, key="kgviz_build_tau", disabled=not enabled,
                            help="Halvings of a chunk into sub-chunks; auto = ~150-token sub-chunks")
    return {"ket_enabled": bool(enabled), "core_fraction": round(float(beta), 4), "core_selection": str(selection),
            "knn_k": int(k), "subchunk_tau": int(tau)}


# --- renderers -------------------------------------------------------------------------------------
def _log_ticks(values: list[int], most: int = 8) -> list[int]:
    """The values themselves when few, else 1-2-5 steps per decade across their range."""
    vals = sorted(set(int(v) for v in values if v > 0))
    if len(vals) <= most:
        return vals
    steps = [m * 10**e for e in range(len(str(vals[-1])) + 1) for m in (1, 2, 5)]
    return [t for t in steps if vals[0] <= t <= vals[-1]] or vals


def _price(ctx: AppContext, input_tokens: int, output_tokens: int) -> str:
    if ctx.offline:
        return "$0 (offline)"
    from kgviz.providers.factory import parse_llm_spec

    kind, model, _ = parse_llm_spec(ctx.llm_spec)
    table = resources.prices(ctx)
    if not table.known(kind, model):
        return "price unknown"
    return f"${table.cost(kind, model, input_tokens, output_tokens):.4f}"


def cost_frame(ctx: AppContext, cost: dict[str, Any], label: str) -> pd.DataFrame:
    """Skeleton against full KG, from a SkeletonCost dict (estimates; actual tokens when known)."""
    rows = [
        {"extraction": label, "chunks (LLM calls)": cost["n_core"],
         "input tokens (est.)": cost["skeleton_estimate_input"], "output tokens (est.)": cost["skeleton_estimate_output"],
         "$ (est.)": _price(ctx, cost["skeleton_estimate_input"], cost["skeleton_estimate_output"])},
        {"extraction": "full KG (β=1)", "chunks (LLM calls)": cost["n_chunks"],
         "input tokens (est.)": cost["full_estimate_input"], "output tokens (est.)": cost["full_estimate_output"],
         "$ (est.)": _price(ctx, cost["full_estimate_input"], cost["full_estimate_output"])},
    ]
    return pd.DataFrame(rows)


def _cost_caption(ctx: AppContext, cost: dict[str, Any]) -> None:
    saving = float(cost.get("estimated_saving") or 0.0)
    st.caption(f"The skeleton takes about {1 - saving:.0%} of a full KG's extraction tokens (§5.3: KET-Index costs "
               "about β of KG-Index). Estimates: the rendered extraction prompt plus the expected reply per chunk.")
    if ctx.offline:
        st.caption(f"Mode: {OFFLINE_LABEL}. Offline extraction sends nothing and costs $0; the token figures are what "
                   "an LLM extraction of the same chunks would take.")


def build_cost(ctx: AppContext, report: BuildReport) -> None:
    """The last build's KET figures: its core chunks and extraction tokens, skeleton against full KG."""
    ket = report.ket
    if not ket:
        st.caption("This build made no KET-RAG index (ket-rag and keyword-rag need one: enable it under Options).")
        return
    cost = ket.get("cost") or {}
    st.markdown("**KET-RAG indexing cost of this build**")
    st.caption(f"β={ket['beta']:g} ({md_text(ket['selection'])}): {ket['n_core']} of {ket['n_chunks']} chunks are core; "
               f"the KG covers {ket['skeleton_beta']:.0%} of the chunks.")
    if ket.get("plan"):  # a resumed build reuses the plan its interrupted run kept (kgviz.index.ket_plan)
        st.caption(f"KNN graph, PageRank and core chunks: {md_text(ket['plan'])}; "
                   f"KET-RAG's keyword view: {md_text(ket.get('keyword_view', '-'))}.")
    if not cost or not cost.get("n_chunks"):
        st.caption("No new chunks were extracted in this build.")
        return
    frame = cost_frame(ctx, cost, f"this build (β={ket['beta']:g})")
    frame["provider tokens (full KG: extrapolated)"] = [cost["skeleton_actual_tokens"], cost.get("full_extrapolated_tokens")]
    if cost["n_core"] >= cost["n_chunks"]:  # β = 1: the build is the full KG, one row says it all
        st.dataframe(frame.iloc[:1], hide_index=True, width="stretch")
        st.caption("Every new chunk was extracted (a full KG). The graph overview below shows what the β=0.8 "
                   "skeleton that ket-rag simulates would cost to build for real.")
        return
    st.dataframe(frame, hide_index=True, width="stretch")
    _cost_caption(ctx, cost)


def overview(ctx: AppContext) -> None:
    """Graph overview: KNN degree distribution, core chunks by PageRank, skeleton vs full KG cost."""
    ov = cached_overview(ctx)
    if ov is None:
        st.info("This graph has no KET-RAG index, so ket-rag and keyword-rag cannot run on it. Build with "
                "'Build KET index' on (the default) to add it; chunks already extracted are reused.")
        return
    built = float(ov.info.get("skeleton_beta", 1.0))
    params = ov.info.get("params", {})
    st.caption(f"KET index: K={params.get('k')}, β={ov.info.get('beta'):g} ({md_text(params.get('selection'))}); "
               f"the KG covers {built:.0%} of {ov.n_chunks} chunks.")
    degrees = [d for d, n in ov.degrees.items() for _ in range(int(n))]
    fig = charts.degree_distribution(degrees, title="KNN chunk graph: degree distribution (paper Fig. 2)")
    # KNN degrees span about one decade (out-degree <= K), where powers-of-ten ticks label nothing
    fig.update_xaxes(tickvals=_log_ticks([d for d in ov.degrees if d > 0]), title="KNN degree (in + out edges)")
    fig.update_yaxes(tickvals=_log_ticks([n for d, n in ov.degrees.items() if d > 0]), title="chunks")
    st.plotly_chart(fig, width="stretch")
    if ov.simulated:
        what = (f"Core chunks: the KG covers every chunk, so these are the top {ov.n_core} of {ov.n_chunks} by PageRank "
                f"that ket-rag's default simulates (β={ov.skeleton_beta:g}, §6.1)")
    else:
        what = f"Core chunks: the {ov.n_core} of {ov.n_chunks} chunks this graph's KG was extracted from"
    st.markdown(f"**{what}** — best {len(ov.core_rows)} shown")
    st.dataframe(pd.DataFrame(ov.core_rows, columns=CORE_COLUMNS),
                 hide_index=True, width="stretch")
    st.markdown("**Indexing cost: skeleton vs full KG**")
    label = (f"β={ov.skeleton_beta:g} skeleton ({'a build with --beta' if ov.simulated else 'as built'})")
    st.dataframe(cost_frame(ctx, ov.cost, label), hide_index=True, width="stretch")
    _cost_caption(ctx, ov.cost)
