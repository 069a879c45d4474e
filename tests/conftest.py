"""Fixtures and suite-wide pins shared by test folders (tests/app has its own conftest for AppTest).

The default embedder spec is ``auto``, which loads a neural model when one happens to be on the
machine (KGVIZ_EMBEDDER_DIR, the fastembed cache). Tests must not change behaviour with that, so
the whole session (and every subprocess it starts: the CLI, the Streamlit server of the browser
tests) runs with KGVIZ_EMBEDDER=hashing and without the variables ``auto`` reads. A test that is
about ``auto`` or a model asks for it explicitly (monkeypatch.setenv, or AutoEmbedderParams).
Set at import, not in a fixture: session-scoped fixtures (the e2e server) start before any
function-scoped one would run.
"""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

from tests.support.fixture_graph import FixtureGraph, build_fixture_graph

from kgviz.providers.embedders import HashingEmbedder

PINNED_EMBEDDER = "hashing"
os.environ["KGVIZ_EMBEDDER"] = PINNED_EMBEDDER
for _var in ("KGVIZ_EMBEDDER_DIR", "KGVIZ_EMBEDDER_MODEL"):
    os.environ.pop(_var, None)
# A test that unsets KGVIZ_EMBEDDER gets ``auto``: point fastembed's cache at a folder that does not
# exist, so ``auto`` finds no model there either (and explicit fastembed specs download nothing
# into a real cache).
_SCRATCH = tempfile.mkdtemp(prefix="kgviz-tests-")  # fastembed may create the cache folder: removed at exit
atexit.register(shutil.rmtree, _SCRATCH, ignore_errors=True)
os.environ["FASTEMBED_CACHE_PATH"] = str(Path(_SCRATCH) / "no-fastembed-cache")
# ``auto`` also looks in KGVIZ_HOME/models (what `kgviz models pull` fetched): a test that sets no
# home of its own gets an empty scratch one, never the developer's ~/.kgviz.
os.environ["KGVIZ_HOME"] = str(Path(_SCRATCH) / "home")

# settings a developer's shell may hold that would change what the CLI does under test
_OUTSIDE_SETTINGS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "KGVIZ_LLM", "KGVIZ_DB",
                     "KGVIZ_TIMEOUT_S", "KGVIZ_MAX_RETRIES", "KGVIZ_WORKERS", "KGVIZ_MAX_FILE_MB",
                     "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")


@pytest.fixture()
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A CLI environment of its own: KGVIZ_HOME under ``tmp_path`` (returned), no keys, no
    provider or database settings (the embedder pinned) and no proxies from the outside shell."""
    monkeypatch.setenv("KGVIZ_HOME", str(tmp_path / "home"))
    for key in _OUTSIDE_SETTINGS:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("KGVIZ_EMBEDDER", PINNED_EMBEDDER)  # pinned: auto's fallback notice would be on stderr
    return tmp_path


@pytest.fixture()
def no_network() -> Iterator[None]:
    """Every socket connect during the test fails it (a replay of a recording must need no network)."""
    from tests.support.recorded_sample import no_network as refused  # kgviz.replay: only for the tests that ask

    with refused():
        yield


@pytest.fixture(scope="session")
def kg(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FixtureGraph]:
    """The small hand-built graph of tests/support/fixture_graph.py (hashing embedder); shared by
    the methods, verify and compare tests; read-only by convention."""
    graph = build_fixture_graph(tmp_path_factory.mktemp("kg") / "ws", HashingEmbedder())
    yield graph
    graph.store.close()
