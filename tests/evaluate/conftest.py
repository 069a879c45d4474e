"""A small offline graph of the sample corpus, built once per module that asks for it."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from kgviz.graph.store import GraphStore
from kgviz.index.pipeline import BuildParams, build
from kgviz.ingest import load_paths
from kgviz.methods.base import MethodContext
from kgviz.providers.embedders import HashingEmbedder
from kgviz.providers.offline import OfflineLLM
from kgviz.reasoning import Reasoner

from eval_paths import ROOT


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    db = tmp_path_factory.mktemp("eval") / "ws"
    emb = HashingEmbedder()
    store = GraphStore.open(db, embedder_id=emb.id, dim=emb.dim)
    build(load_paths([ROOT / "sample_data" / "corpus.jsonl"]).documents, store, Reasoner(OfflineLLM(), emb),
          BuildParams(workers=2))
    yield db
    store.close()


@pytest.fixture
def sample_ctx(sample_db: Path) -> MethodContext:
    emb = HashingEmbedder()
    store = GraphStore.open(sample_db, embedder_id=emb.id, dim=emb.dim)  # same process: shared Database
    return MethodContext(store, Reasoner(OfflineLLM(), emb))
