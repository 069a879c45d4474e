"""Curated KG import: rows, entities, bad lines with line numbers, hold-out filters."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgviz.errors import IngestError
from kgviz.graph.store import GraphStore
from kgviz.index.import_kg import import_kg
from kgviz.providers.embedders import HashingEmbedder
from tests.support.data import SHARED_DATA, write_kg_files

EMB = HashingEmbedder(64)
DATA = SHARED_DATA / "kg_2wiki_evidence"

TSV = "\n".join([
    "head\trelation\ttail\thead_qid\ttail_qid\tsplit\tquestion_id",
    "Orrin Bridge\tdesigner\tEdda Lunn\tQ1\t\teval\tq1",          # 2
    "Edda Lunn\tplace of birth\tKellhaven\t\t\teval\tq1",          # 3
    "Kellhaven\tcountry\tLessary\t\t\ttrain\t",                   # 4
    "only\ttwo columns",                                          # 5: bad
    "\tcountry\tLessary\t\t\ttrain\t",                            # 6: bad (empty head)
    "",                                                           # 7: blank, ignored
    "Tarrow\tlocated in\tLessary\t\t\ttrain\t\textra",            # 8: bad (8 columns)
    "Saltwind Fair\tlocation\tTarrow\t\t\ttrain\tq2",             # 9
])
ENTITIES = "\n".join([
    json.dumps({"label": "Edda Lunn", "qid": "Q7", "description": "Edda Lunn was a civil engineer."}),
    "{not json",                                                    # 2: bad
    json.dumps(["a list"]),                                         # 3: bad
    json.dumps({"qid": "Q9"}),                                      # 4: bad (no label)
    json.dumps({"label": "Kellhaven", "description": "Kellhaven is the capital of Lessary."}),
])


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    return write_kg_files(tmp_path, TSV, ENTITIES)


@pytest.fixture
def store(tmp_path: Path):
    s = GraphStore.open(tmp_path / "ws", embedder_id=EMB.id, dim=EMB.dim)
    yield s
    s.close()


def test_import_reports_bad_rows_with_line_numbers(store: GraphStore, files: tuple[Path, Path]) -> None:
    report = import_kg(store, EMB, *files)
    assert [n for n, _ in report.bad_rows] == [5, 6, 8]
    assert "2 columns" in report.bad_rows[0][1] and "empty head" in report.bad_rows[1][1]
    assert [n for n, _ in report.bad_entity_rows] == [2, 3, 4]
    assert report.rows_loaded == report.triples == 4
    ents = {r["id"]: r for r in store.query("MATCH (e:Entity) RETURN e.id AS id, e.name AS name, e.origin AS o, e.description AS d")}
    assert set(ents) == {"kg:Q1", "kg:Q7", "kg:kellhaven", "kg:lessary", "kg:tarrow", "kg:saltwind fair"}
    assert ents["kg:Q7"]["d"] == "Edda Lunn was a civil engineer." and {e["o"] for e in ents.values()} == {"curated"}
    rel = store.query(
        "MATCH (a:Entity)-[r:RELATED]->(b:Entity) WHERE a.id = $a RETURN r.relation AS rel, r.origin AS o, b.name AS b",
        {"a": "kg:Q7"},
    )
    assert rel == [{"rel": "place of birth", "o": "curated", "b": "Kellhaven"}]
    t = store.query("MATCH (t:Triple)-[:SUBJ]->(s:Entity) WHERE s.id = $s RETURN t.origin AS o, t.text AS text", {"s": "kg:Q1"})
    assert t == [{"o": "curated", "text": "Orrin Bridge designer Edda Lunn"}]
    c = store.counts()
    assert c["SUBJ"] == c["OBJ"] == c["RELATED"] == 4
    again = import_kg(store, EMB, *files)  # idempotent
    assert again.entities == again.triples == 0 and store.counts() == c


def test_hold_out_by_question_and_split(store: GraphStore, files: tuple[Path, Path]) -> None:
    report = import_kg(store, EMB, files[0], exclude_question_ids=["q1"])
    assert report.rows_loaded == 2 and report.rows_excluded == 2
    names = {r["n"] for r in store.query("MATCH (e:Entity) RETURN e.name AS n")}
    assert "Edda Lunn" not in names  # only held-out facts mentioned her
    only_eval = import_kg(store, EMB, files[0], splits=["eval"])
    assert only_eval.rows_loaded == 2 and only_eval.rows_excluded == 2


def test_unusable_files_raise_typed_errors(store: GraphStore, tmp_path: Path) -> None:
    bad = tmp_path / "bad.tsv"
    bad.write_text("subject\tpredicate\tobject\nA\tB\tC\n")
    with pytest.raises(IngestError, match="lacks column"):
        import_kg(store, EMB, bad)
    empty = tmp_path / "empty.tsv"
    empty.write_text("")
    with pytest.raises(IngestError, match="empty"):
        import_kg(store, EMB, empty)


@pytest.mark.data
@pytest.mark.skipif(not (DATA / "triples.tsv").exists(), reason="shared data absent")
def test_shared_2wiki_kg_folder(store: GraphStore) -> None:
    report = import_kg(store, EMB, DATA, splits=["train"])
    assert report.bad_rows == [] and report.rows_loaded + report.rows_excluded == 1687
    assert report.descriptions > 0 and store.counts()["Triple"] == report.triples


def test_hostile_entity_and_triple_lines_cost_only_themselves(store: GraphStore, tmp_path: Path) -> None:
    """Issue 10: deep nesting, a 5,000-digit number, invalid UTF-8 and an over-long TSV field are
    bad lines with their numbers, not a crash that loses the whole import."""
    t, e = tmp_path / "triples.tsv", tmp_path / "entities.jsonl"
    t.write_bytes(b"\n".join([
        TSV.split("\n")[0].encode(),
        b"Orrin Bridge\tdesigner\tEdda Lunn\t\t\teval\tq1",            # 2
        b"Caf\xe9 Nord\tlocated in\tTarrow\t\t\ttrain\t",            # 3: latin-1, not UTF-8
        b"Tarrow\tlocated in\t" + b"L" * 200_000 + b"\t\t\ttrain\t",  # 4: over csv's field limit
        b"Kellhaven\tcountry\tLessary\t\t\ttrain\t",                  # 5
    ]))
    e.write_bytes(b"\n".join([
        json.dumps({"label": "Edda Lunn", "description": "Edda Lunn was a civil engineer."}).encode(),
        b'{"label": "Deep", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",     # 2
        b'{"label": "Big", "qid": ' + b"9" * 5_000 + b"}",                     # 3: loads, qid kept as text
        b'{"label": "Caf\xe9"}',                                                  # 4: not UTF-8
        b'{"label": 12345}',                                                      # 5: a number is no label
        json.dumps({"label": "Kellhaven", "description": "Kellhaven is the capital."}).encode(),
    ]))
    report = import_kg(store, EMB, t, e)
    assert [n for n, _ in report.bad_rows] == [3, 4]
    assert "UTF-8" in report.bad_rows[0][1] and "limit" in report.bad_rows[1][1]
    assert [n for n, _ in report.bad_entity_rows] == [2, 4, 5]
    assert "nested deeper" in report.bad_entity_rows[0][1]
    assert report.rows_loaded == 2
    descs = {r["n"]: r["d"] for r in store.query("MATCH (e:Entity) RETURN e.name AS n, e.description AS d")}
    assert descs["Edda Lunn"] == "Edda Lunn was a civil engineer." and descs["Kellhaven"] == "Kellhaven is the capital."


def test_cli_import_kg_names_bad_entity_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    from kgviz.cli import main

    monkeypatch.setenv("KGVIZ_HOME", str(tmp_path / "home"))
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "KGVIZ_LLM", "KGVIZ_EMBEDDER", "KGVIZ_DB"):
        monkeypatch.delenv(key, raising=False)
    t, e = tmp_path / "triples.tsv", tmp_path / "entities.jsonl"
    t.write_text(TSV, encoding="utf-8")
    e.write_bytes(ENTITIES.encode() + b'\n{"label": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n")
    assert main(["import-kg", str(t), "--entities", str(e), "--db", str(tmp_path / "db")]) == 0
    err = capsys.readouterr().err
    for n in (2, 3, 4, 6):
        assert f"skipped {e} line {n}:" in err
    assert f"skipped {t} line 5: 2 columns" in err
