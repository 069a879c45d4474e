"""Loaders: every bad-input case gives its typed error naming the file; good files load with
stable ids; one bad file never stops the others."""
from __future__ import annotations

import codecs
import hashlib
import io
import json
from pathlib import Path

import pytest
from pypdf import PdfReader, PdfWriter

from kgviz.errors import (
    BinaryFileError,
    ConfigError,
    DecodeError,
    EmptyFileError,
    FileTooLargeError,
    IngestError,
    UnsupportedFileError,
)
from kgviz.ingest import (
    DEFAULT_MAX_BYTES,
    SUPPORTED_EXTENSIONS,
    document_from_text,
    load_bytes,
    load_file,
    load_paths,
    load_uploads,
)
from tests.support.data import SHARED_DATA

DATA = SHARED_DATA


def _pdf_string(s: str) -> str:
    return "(" + s.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ")"


def make_pdf(pages: list[list[str]]) -> bytes:
    """A minimal valid PDF: one Helvetica text line per string, one page per list."""
    objs: dict[int, bytes] = {}
    page_ids = [4 + 2 * i for i in range(len(pages))]
    objs[1] = b"<< /Type /Catalog /Pages 2 0 R >>"
    kids = " ".join(f"{p} 0 R" for p in page_ids)
    objs[2] = f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode()
    objs[3] = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"
    for pid, lines in zip(page_ids, pages):
        ops = " T* ".join(f"{_pdf_string(line)} Tj" for line in lines)
        stream = f"BT /F1 12 Tf 14 TL 72 720 Td {ops} ET".encode("latin-1")
        objs[pid] = (
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {pid + 1} 0 R >>"
        ).encode()
        objs[pid + 1] = b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream"
    out = bytearray(b"%PDF-1.4\n")
    offsets: dict[int, int] = {}
    for k in sorted(objs):
        offsets[k] = len(out)
        out += b"%d 0 obj\n" % k + objs[k] + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    for k in sorted(objs):
        out += b"%010d 00000 n \n" % offsets[k]
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    return bytes(out)


PDF = make_pdf([["Alice met Bob in Paris.", "They (both) liked tea."], ["Page two speaks."]])


def write(tmp_path: Path, name: str, data: bytes | str) -> Path:
    p = tmp_path / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return p


# --- happy paths ---------------------------------------------------------------------------------
def test_txt_document_fields(tmp_path: Path) -> None:
    p = write(tmp_path, "notes.txt", "Alice met Bob.\r\nThey talked.  \n\n\n\nThe end.\n")
    [doc] = load_file(p)
    assert doc.text == "Alice met Bob.\nThey talked.\n\nThe end."
    assert doc.sha256 == hashlib.sha256(doc.text.encode()).hexdigest()
    assert doc.id == "doc:" + doc.sha256[:16]
    assert doc.title == "Notes"  # the file stem, made readable: the last resort for a .txt
    assert doc.source == "notes.txt"  # the file's name, never the machine's path


def test_same_content_same_id_across_encodings_and_line_ends(tmp_path: Path) -> None:
    text = "Zoë went to Zürich.\nShe stayed."
    a = load_file(write(tmp_path, "a.txt", text))[0]
    crlf = codecs.BOM_UTF8 + text.replace("\n", "\r\n").encode()
    b = load_file(write(tmp_path, "b.txt", crlf))[0]
    c = load_file(write(tmp_path, "c.txt", text.encode("utf-16")))[0]  # with BOM
    d = load_bytes("d.md", ("# " + "\n" + text + "\n").encode())[0]
    assert a.id == b.id == c.id == d.id
    assert a.title != b.title
    other = load_bytes("e.txt", b"Zoe went to Zurich.")[0]
    assert other.id != a.id


def test_pdf_happy_path(tmp_path: Path) -> None:
    [doc] = load_file(write(tmp_path, "paper.pdf", PDF))
    assert "Alice met Bob in Paris." in doc.text
    assert "They (both) liked tea." in doc.text
    assert "Page two speaks." in doc.text
    assert doc.text.index("Paris") < doc.text.index("Page two")
    assert doc.title == "Paper"


def test_pdf_without_owner_password_loads() -> None:
    # Encrypted with an empty user password: readers open it without asking, so do we.
    w = PdfWriter(clone_from=PdfReader(io.BytesIO(PDF)))
    w.encrypt("", owner_password="owner", algorithm="RC4-128")
    buf = io.BytesIO()
    w.write(buf)
    [doc] = load_bytes("open.pdf", buf.getvalue())
    assert "Alice met Bob" in doc.text


def test_markdown_is_stripped(tmp_path: Path) -> None:
    md = "# Alice\n\nAlice **met** [Bob](https://bob.example/x) in _Paris_.\n"
    [doc] = load_file(write(tmp_path, "alice.md", md))
    # the opening heading is the title, not body text: the body equals the same text as a .txt
    assert doc.title == "Alice"
    assert doc.text == "Alice met Bob in Paris."
    assert "https" not in doc.text


def test_jsonl_corpus_rows(tmp_path: Path) -> None:
    rows = [
        {"id": "p1", "title": "Alice", "text": "Alice met Bob."},
        {"id": 7, "title": "Bob", "text": "Bob is a baker."},
        {"id": "p3", "text": "No title here."},
    ]
    p = write(tmp_path, "corpus.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n\n")
    docs = load_file(p)
    assert [d.title for d in docs] == ["Alice", "Bob", "p3"]
    assert [d.source for d in docs] == [f"{p.name}#p1", f"{p.name}#7", f"{p.name}#p3"]
    assert docs[0].id == document_from_text("Alice met Bob.", title="x", source="y").id


# --- bad input ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["e.txt", "e.md", "e.pdf", "e.jsonl"])
def test_zero_byte_file(tmp_path: Path, name: str) -> None:
    p = write(tmp_path, name, b"")
    with pytest.raises(EmptyFileError) as ei:
        load_file(p)
    assert ei.value.path == str(p) and "empty" in ei.value.reason


@pytest.mark.parametrize("name", ["w.txt", "w.md", "w.jsonl"])
def test_whitespace_only_file(tmp_path: Path, name: str) -> None:
    with pytest.raises(EmptyFileError, match="whitespace|blank"):
        load_file(write(tmp_path, name, " \n\t\r\n  \n"))


def test_text_that_normalises_to_nothing_is_empty() -> None:
    with pytest.raises(EmptyFileError, match="normalisation"):
        load_bytes("ctl.txt", b"\x01" + b" " * 300)  # too few controls to look binary
    with pytest.raises(EmptyFileError):
        document_from_text(" \n\ufeff ", title="t", source="s")


def test_markdown_with_only_syntax_is_empty() -> None:
    with pytest.raises(EmptyFileError, match="Markdown"):
        load_bytes("rules.md", b"---\n\n***\n\n[ref]: http://x\n")


@pytest.mark.parametrize(
    "data",
    [
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)),  # NUL bytes
        b"text\x00more text",
        b"ok " + b"\x01\x02\x03\x04\x05\x06\x07\x08" * 20 + b" ok",  # valid UTF-8, all controls
        bytes(range(1, 32)) * 10 + b"\xff\xfe\xfa",  # not UTF-8 and control-heavy
    ],
)
def test_binary_content_rejected(data: bytes) -> None:
    with pytest.raises(BinaryFileError) as ei:
        load_bytes("photo.txt", data)
    assert ei.value.path == "photo.txt" and "binary" in ei.value.reason


def test_undecodable_text_is_a_decode_error_not_latin1(tmp_path: Path) -> None:
    p = write(tmp_path, "latin.txt", "Café in Zürich, naïve résumé.".encode("latin-1"))
    with pytest.raises(DecodeError) as ei:
        load_file(p)
    assert "UTF-8" in ei.value.reason and "offset 3" in ei.value.reason
    assert ei.value.path == str(p) and "UTF-8" in ei.value.hint


def test_utf16_without_bom_is_rejected() -> None:
    with pytest.raises((BinaryFileError, DecodeError)):
        load_bytes("u.txt", "hello world".encode("utf-16-le"))


def test_too_large_is_checked_before_reading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = write(tmp_path, "big.txt", "word " * 1000)
    opened: list[str] = []
    real_open = Path.open

    def spy(self: Path, *a: object, **k: object):  # type: ignore[no-untyped-def]
        opened.append(str(self))
        return real_open(self, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "open", spy)
    with pytest.raises(FileTooLargeError) as ei:
        load_file(p, max_bytes=100)
    assert opened == []
    assert "5.0 KB" in ei.value.reason and "100 bytes limit" in ei.value.reason
    with pytest.raises(FileTooLargeError):
        load_bytes("big.txt", b"x" * 101, max_bytes=100)
    assert load_bytes("ok.txt", b"x" * 100, max_bytes=100)[0].text == "x" * 100


def test_the_default_limit_is_the_app_uploaders_20_000_000_bytes() -> None:
    from kgviz.config import Settings
    from kgviz.ingest.formats import _check_size

    limit = Settings.from_env({}).max_file_bytes
    assert limit == DEFAULT_MAX_BYTES == 20_000_000
    _check_size("a.txt", 20_000_000, limit)
    with pytest.raises(FileTooLargeError, match=r"20.0 MB \(20,000,001 bytes\), over the 20.0 MB \(20,000,000 bytes\) limit"):
        _check_size("a.txt", 20_000_001, limit)


def test_bad_max_bytes_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        load_bytes("a.txt", b"hello", max_bytes=0)


@pytest.mark.parametrize("name", ["report.docx", "archive.tar.gz", "README", "data.json"])
def test_unsupported_extension_lists_supported(tmp_path: Path, name: str) -> None:
    p = write(tmp_path, name, b"some text")
    with pytest.raises(UnsupportedFileError) as ei:
        load_file(p)
    assert all(ext in ei.value.reason for ext in SUPPORTED_EXTENSIONS)
    assert ei.value.path == str(p)


def test_extension_is_case_insensitive() -> None:
    assert load_bytes("NOTES.TXT", b"Hello there.")[0].title == "NOTES"


@pytest.mark.parametrize(
    "data, reason",
    [
        (PDF[: len(PDF) // 2], "could not be read"),
        (b"%PDF-1.4\n" + bytes(range(256)) * 4, "could not be read"),
        (PDF.replace(b"trailer", b"trailxr"), "could not be read"),
        (b"just some text, renamed", "no %PDF- header"),
    ],
)
def test_corrupt_pdf_is_a_decode_error(data: bytes, reason: str) -> None:
    with pytest.raises(DecodeError) as ei:
        load_bytes("broken.pdf", data)
    assert reason in ei.value.reason and ei.value.path == "broken.pdf"


def test_pdf_without_text_is_a_clear_error() -> None:
    w = PdfWriter()
    w.add_blank_page(200, 200)
    buf = io.BytesIO()
    w.write(buf)
    with pytest.raises(EmptyFileError, match="no extractable text") as ei:
        load_bytes("scan.pdf", buf.getvalue())
    assert "OCR" in ei.value.hint


def test_password_protected_pdf() -> None:
    w = PdfWriter(clone_from=PdfReader(io.BytesIO(PDF)))
    w.encrypt("secret", algorithm="RC4-128")
    buf = io.BytesIO()
    w.write(buf)
    with pytest.raises(DecodeError, match="password"):
        load_bytes("locked.pdf", buf.getvalue())


def test_jsonl_bad_lines_are_reported_and_skipped(tmp_path: Path) -> None:
    lines = [
        json.dumps({"id": "a", "title": "A", "text": "Alpha text."}),
        "{not json",
        json.dumps(["a", "list"]),
        json.dumps({"id": "d", "title": "D"}),
        json.dumps({"id": "e", "title": "E", "text": "   "}),
        "",
        json.dumps({"id": "g", "title": "G", "text": "Gamma text."}),
    ]
    p = write(tmp_path, "c.jsonl", "\n".join(lines).encode() + b"\n\xff\xfe bad bytes\n")
    errors: list[IngestError] = []
    docs = load_file(p, errors=errors)
    assert [d.title for d in docs] == ["A", "G"]
    assert [e.reason.split(":")[0] for e in errors] == [
        "line 2", "line 3", "line 4", "line 5", "line 8"
    ]
    assert all(e.path == str(p) for e in errors)
    assert isinstance(errors[-1], DecodeError) and "UTF-8" in errors[-1].reason
    assert "invalid JSON" in errors[0].reason


def test_jsonl_bad_lines_logged_when_no_sink(caplog: pytest.LogCaptureFixture) -> None:
    data = b'{"id": "a", "text": "ok"}\n{oops\n'
    docs = load_bytes("c.jsonl", data)
    assert len(docs) == 1
    assert "line 2" in caplog.text


def test_jsonl_with_no_good_line_raises() -> None:
    with pytest.raises(DecodeError, match=r"no usable lines \(2 bad\)"):
        load_bytes("q.jsonl", b'{"question": "x"}\n[1]\n')


# --- many files --------------------------------------------------------------------------------
def test_load_paths_walks_folders_and_survives_bad_files(tmp_path: Path) -> None:
    write(tmp_path, "corpus/a.txt", "Alice met Bob.")
    write(tmp_path, "corpus/sub/b.md", "# Bob\n\nBob bakes bread.")
    write(tmp_path, "corpus/sub/c.pdf", PDF)
    write(tmp_path, "corpus/empty.txt", "")
    write(tmp_path, "corpus/bin.txt", b"\x00\x01binary")
    write(tmp_path, "corpus/dup.txt", "Alice met Bob.\n")
    write(tmp_path, "corpus/image.png", b"\x89PNG")
    write(tmp_path, "corpus/.hidden/x.txt", "hidden text")
    write(tmp_path, "corpus/rows.jsonl", '{"id": "r1", "text": "Row one."}\n{bad\n')
    big = write(tmp_path, "big.txt", "x" * 5000)
    result = load_paths([tmp_path / "corpus", big, tmp_path / "missing.txt"], max_bytes=4000)
    titles = sorted(d.title for d in result.documents)
    assert titles == ["A", "Bob", "C", "r1"]
    kinds = sorted(type(e).__name__ for e in result.errors)
    assert kinds == sorted(
        ["EmptyFileError", "BinaryFileError", "FileTooLargeError", "IngestError", "DecodeError"]
    )
    assert result.skipped_duplicates == 1
    # sources relative to the deepest folder holding everything named (tmp_path here)
    assert result.duplicate_sources == ["corpus/dup.txt"]
    assert result.duplicates[0].kept == "corpus/a.txt"
    assert result.ignored_files == ["corpus/image.png"]
    missing = [e for e in result.errors if type(e) is IngestError]
    assert "no such file" in missing[0].reason


def test_load_paths_is_deterministic_and_idempotent(tmp_path: Path) -> None:
    for i in range(5):
        write(tmp_path, f"d/{i}.txt", f"Document number {i}.")
    first = load_paths([tmp_path / "d"])
    second = load_paths([tmp_path / "d", tmp_path / "d" / "3.txt"])
    assert [d.id for d in first.documents] == [d.id for d in second.documents]
    assert second.skipped_duplicates == 1


def test_empty_folder_is_reported(tmp_path: Path) -> None:
    (tmp_path / "nothing").mkdir()
    write(tmp_path, "nothing/x.csv", "a,b")
    result = load_paths([tmp_path / "nothing"])
    assert result.documents == []
    assert isinstance(result.errors[0], UnsupportedFileError)


@pytest.mark.timeout(60)  # opening the FIFO would wait for a writer: a regression hangs
def test_folder_walk_reads_regular_files_only(tmp_path: Path) -> None:
    import os
    import socket

    write(tmp_path, "corpus/a.txt", "Alice met Bob.")
    os.mkfifo(tmp_path / "corpus" / "x.jsonl")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "corpus" / "s.txt"))
    outside = write(tmp_path, "elsewhere/secret.txt", "Outside the folder.")
    (tmp_path / "corpus" / "out.txt").symlink_to(outside)
    (tmp_path / "corpus" / "outdir").symlink_to(outside.parent, target_is_directory=True)
    (tmp_path / "corpus" / "in.md").symlink_to(tmp_path / "corpus" / "a.txt")
    (tmp_path / "corpus" / "dangling.txt").symlink_to(tmp_path / "corpus" / "nowhere.txt")
    try:
        result = load_paths([tmp_path / "corpus"])
    finally:
        sock.close()
    assert [d.source for d in result.documents] == ["a.txt"]  # in.md is the same text, built once
    assert result.duplicate_sources == ["in.md"]
    reasons = {i.path: (i.reason, i.loads_when_named) for i in result.ignored}
    assert reasons == {
        "x.jsonl": ("a named pipe (FIFO), not a regular file", False),
        "s.txt": ("a socket, not a regular file", False),
        "out.txt": ("a symbolic link leading outside the folder", True),
        "outdir": ("a symbolic link leading outside the folder", True),
        "dangling.txt": ("cannot be read (No such file or directory)", False),
    }
    # named directly, the link is read; the FIFO is refused without being opened
    assert [d.text for d in load_paths([tmp_path / "corpus" / "out.txt"]).documents] == ["Outside the folder."]
    with pytest.raises(UnsupportedFileError, match=r"is a named pipe \(FIFO\), not a regular file"):
        load_file(tmp_path / "corpus" / "x.jsonl")


def test_load_file_on_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(IngestError, match="folder"):
        load_file(tmp_path)


def test_load_uploads(tmp_path: Path) -> None:
    result = load_uploads(
        [("a.txt", b"Alpha."), ("b.docx", b"PK\x03\x04"), ("c.txt", b"Alpha.\n"), ("d.pdf", PDF)]
    )
    assert [d.title for d in result.documents] == ["A", "D"]
    assert [type(e) for e in result.errors] == [UnsupportedFileError]
    assert result.skipped_duplicates == 1


@pytest.mark.skipif(not (DATA / "hotpotqa" / "corpus.jsonl").exists(), reason="shared data absent")
def test_shared_corpus_loads_one_document_per_line() -> None:
    path = DATA / "hotpotqa" / "corpus.jsonl"
    errors: list[IngestError] = []
    docs = load_file(path, errors=errors)
    with open(path, encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    assert errors == []
    assert len(docs) == len(rows)
    assert docs[0].source == f"corpus.jsonl#{rows[0]['id']}"
    assert docs[0].title == rows[0]["title"]


def test_jsonl_bad_line_reason_reads_well_and_says_what_to_do() -> None:
    # regression: "Unterminated string starting at at column 29" and an empty hint
    from kgviz.ingest.loaders import skipped_line

    errors: list = []
    docs = load_bytes("b.jsonl", b'{"id": "a", "text": "fine"}\n{"id": "b", "text": "never ends}\n', errors=errors)
    assert len(docs) == 1 and len(errors) == 1
    assert errors[0].reason == "line 2: invalid JSON (Unterminated string starting at column 21)"
    assert "JSON object" in errors[0].hint and skipped_line(errors[0]) == 2
    errors.clear()
    load_bytes("c.jsonl", b'{"text": "ok"}\n{"text": "x",}\n', errors=errors)
    assert "at column" in errors[0].reason and " at at " not in errors[0].reason
    with pytest.raises(DecodeError) as whole:  # a whole file rejected is not a skipped line
        load_bytes("q.jsonl", b"{oops\n")
    assert skipped_line(whole.value) is None
