"""The hand-built graph of tests/methods/fixture_graph.py, for the funnel and compare tests."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterator

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "methods"))

from fixture_graph import FixtureGraph, build_fixture_graph  # noqa: E402

from kgviz.providers.embedders import HashingEmbedder  # noqa: E402


@pytest.fixture(scope="session")
def kg(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FixtureGraph]:
    graph = build_fixture_graph(tmp_path_factory.mktemp("verify_kg") / "ws", HashingEmbedder())
    yield graph
    graph.store.close()
