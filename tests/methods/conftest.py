"""Shared fixtures for method tests: ``kg``, the small hand-built graph of fixture_graph.py
(session-scoped; read-only by convention)."""
from __future__ import annotations

from typing import Iterator

import pytest
from tests.support.fixture_graph import FixtureGraph, build_fixture_graph

from kgviz.providers.embedders import HashingEmbedder


@pytest.fixture(scope="session")
def kg(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FixtureGraph]:
    graph = build_fixture_graph(tmp_path_factory.mktemp("kg") / "ws", HashingEmbedder())
    yield graph
    graph.store.close()
