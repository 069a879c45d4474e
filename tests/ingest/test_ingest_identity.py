"""Document identity (issue 14): one document once whatever its format, with its real title, and
sources that name no machine path."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgviz.ingest import load_paths, load_uploads
from kgviz.ingest.dedup import find_near_duplicates, jaccard, shingles
from kgviz.ingest.markdown import split_title

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample_data"
BODY = ("The Harbour Library was designed by Marta Ruiz in 1931. It stands on the quay of Port Alden.\n\n"
        "The library holds 40,000 books about ships and the sea.")
HEADINGS = ["Agnes Vohl", "Aster Wren", "Edda Lunn", "Kellhaven", "Kellhaven University", "Lessary",
            "Orrin Bridge", "Ossel Marine Institute", "Saltwind Festival", "Skellan Point Lighthouse",
            "Tarrow", "Thomas Aldrick", "Tidewell Line", "Tomas Aldric", "Ventholm"]


def write(folder: Path, name: str, text: str) -> Path:
    p = folder / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


def same_text_three_ways(folder: Path) -> None:
    # the .txt sorts first, so the kept copy starts with a file-name title that the heading replaces
    write(folder, "a_copy.txt", BODY.replace("\n\n", "\r\n\r\n") + "\n")
    write(folder, "harbour.md", f"# The Harbour Library\n\n{BODY.replace('Marta Ruiz', '**Marta Ruiz**')}\n")
    write(folder, "corpus.jsonl", json.dumps({"id": "h1", "title": "The Harbour Library", "text": BODY}) + "\n")


def test_same_text_as_md_txt_and_jsonl_is_one_document(tmp_path: Path) -> None:
    same_text_three_ways(tmp_path / "docs")
    result = load_paths([tmp_path / "docs"])
    assert result.errors == []
    [doc] = result.documents
    assert doc.text == BODY  # markup and the title heading gone, line ends normalised
    assert doc.title == "The Harbour Library"  # a real title beats the .txt's file name
    assert doc.source == "a_copy.txt"
    assert [(d.source, d.kept, d.doc_id) for d in result.duplicates] == [
        ("harbour.md", "a_copy.txt", doc.id), ("corpus.jsonl#h1", "a_copy.txt", doc.id)]


def test_same_text_uploaded_in_three_formats_builds_one_document(tmp_path: Path) -> None:
    from kgviz.graph.store import GraphStore
    from kgviz.index.pipeline import BuildParams, build
    from kgviz.providers.embedders import HashingEmbedder
    from kgviz.providers.offline import OfflineLLM
    from kgviz.reasoning import Reasoner

    same_text_three_ways(tmp_path / "up")
    uploads = [(p.name, p.read_bytes()) for p in sorted((tmp_path / "up").iterdir())]
    loaded = load_uploads(uploads)
    assert len(loaded.documents) == 1 and loaded.skipped_duplicates == 2
    emb = HashingEmbedder(64)
    store = GraphStore.open(tmp_path / "db", embedder_id=emb.id, dim=emb.dim)
    try:
        # the pipeline also builds one copy when handed all three, and names the copies
        copies = [d for u in uploads for d in load_uploads([u]).documents]
        assert len({d.id for d in copies}) == 1 and len(copies) == 3
        report = build(copies, store, Reasoner(OfflineLLM(), emb), BuildParams(workers=1, ket_enabled=False))
        assert report.new_documents == 1
        assert sum("same text as" in w for w in report.warnings) == 2
        rows = store.query("MATCH (d:Document) RETURN d.title AS title, d.source AS source")
        assert rows == [{"title": "A Copy", "source": "a_copy.txt"}]  # the first copy handed over
        again = build(loaded.documents, store, Reasoner(OfflineLLM(), emb), BuildParams(workers=1, ket_enabled=False))
        assert again.new_documents == 0 and again.skipped_documents == 1
    finally:
        store.close()


def test_sample_folder_and_its_corpus_folder_give_the_same_15_documents() -> None:
    whole, corpus = load_paths([SAMPLE]), load_paths([SAMPLE / "corpus"])
    assert whole.errors == [] and corpus.errors == []
    assert sorted(d.title for d in corpus.documents) == HEADINGS
    assert [(d.id, d.title, d.text) for d in whole.documents] == [(d.id, d.title, d.text) for d in corpus.documents]
    # every corpus.jsonl record repeats a hand-written file: reported with both sources, built once
    assert len(whole.duplicates) == 15
    assert {(d.source.split("#")[1], d.kept.split("/")[1].rsplit(".", 1)[0]) for d in whole.duplicates} == {
        (p.stem, p.stem) for p in (SAMPLE / "corpus").iterdir()}
    assert {i.path: i.reason.split(":")[0] for i in whole.ignored} == {
        "README.md": "project documentation, not corpus",
        "make_jsonl.py": "not a document type (.py)",
        "questions.jsonl": "a questions file",
    }
    assert not any(d.source.startswith("/") or ":" in d.source.split("#")[0] for d in whole.documents)


def test_markdown_title_is_not_repeated_in_the_body() -> None:
    [doc] = [d for d in load_paths([SAMPLE / "corpus" / "agnes_vohl.md"]).documents]
    assert doc.title == "Agnes Vohl" and doc.source == "agnes_vohl.md"
    assert doc.text.startswith("Agnes Vohl (1882–1957) was an oceanographer")
    title, body = split_title("Intro line.\n\n# Later heading\n\nMore.")
    assert title == "Later heading" and "Later heading" in body  # a section heading stays in the text


def test_a_skipped_file_named_explicitly_is_loaded(tmp_path: Path) -> None:
    write(tmp_path, "README.md", "# About\n\nThis folder holds notes.")
    write(tmp_path, "note.txt", "Marta Ruiz designed the library.")
    assert [d.source for d in load_paths([tmp_path]).documents] == ["note.txt"]
    named = load_paths([tmp_path / "README.md", tmp_path / "note.txt"])
    assert sorted(d.title for d in named.documents) == ["About", "Note"] and named.ignored == []


def test_near_duplicates_are_reported_and_kept_by_default_skipped_on_request(tmp_path: Path) -> None:
    words = " ".join(f"w{i}" for i in range(200))
    write(tmp_path, "a.txt", f"First copy. {words}.")
    write(tmp_path, "b.txt", f"First copy. {words} and one more.")  # ~98% shingle overlap
    write(tmp_path, "c.txt", "Something else entirely, about a bridge.")
    kept = load_paths([tmp_path])
    assert len(kept.documents) == 3
    [near] = kept.near_duplicates
    assert (near.source, near.kept, near.skipped) == ("b.txt", "a.txt", False) and 0.95 <= near.similarity < 1
    skipped = load_paths([tmp_path], skip_near_duplicates=True)
    assert [d.source for d in skipped.documents] == ["a.txt", "c.txt"] and skipped.near_duplicates[0].skipped
    assert skipped.skipped_duplicates == 1


def test_prefix_filtered_near_duplicates_match_all_pairs() -> None:
    import random

    rng = random.Random(7)
    base = [" ".join(rng.choice("abcdefghij") + str(rng.randrange(30)) for _ in range(60)) for _ in range(6)]
    texts = []
    for b in base:  # each base text plus copies with 0..4 words changed
        for k in range(4):
            w = b.split()
            for j in rng.sample(range(len(w)), k):
                w[j] = "zz"
            texts.append(" ".join(w))
    found = {(m.index, m.match) for m in find_near_duplicates(texts, 0.9)}
    sets = [shingles(t) for t in texts]
    brute = set()
    for i in range(len(texts)):
        sims = [(jaccard(sets[i], sets[j]), -j) for j in range(i)]
        best = max(sims, default=(0.0, 0))
        if best[0] >= 0.9:
            brute.add((i, -best[1]))
    assert found == brute and found


@pytest.mark.parametrize("name", ["CHANGELOG.md", "LICENSE.txt", "readme.markdown"])
def test_documentation_files_are_skipped_in_folders(tmp_path: Path, name: str) -> None:
    write(tmp_path, name, "Some project text.")
    write(tmp_path, "doc.txt", "Corpus text.")
    result = load_paths([tmp_path])
    assert [d.source for d in result.documents] == ["doc.txt"]
    assert result.ignored[0].path == name and "documentation" in result.ignored[0].reason


def _pdf(lines: list[str], title: str | None) -> bytes:
    import io

    from pypdf import PdfReader, PdfWriter
    from test_ingest_loaders import make_pdf

    w = PdfWriter(clone_from=PdfReader(io.BytesIO(make_pdf([lines]))))
    if title is not None:
        w.add_metadata({"/Title": title})
    buf = io.BytesIO()
    w.write(buf)
    return buf.getvalue()


@pytest.mark.parametrize("meta, lines, expected", [
    ("Harbour Survey 1931", ["The library was designed by Marta Ruiz."], "Harbour Survey 1931"),
    ("Microsoft Word - draft3.docx", ["Harbour Survey", "The library was designed."], "Harbour Survey"),
    (None, ["The library was designed by Marta Ruiz."], "Survey Notes"),  # a sentence is no title
])
def test_pdf_title_from_metadata_then_first_line_then_file_name(meta: str | None, lines: list[str],
                                                                expected: str) -> None:
    [doc] = load_uploads([("survey_notes.pdf", _pdf(lines, meta))]).documents
    assert doc.title == expected
