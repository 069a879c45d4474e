"""Explore's entity name search answered from memory (issue 29: the ``lower(name) CONTAINS`` scan
was 0.09-0.34 s a search at 100,000 passages). ``memory_explore.entities_named`` must give the rows of
``explore.entities_named`` in the same order: Kùzu's case folding (neither Python's nor Arrow's:
İ, the Kelvin sign, Greek capitals), literal special characters, a NULL mention count first,
equal (count, name) pairs in table order, the limit cutting through such a tie, NULL and empty
names, a text that only occurs across two names' boundary, and an empty text (no rows). It runs on
the names read from Kùzu and on the ones stored in the workspace, and a search once the names are
held runs no statement that reads a table."""
from __future__ import annotations

import random
import shutil
from typing import Any, Iterator

import pytest

from kgviz.graph import explore, memory_explore, read_model
from kgviz.graph.store import GraphStore
from kgviz.viz import explore as viz_explore

DIM = 4
# (id, name, n_mentions), loaded in this order (the table order ties keep); ids out of order on purpose
NAMED = [
    ("e:09", "İstanbul", 3), ("e:08", "ISTANBUL", 3), ("e:07", "istanbul", 3), ("e:10", "ΟΔΟΣ", 2),
    ("e:11", "οδος", 2), ("e:12", "Straße", 2), ("e:13", "STRASSE", 2), ("e:14", "ẞ", 1), ("e:15", "Kelvin", 1),
    ("e:16", "\u212a-band", 1), ("e:17", "Ⱥb", 1), ("e:18", "ǅemal", 1), ("e:19", "ＡＢＣ", 1),
    ("e:03", "Same", 4), ("e:01", "Same", 4), ("e:02", "Same", 4), ("e:04", "same", 4),  # ties of (n, name)
    ("e:20", "100% _pure_ [x]*", 5), ("e:21", "a.b\\c$^", 5), ("e:22", "O'Brien \"Jr\"", 5),
    ("e:23", None, 9), ("e:24", "", 9), ("e:25", "no count", None), ("e:26", "No Count", None),
    ("e:27", "xy", 8), ("e:28", "zw", 7),  # adjacent in rank order: "yz" only across their boundary
    ("e:29", "Zoë", 6), ("e:30", "zoe", 6), ("e:31", "日本語テキスト", 2), ("e:32", "emoji 🙂 Smile", 2),
    ("e:33", "aaaa", 1), ("e:34", "aa", 1), ("e:35", "Tab\there", 1),
]
TEXTS = ["i", "İ", "istanbul", "ISTANBUL", "ı", "σ", "ς", "Σ", "ss", "ß", "ẞ", "k", "K", "\u212a", "ⱥ", "ǆ", "ǅ",
         "ａｂｃ", "same", "SAME", "ame", "%", "_", "[x]*", "*", ".", "\\", "$", "^", "'", "\"", "o'b", "count", "no count",
         "yz", "y", "z", "zo", "ë", "本語", "🙂", "aa", "aaa", "aaaaa", "\t", "e", "a", "", " ", "nothing like it"]
LIMITS = [20, 3, 2, 1, 0]


def _random_names(n: int) -> list[tuple[str, str | None, int | None]]:
    rng = random.Random(29)
    letters = "abAB çÇİıσΣß_%"
    return [(f"r:{rng.randrange(10**6):06d}:{i}", None if rng.random() < 0.02 else
             "".join(rng.choice(letters) for _ in range(rng.randint(0, 6))),
             None if rng.random() < 0.05 else rng.randint(0, 3)) for i in range(n)]


def _load(s: GraphStore, rows: list[tuple[str, str | None, int | None]]) -> None:
    s.bulk_load_nodes("Entity", [{"id": i, "name": name, "type": "t" if k % 2 else None, "description": "",
                                  "origin": "corpus", "aliases": "", "n_mentions": n, "emb": [1.0, 0.0, 0.0, 0.0]}
                                 for k, (i, name, n) in enumerate(rows)])


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GraphStore]:
    s = GraphStore.open(tmp_path_factory.mktemp("name_search") / "ws", embedder_id="test", dim=DIM)
    _load(s, NAMED)
    yield s
    s.close()


@pytest.fixture(params=["kuzu", "stored"])
def source(request: pytest.FixtureRequest, store: GraphStore, monkeypatch: pytest.MonkeyPatch) -> str:
    """"kuzu": the names read out of Kùzu; "stored": from the workspace's stored table, Kùzu
    refusing the names statement."""
    store._handle.derived.clear()
    shutil.rmtree(store.path / read_model.FOLDER, ignore_errors=True)
    if request.param == "stored":
        read_model.table(store, memory_explore.Q_ENTITY_NAMES)
        store._handle.derived.clear()
        real = GraphStore.query_arrow

        def refuse(self: GraphStore, cypher: str, params: Any = None) -> Any:
            assert cypher != memory_explore.Q_ENTITY_NAMES, "the stored names were not used"
            return real(self, cypher, params)
        monkeypatch.setattr(GraphStore, "query_arrow", refuse)
    return str(request.param)


@pytest.mark.usefixtures("source")
@pytest.mark.parametrize("limit", LIMITS)
def test_the_search_equals_its_statement_in_rows_and_order(store: GraphStore, limit: int) -> None:
    for text in TEXTS:
        assert memory_explore.entities_named(store, text, limit) == explore.entities_named(store, text, limit), text


@pytest.mark.usefixtures("source")
def test_the_tricky_cases_are_really_exercised(store: GraphStore) -> None:
    """The comparison above is only worth what it covers: Kùzu's folding differs from Python's,
    ties come back in table order and the limit cuts through them, a NULL count ranks first."""
    ids = lambda text, k=20: [r["id"] for r in memory_explore.entities_named(store, text, k)]  # noqa: E731
    assert ids("i̇") == [] and ids("istanbul") == ["e:08", "e:07", "e:09"]  # Kùzu folds İ to a plain i; bytewise I < i < İ
    assert ids("same") == ["e:03", "e:01", "e:02", "e:04"] and ids("same", 2) == ["e:03", "e:01"]
    assert ids("count") == ["e:26", "e:25"]  # NULL counts first, then by name bytewise ("N" < "n")
    assert ids("yz") == [] and ids("y") == ["e:27"] and ids("") == []
    assert ids("ǆ") == ["e:18"] and ids("%") == ["e:20"] and ids("k") == ["e:15", "e:16"]
    row = memory_explore.entities_named(store, "Same", 1)[0]
    assert row == {"id": "e:03", "name": "Same", "type": "t", "n": 4}


@pytest.mark.usefixtures("source")
def test_a_negative_limit_is_refused_as_the_statement_refuses_it(store: GraphStore) -> None:
    with pytest.raises(ValueError, match="limit"):
        memory_explore.entities_named(store, "same", -1)
    with pytest.raises(Exception):
        explore.entities_named(store, "same", -1)


@pytest.mark.usefixtures("source")
def test_a_search_once_the_names_are_held_reads_no_table(store: GraphStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Explore page's search (``viz.explore.search_entities``) runs no statement that reads
    a table: only Kùzu's ``lower`` of the text (the scan is what cost 0.09-0.34 s at 100k)."""
    memory_explore.entity_names(store)  # held (loaded once per database state)
    seen: list[str] = []
    real_query, real_arrow = GraphStore.query, GraphStore.query_arrow

    def spy(self: GraphStore, cypher: str, params: Any = None) -> Any:
        seen.append(cypher)
        return real_query(self, cypher, params)

    def spy_arrow(self: GraphStore, cypher: str, params: Any = None) -> Any:
        seen.append(cypher)
        return real_arrow(self, cypher, params)
    monkeypatch.setattr(GraphStore, "query", spy)
    monkeypatch.setattr(GraphStore, "query_arrow", spy_arrow)
    hits = viz_explore.search_entities(store, "  STRASSE ", limit=5)
    assert [h.id for h in hits] == ["e:13"] and hits[0].match == "name"
    assert [h.id for h in viz_explore.search_entities(store, "SAME", limit=2)] == ["e:03", "e:01"]
    assert seen and all("MATCH" not in c.upper() for c in seen), seen


def test_random_names_and_texts_equal_the_statement(tmp_path: Any) -> None:
    """Thousands of short names from a small alphabet (many ties, NULLs, empty names, texts that
    run across names) against the statement, from Kùzu and from a fresh load of the stored table."""
    rows = _random_names(3000)
    rng = random.Random(7)
    texts = [n[rng.randrange(len(n)):][: rng.randint(1, 3)] for _, n, _ in rows[:60] if n] + ["ab", "σ", "_", "%b"]
    s = GraphStore.open(tmp_path / "ws", embedder_id="test", dim=DIM)
    try:
        assert memory_explore.entities_named(s, "a", 5) == explore.entities_named(s, "a", 5) == []  # no entities yet
        _load(s, rows)
        for rerun in range(2):  # the second from the stored table
            s._handle.derived.clear()
            for text in texts:
                for limit in (1, 7, 50):
                    assert memory_explore.entities_named(s, text, limit) == explore.entities_named(s, text, limit), \
                        (rerun, text, limit)
        assert read_model.stored_tables(s)
    finally:
        s.close()
