"""The "ours" marks of the trace (TraceStep.ours, issue 27.3) and presets that mean what they say
(27.2), on sample question s03 with each paper method's 'paper' preset.

"Before" is the 'paper' preset as it was until issue 27 (kg-infused spreading along incoming edges
too, ket-rag on the index built with our keyword filters and adaptive τ), "after" the preset now
(kg-infused head -> tail, ket-rag on a graph built with the index preset 'paper'); both are marked
by today's code (before issue 27 no step carried a mark at all). Run as a script to print the
lists: ``python -m tests.methods.test_ours_marks``.
"""
from __future__ import annotations

import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator

import pytest

from kgviz.errors import ConfigError
from kgviz.graph.store import GraphStore
from kgviz.index.ket import KET_PRESETS, KetParams
from kgviz.index.params import KET_PRESET_NAMES
from kgviz.index.pipeline import BuildParams, build
from kgviz.ingest import load_paths
from kgviz.methods.base import MethodContext, TraceStep
from kgviz.methods.kg_infused import KGInfusedParams
from kgviz.methods.ket_params import KetRagParams
from kgviz.methods.registry import get_method
from kgviz.providers.embedders import HashingEmbedder
from kgviz.providers.offline import OfflineLLM
from kgviz.reasoning import Reasoner
from kgviz.run import resolve_params, run_method

ROOT = Path(__file__).resolve().parents[2]
S03 = "In which town was the founder of the Ossel Marine Institute born?"
# the 'paper' presets as they were before issue 27 (kg-rag's is its 'reconstruction' now)
OLD_PAPER: dict[str, Any] = {
    "kg-rag": "reconstruction",
    "kg-retriever": "paper",
    "kg-infused": KGInfusedParams(passage_search="dense"),
    "ket-rag": KetRagParams(context_limit=12000, keyword_match="embedding", entity_match="embedding"),
}
METHODS = tuple(OLD_PAPER)


def build_sample(db: Path, ket_preset: str) -> MethodContext:
    emb = HashingEmbedder()
    store = GraphStore.open(db, embedder_id=emb.id, dim=emb.dim)
    build(load_paths([ROOT / "sample_data" / "corpus"]).documents, store, Reasoner(OfflineLLM(), emb),
          BuildParams(workers=1, ket_preset=ket_preset))
    return MethodContext(store, Reasoner(OfflineLLM(), emb))


def marked(ctx: MethodContext, method: str, params: Any = None, preset: str | None = None) -> list[tuple[str, str]]:
    run = run_method(method, S03, ctx, params, preset=preset)
    assert not run.error, run.error
    return [(s.title, s.ours) for s in run.trace if s.ours]


def before_after(default_ctx: MethodContext, paper_ctx: MethodContext) -> dict[str, tuple[list, list]]:
    out = {}
    for m in METHODS:
        old = OLD_PAPER[m]
        before = marked(default_ctx, m, preset=old) if isinstance(old, str) else marked(default_ctx, m, old)
        after = marked(paper_ctx, m, preset="paper")  # kg-rag: 'paper' is its old name, still accepted
        out[m] = (before, after)
    return out


@pytest.fixture(scope="module")
def paper_graph(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MethodContext]:
    ctx = build_sample(tmp_path_factory.mktemp("paper-index") / "db", "paper")
    yield ctx
    ctx.store.close()


@pytest.fixture(scope="module")
def marks(sample_graph: MethodContext, paper_graph: MethodContext) -> dict[str, tuple[list, list]]:
    return before_after(sample_graph, paper_graph)


def test_kg_retriever_paper_preset_has_no_step_of_ours(marks: dict) -> None:
    assert marks["kg-retriever"] == ([], [])


def test_kg_retriever_defaults_mark_relative_lambda(sample_graph: MethodContext) -> None:
    steps = dict(marked(sample_graph, "kg-retriever", {"strategy": "attentive"}))
    assert "w = 1" in steps["Document layer: attentive collaboration"]
    assert any("relative λ" in why for why in steps.values())


def test_kg_infused_paper_preset_spreads_head_to_tail(marks: dict) -> None:
    before, after = marks["kg-infused"]
    assert any("incoming edges" in why for _, why in before)  # 'auto' over the corpus graph
    assert not any("incoming edges" in why for _, why in after)
    # what must stay ours: the sample has no curated KG, so the seed step says it spreads over the corpus graph
    assert [title for title, _ in after] == ["Seed entities from the corpus KG"]
    assert "none is imported" in after[0][1]


def test_ket_paper_preset_and_paper_index_leave_only_what_the_paper_leaves_open(marks: dict) -> None:
    before, after = marks["ket-rag"]
    text_before, text_after = " ".join(w for _, w in before), " ".join(w for _, w in after)
    for filt in ("keyword_max_df", "min_word_len", "adaptive τ"):
        assert filt in text_before and filt not in text_after
    # still ours: descriptions (Alg. 1 line 3, no LLM descriptions), and where the paper is silent: the
    # word split and not repeating a sub-chunk the skeleton channel took
    assert [t for t, _ in after] == ["Skeleton channel: seed entities", "Skeleton channel: relationships",
                                     "Keyword channel: seed keywords", "Keyword channel: chosen sub-chunks"]
    assert "Alg. 1 line 3" in after[0][1] and "regex" in after[2][1]


def test_kg_rag_is_a_reconstruction_on_every_step(sample_graph: MethodContext) -> None:
    run = run_method("kg-rag", S03, sample_graph, preset="paper")
    assert run.trace and all(s.ours.startswith("reconstruction") for s in run.trace if s.kind != "answer")
    assert run.preset == "reconstruction"  # the old name is read as the new one
    assert "paper" not in get_method("kg-rag").presets


def test_lexical_match_modes_are_marked(sample_graph: MethodContext) -> None:
    steps = dict(marked(sample_graph, "ket-rag", {"keyword_match": "lexical", "entity_match": "lexical"}))
    assert "keyword_match 'lexical'" in steps["Keyword channel: seed keywords"]
    assert "entity_match 'lexical'" in steps["Skeleton channel: seed entities"]


def test_ours_round_trips_and_old_traces_load() -> None:
    step = TraceStep(0, "seed", "t", ours="a reason")
    assert step.to_dict()["ours"] == "a reason" and TraceStep.from_dict(step.to_dict()).ours == "a reason"
    old = {k: v for k, v in TraceStep(0, "seed", "t").to_dict().items() if k != "ours"}
    assert TraceStep.from_dict(old).ours == ""


def test_ket_index_presets_and_overrides() -> None:
    assert set(KET_PRESETS) == set(KET_PRESET_NAMES)
    paper = BuildParams(ket_preset="paper").ket_params()
    assert (paper.keyword_max_df, paper.min_word_len, paper.adaptive_tau) == (1.0, 1, False)
    assert BuildParams().ket_params() == replace(KetParams(), beta=1.0)  # the default build is unchanged
    custom = BuildParams(keyword_max_df=0.2, min_word_len=2, adaptive_tau=False).ket_params()
    assert (custom.keyword_max_df, custom.min_word_len, custom.adaptive_tau) == (0.2, 2, False)
    with pytest.raises(ConfigError):
        BuildParams(ket_preset="nope")


def test_unknown_preset_still_fails() -> None:
    with pytest.raises(ConfigError):
        resolve_params(get_method("kg-rag"), None, "code")


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        default_ctx = build_sample(Path(tmp) / "default", "default")
        paper_ctx = build_sample(Path(tmp) / "paper", "paper")
        try:
            for m, (before, after) in before_after(default_ctx, paper_ctx).items():
                print(f"== {m}: 'paper' preset on s03 — steps marked ours, before -> after: {len(before)} -> {len(after)}")
                for label, rows in (("before", before), ("after", after)):
                    for title, why in rows:
                        print(f"  {label:<6} {title}\n           ours: {why}")
        finally:
            default_ctx.store.close()
            paper_ctx.store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
