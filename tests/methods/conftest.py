"""Shared fixtures for method tests: ``sample_graph``, the sample corpus built offline (session-scoped;
read-only by convention). ``kg``, the small hand-built graph, is in tests/conftest.py."""
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

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def sample_graph(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MethodContext]:
    """The sample corpus built offline with the hashing embedder (the graph a newcomer without a key
    gets); session-scoped and read-only by convention."""
    emb = HashingEmbedder()
    store = GraphStore.open(tmp_path_factory.mktemp("sample") / "db", embedder_id=emb.id, dim=emb.dim)
    build(load_paths([ROOT / "sample_data" / "corpus"]).documents, store, Reasoner(OfflineLLM(), emb),
          BuildParams(workers=1))
    yield MethodContext(store, Reasoner(OfflineLLM(), emb))
    store.close()
