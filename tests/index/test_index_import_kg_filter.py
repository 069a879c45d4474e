"""KG-Infused App. B.1's entity filter on import (issue 12, item 4): an entity is an entry point
only with a description and as the head of a fact. Default "b1": the others stay as fact ends
without a vector (never a seed); "strict": removed with their facts; "none": all embedded."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

import pytest

from kgviz.errors import ConfigError
from kgviz.graph.store import GraphStore
from kgviz.index.import_kg import import_kg
from kgviz.providers.embedders import HashingEmbedder
from tests.support.data import write_kg_files

EMB = HashingEmbedder(64)
TSV = "\n".join([
    "head\trelation\ttail",
    "Orrin Bridge\tdesigner\tEdda Lunn",         # Orrin Bridge: a head without a description
    "Edda Lunn\tdate of birth\t1949",            # 1949: a name-only tail (a literal)
    "Edda Lunn\tplace of birth\tKellhaven",
    "Kellhaven\tcountry\tLessary",               # Lessary: described, but heads nothing
    "Tarrow\tlocated in\tKellhaven",             # Tarrow: described head whose only fact survives
])
ENTITIES = "\n".join(json.dumps(e) for e in [
    {"label": "Edda Lunn", "description": "Edda Lunn was a civil engineer."},
    {"label": "Kellhaven", "description": "Kellhaven is a port town."},
    {"label": "Lessary", "description": "Lessary is a country."},
    {"label": "Tarrow", "description": "Tarrow is a village."},
])
NAMES = {"Orrin Bridge", "Edda Lunn", "1949", "Kellhaven", "Lessary", "Tarrow"}


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    return write_kg_files(tmp_path, TSV, ENTITIES)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[GraphStore]:
    s = GraphStore.open(tmp_path / "ws", embedder_id=EMB.id, dim=EMB.dim)
    yield s
    s.close()


def _entities(store: GraphStore) -> dict[str, str]:
    return {r["name"]: r["id"] for r in store.query("MATCH (e:Entity) RETURN e.name AS name, e.id AS id")}


def _facts(store: GraphStore) -> set[str]:
    return {r["t"] for r in store.query("MATCH (t:Triple) RETURN t.text AS t")}


def test_b1_is_the_default_embeds_only_entry_points_and_keeps_every_fact(store: GraphStore, files: tuple[Path, Path]) -> None:
    report = import_kg(store, EMB, *files)
    assert report.entity_filter == "b1"
    ids = _entities(store)
    assert set(ids) == NAMES and len(_facts(store)) == 5 and report.rows_loaded == 5
    entry = {"Edda Lunn", "Kellhaven", "Tarrow"}  # described heads
    embedded = store.get_embeddings("Entity", list(ids.values()))
    assert {n for n, i in ids.items() if i in embedded} == entry
    assert (report.entities_seen, report.entry_points, report.fact_ends_only) == (6, 3, 3)
    assert report.entities_filtered == report.rows_filtered == 0
    # a name-only entity can no longer be a seed, even for a question made of its own name
    hits = store.vector_search("Entity", EMB.embed(["1949"])[0], 10, where={"origin": "curated"})
    assert hits and {i for i, _ in hits} <= {ids[n] for n in entry}
    # ... yet its fact is still reachable from an entry point
    rows = store.query("MATCH (a:Entity)-[r:RELATED]->(b:Entity) WHERE b.name = $n RETURN a.name AS a", {"n": "1949"})
    assert [r["a"] for r in rows] == ["Edda Lunn"]


def test_none_embeds_every_entity_as_before(store: GraphStore, files: tuple[Path, Path]) -> None:
    report = import_kg(store, EMB, *files, entity_filter="none")
    ids = _entities(store)
    assert len(store.get_embeddings("Entity", list(ids.values()))) == len(ids) == 6
    assert (report.entry_points, report.fact_ends_only) == (6, 0)
    top, _ = store.vector_search("Entity", EMB.embed(["1949"])[0], 1)[0]
    assert top == ids["1949"]  # the collision the default avoids


def test_strict_removes_failing_entities_and_their_facts(store: GraphStore, files: tuple[Path, Path]) -> None:
    report = import_kg(store, EMB, *files, entity_filter="strict")
    ids = _entities(store)
    # one pass on the facts as read: Orrin Bridge (no description), 1949 (neither), Lessary (heads
    # nothing) go, with the three facts touching them
    assert set(ids) == {"Edda Lunn", "Kellhaven", "Tarrow"}
    assert _facts(store) == {"Edda Lunn place of birth Kellhaven", "Tarrow located in Kellhaven"}
    assert (report.entities_filtered, report.rows_filtered, report.rows_loaded) == (3, 3, 2)
    assert report.entities_seen == 6 and report.entry_points == 3 and report.fact_ends_only == 0
    assert len(store.get_embeddings("Entity", list(ids.values()))) == 3


def test_strict_keeps_a_closed_described_kg(store: GraphStore, tmp_path: Path) -> None:
    t, e = tmp_path / "t.tsv", tmp_path / "e.jsonl"
    t.write_text("head\trelation\ttail\nA Town\tsister city\tB Town\nB Town\tsister city\tA Town\n"
                 "B Town\tfounded\t1820\n", encoding="utf-8")
    e.write_text("\n".join(json.dumps({"label": n, "description": f"{n} is a town."}) for n in ("A Town", "B Town")),
                 encoding="utf-8")
    report = import_kg(store, EMB, t, e, entity_filter="strict")
    assert set(_entities(store)) == {"A Town", "B Town"} and len(_facts(store)) == 2
    assert (report.entities_filtered, report.rows_filtered, report.rows_loaded) == (1, 1, 2)
    n = {r["name"]: r["n"] for r in store.query("MATCH (e:Entity) RETURN e.name AS name, e.n_mentions AS n")}
    assert n == {"A Town": 2, "B Town": 2}  # counts the kept facts only


def test_an_unknown_filter_is_a_config_error(store: GraphStore, files: tuple[Path, Path]) -> None:
    with pytest.raises(ConfigError, match="entity_filter"):
        import_kg(store, EMB, *files, entity_filter="loose")  # type: ignore[arg-type]


def test_cli_entity_filter_flag(tmp_path: Path, files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:
    from kgviz.cli import main

    monkeypatch.setenv("KGVIZ_HOME", str(tmp_path / "home"))
    for key in ("KGVIZ_LLM", "KGVIZ_EMBEDDER", "KGVIZ_DB"):
        monkeypatch.delenv(key, raising=False)
    t, e = files
    for mode, entry in (("none", 6), ("b1", 3)):
        db = str(tmp_path / f"db-{mode}")
        assert main(["import-kg", str(t), "--entities", str(e), "--db", db, "--embedder", "hashing:64",
                     "--entity-filter", mode, "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["entity_filter"] == mode and out["entry_points"] == entry
