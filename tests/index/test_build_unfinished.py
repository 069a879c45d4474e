"""A build that stops before its end leaves a mark naming its stage (kgviz.index.steps.BUILD_KEY);
the next build finishes it, clears the mark and says so; the build lock can be probed without
waiting (what the pages use to tell "another session is building" from "stopped")."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest

from kgviz.errors import BuildCancelled
from kgviz.graph.store import GraphStore
from kgviz.index.pipeline import BuildParams, ProgressEvent, build
from kgviz.index.steps import BUILD_KEY, unfinished_build, unfinished_notice
from kgviz.providers.embedders import HashingEmbedder
from kgviz.providers.offline import OfflineLLM
from kgviz.reasoning import Reasoner
from tests.support.index_fakes import ScriptedLLM, corpus
from tests.support.locks import held_by_another_thread

EMB = HashingEmbedder(64)
PARAMS = BuildParams(chunk_tokens=24, chunk_overlap=0, workers=1, batch_size=1, similar_docs_k=2, flush_interval_s=0,
                     ket_descriptions=False)


def test_a_finished_build_leaves_no_mark_and_no_warning(tmp_path: Path) -> None:
    with GraphStore.open(tmp_path / "ws", embedder_id=EMB.id, dim=EMB.dim) as store:
        report = build(corpus(), store, Reasoner(OfflineLLM(), EMB), PARAMS)
        assert unfinished_build(store) is None and store.get_meta(BUILD_KEY) is None
        assert not [w for w in report.warnings if "earlier build" in w]


@pytest.mark.parametrize("stop_at", ["extract", "doc_layer"])
def test_a_cancelled_build_names_its_stage_until_a_build_finishes_it(tmp_path: Path, stop_at: str) -> None:
    cancel = threading.Event()

    def progress(ev: ProgressEvent) -> None:  # cancel once the stage before ``stop_at``'s check has begun
        if (stop_at == "extract" and ev.stage == "extract" and ev.done >= 2) or \
                (stop_at == "doc_layer" and ev.stage == "write"):
            cancel.set()

    with GraphStore.open(tmp_path / "ws", embedder_id=EMB.id, dim=EMB.dim) as store:
        with pytest.raises(BuildCancelled):
            build(corpus(), store, Reasoner(ScriptedLLM(), EMB), PARAMS, progress=progress, cancel=cancel)
        # a cancel inside extract stops between its batches; after write it stops before doc_layer,
        # whose check runs before the stage marks itself: the mark names the last stage that began
        expected = "extract" if stop_at == "extract" else "write"
        assert unfinished_build(store) == expected
        assert f"stopped in its {expected} stage" in unfinished_notice(expected)
        resumed = build(corpus(), store, Reasoner(ScriptedLLM(), EMB), PARAMS)
        assert unfinished_build(store) is None
        assert f"finished an earlier build of this workspace that had stopped in its {expected} stage" in resumed.warnings
        assert store.fts_search("Aldport", 1)  # the index stage ran this time
        again = build(corpus(), store, Reasoner(ScriptedLLM(), EMB), PARAMS)
        assert not [w for w in again.warnings if "earlier build" in w]


def test_build_running_probes_the_lock_held_by_another_thread(tmp_path: Path) -> None:
    with GraphStore.open(tmp_path / "ws", embedder_id=EMB.id, dim=EMB.dim) as store:
        assert not store.build_running()
        with held_by_another_thread(store.build_lock):
            assert store.build_running()
            assert store.build_running()  # the probe took nothing
        assert not store.build_running()
