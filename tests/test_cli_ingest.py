"""`kgviz build` over folders (issue 14): the sample folder and its corpus folder build the same 15
documents with their headings as titles; what was left out is named; no machine path is stored
or exported."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kgviz.cli import main

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_data"
HEADINGS = sorted(["Agnes Vohl", "Aster Wren", "Edda Lunn", "Kellhaven", "Kellhaven University", "Lessary",
                   "Orrin Bridge", "Ossel Marine Institute", "Saltwind Festival", "Skellan Point Lighthouse",
                   "Tarrow", "Thomas Aldrick", "Tidewell Line", "Tomas Aldric", "Ventholm"])
# an absolute POSIX path under a usual top folder (not a URL: no scheme or host before it)
ABSOLUTE = re.compile(r"(?<![\w.:/])/(?:work|tmp|home|root|Users|var|opt|mnt|srv)/")


def build_json(paths: list[Path], db: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[dict, str]:
    assert main(["build", *map(str, paths), "--db", str(db), "--json", "--no-ket", *extra]) == 0
    cap = capsys.readouterr()
    return json.loads(cap.out), cap.err


def test_sample_folder_and_corpus_folder_build_the_same_15_documents(env: Path, capsys) -> None:
    whole, err = build_json([SAMPLE], env / "a", capsys)
    corpus, err_corpus = build_json([SAMPLE / "corpus"], env / "b", capsys)
    assert whole["counts"]["Document"] == corpus["counts"]["Document"] == 15
    assert sorted(d["title"] for d in whole["documents"]) == HEADINGS
    assert sorted((d["id"], d["title"]) for d in whole["documents"]) == sorted(
        (d["id"], d["title"]) for d in corpus["documents"])
    assert whole["counts"]["Chunk"] == corpus["counts"]["Chunk"]
    # what was left out is named, with both sources for a duplicate and a reason for a skipped file
    assert "duplicate: corpus.jsonl#tarrow has the same text as corpus/tarrow.txt; built once" in err
    assert "ignored: README.md: project documentation, not corpus (name the file to load it)" in err
    assert "ignored: questions.jsonl: a questions file" in err
    assert "ignored: make_jsonl.py: not a document type (.py)\n" in err
    assert [i["path"] for i in whole["ignored"]] == ["README.md", "make_jsonl.py", "questions.jsonl"]
    assert len(whole["duplicates"]) == 15 and corpus["duplicates"] == [] and err_corpus == ""
    assert {d["source"] for d in corpus["documents"]} == {p.name for p in (SAMPLE / "corpus").iterdir()}


def test_near_duplicate_option_and_report(env: Path, capsys) -> None:
    words = " ".join(f"w{i}" for i in range(120))
    (env / "c").mkdir()
    (env / "c" / "a.txt").write_text(f"Alpha. {words}.", encoding="utf-8")
    (env / "c" / "b.txt").write_text(f"Alpha. {words} too.", encoding="utf-8")
    out, err = build_json([env / "c"], env / "db1", capsys)
    assert out["counts"]["Document"] == 2
    assert re.search(r"near-duplicate: b\.txt overlaps a\.txt by 9\d%; built anyway", err)
    out, err = build_json([env / "c"], env / "db2", capsys, "--skip-near-duplicates")
    assert out["counts"]["Document"] == 1 and "left out" in err
    assert out["near_duplicates"][0]["source"] == "b.txt" and out["near_duplicates"][0]["skipped"] is True


def test_a_bad_file_does_not_lose_the_good_ones(env: Path, capsys) -> None:
    folder = env / "mixed"
    folder.mkdir()
    (folder / "good.md").write_text("# Harbour Library\n\nMarta Ruiz designed the Harbour Library.", encoding="utf-8")
    (folder / "deep.jsonl").write_text('{"text": ' + "[" * 100_000 + "]" * 100_000 + "}\n", encoding="utf-8")
    (folder / "blob.txt").write_text("Q" * 50_000, encoding="utf-8")
    out, err = build_json([folder], env / "db", capsys)
    assert [d["title"] for d in out["documents"]] == ["Harbour Library"]
    assert sorted(Path(e["path"]).name for e in out["load_errors"]) == ["blob.txt", "deep.jsonl"]
    assert "nested deeper than the limit" in err and "a 'word' of 50,000 characters" in err


@pytest.mark.timeout(120)  # the walk used to open the FIFO and wait for a writer forever
def test_a_fifo_in_a_folder_is_skipped_not_opened(env: Path, capsys) -> None:
    import os

    folder = env / "piped"
    folder.mkdir()
    (folder / "good.md").write_text("# Harbour Library\n\nMarta Ruiz designed the Harbour Library.", encoding="utf-8")
    os.mkfifo(folder / "x.jsonl")
    out, err = build_json([folder], env / "db", capsys)
    assert [d["title"] for d in out["documents"]] == ["Harbour Library"]
    assert "ignored: x.jsonl: a named pipe (FIFO), not a regular file\n" in err
    assert main(["build", str(folder / "x.jsonl"), "--db", str(env / "db2")]) == 2
    assert "x.jsonl: is a named pipe (FIFO), not a regular file" in capsys.readouterr().err


def test_case_file_of_a_build_from_an_absolute_path_names_no_machine_path(tmp_path: Path) -> None:
    import kgviz.compare as cmp
    from kgviz.graph.store import GraphStore
    from kgviz.index.pipeline import BuildParams, build
    from kgviz.ingest import load_paths
    from kgviz.methods.base import MethodContext
    from kgviz.methods.registry import list_methods
    from kgviz.providers.embedders import HashingEmbedder
    from kgviz.providers.offline import OfflineLLM
    from kgviz.reasoning import Reasoner

    copy = tmp_path / "machine" / "corpus"  # a path that must not travel
    copy.mkdir(parents=True)
    for p in (SAMPLE / "corpus").iterdir():
        (copy / p.name).write_bytes(p.read_bytes())
    emb = HashingEmbedder()
    store = GraphStore.open(tmp_path / "db", embedder_id=emb.id, dim=emb.dim)
    try:
        reasoner = Reasoner(OfflineLLM(), emb)
        build(load_paths([copy.resolve()]).documents, store, reasoner, BuildParams(workers=1))
        sources = [r["s"] for r in store.query("MATCH (d:Document) RETURN d.source AS s ORDER BY s")]
        assert sources == sorted(p.name for p in copy.iterdir())
        question = "Who designed the bridge that the editor of the Kellhaven Courier said was unsafe?"
        c = cmp.compare(question, list_methods(), MethodContext(store, reasoner), ["Edda Lunn"])
        assert any(r.run.context.items for r in c.results)
        for text in (cmp.case_file_html(c, store), cmp.case_file_json(c)):
            assert str(tmp_path) not in text and str(ROOT) not in text
            assert ABSOLUTE.search(text) is None, ABSOLUTE.search(text)
        # chunks are labelled with the documents' real titles, not file names
        chunk_sources = {i.source for r in c.results for i in r.run.context.items if i.kind == "chunk"}
        assert chunk_sources and chunk_sources <= set(HEADINGS)
    finally:
        store.close()


@pytest.mark.parametrize("row, reason", [
    ('{"key": "k", "provider": "p", "model": "m", "text": "t", "reply_model": "m", "input_tokens": "many", '
     '"output_tokens": 1, "latency_s": 0.1, "raw": {}, "created": 1}', '"input_tokens" must be a whole number'),
    ('{"key": ' + "[" * 100_000 + "]" * 100_000 + "}", "JSON nested deeper than 32 levels"),
])
def test_a_bad_recording_is_exit_2_with_its_line_never_a_traceback(env: Path, capsys, row: str, reason: str) -> None:
    rec = env / "rec.jsonl"
    rec.write_text('{"kgviz_recording": 1, "provider": "p", "model": "m"}\n' + row + "\n", encoding="utf-8")
    code = main(["build", str(SAMPLE / "corpus"), "--db", str(env / "db"), "--llm", f"recorded:{rec}", "--json"])
    cap = capsys.readouterr()
    assert code == 2 and "Traceback" not in cap.err
    assert f"rec.jsonl, line 2: {reason}" in cap.err and len(cap.err.strip().splitlines()) == 1
    assert json.loads(cap.out)["error_type"] == "RecordingError"
