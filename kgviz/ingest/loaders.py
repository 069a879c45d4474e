"""Load files into Documents: .txt, .md/.markdown, .pdf and .jsonl corpora.

Every rejection is a typed IngestError naming the file and the reason. ``load_paths`` and
``load_uploads`` collect errors per file so one bad file never stops the others.

A document's id is "doc:" + the first 16 hex digits of sha256 of its normalised text
(kgviz.text.normalize_text), so loading the same content twice gives the same id and the build
pipeline can skip it.
"""
from __future__ import annotations

import codecs
import hashlib
import io
import json
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Iterable

from kgviz.errors import (
    BinaryFileError,
    ConfigError,
    DecodeError,
    EmptyFileError,
    FileTooLargeError,
    IngestError,
    UnsupportedFileError,
)
from kgviz.ingest.markdown import split_title
from kgviz.text import normalize_text
from kgviz.types import Document

log = logging.getLogger(__name__)

DEFAULT_MAX_BYTES = 20 * 1024 * 1024  # same as Settings.max_file_bytes
SUPPORTED_EXTENSIONS: tuple[str, ...] = (".jsonl", ".markdown", ".md", ".pdf", ".txt")

# More than this share of control characters means the "text" is really binary (ours).
_MAX_CONTROL_RATIO = 0.01
# Unicode category Cc minus the whitespace controls (tab, newlines, vertical tab, form feed).
_CONTROL_CHARS_RE = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x9f]")
_UTF8_HINT = "Save the file as UTF-8 (most editors offer 'Save with encoding') and load it again."
_BINARY_HINT = "kgviz reads plain text (.txt, .md), PDF and JSONL; export the file as text first."


@dataclass(frozen=True)
class LoadResult:
    documents: list[Document]
    errors: list[IngestError]
    skipped_duplicates: int = 0  # documents whose id was already loaded in this call
    duplicate_sources: list[str] = field(default_factory=list)  # their sources, for display
    ignored_files: list[str] = field(default_factory=list)  # unsupported files found in folders


def document_from_text(text: str, *, title: str, source: str) -> Document:
    """A Document with the canonical id for ``text`` (normalised first). Raises EmptyFileError
    (naming ``source``) when nothing is left after normalisation."""
    norm = normalize_text(text)
    if not norm:
        raise EmptyFileError(source, "no text left after normalisation", hint="Add text.")
    digest = hashlib.sha256(norm.encode("utf-8")).hexdigest()
    return Document(id=f"doc:{digest[:16]}", title=title, source=source, sha256=digest, text=norm)


def title_from_stem(stem: str) -> str:
    """The last-resort title: the file name made readable ("thomas_aldrick" -> "Thomas Aldrick").
    A name with capitals is kept as its author wrote it ("NOTES", "iPhone_review")."""
    words = re.sub(r"[_\s]+", " ", stem).strip() or stem
    return " ".join(w[:1].upper() + w[1:] for w in words.split()) if words.islower() else words


# --- checks ------------------------------------------------------------------------------------
def _extension(name: str) -> str:
    ext = PurePath(name).suffix.lower()
    if ext not in SUPPORTED_EXTENSIONS:
        shown = f"'{ext}'" if ext else "no extension"
        raise UnsupportedFileError(
            name,
            f"unsupported file type ({shown}); supported: {', '.join(SUPPORTED_EXTENSIONS)}",
            hint="Rename the file if it is plain text, or convert it to a supported type.",
        )
    return ext


def _check_size(name: str, size: int, max_bytes: int) -> None:
    if max_bytes <= 0:
        raise ConfigError(f"max_bytes must be positive, got {max_bytes}")
    if size > max_bytes:
        raise FileTooLargeError(
            name,
            f"file is {_human(size)}, over the {_human(max_bytes)} limit",
            hint="Split the file into smaller parts or raise KGVIZ_MAX_FILE_MB.",
        )
    if size == 0:
        raise EmptyFileError(name, "file is empty (0 bytes)", hint="Add text to the file.")


def _human(n: int) -> str:
    if n >= 1024 * 1024:
        return f"{n / (1024 * 1024):.1f} MB"
    if n >= 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n} bytes"


def _check_not_binary(name: str, text: str) -> None:
    if "\x00" in text:
        raise BinaryFileError(name, "file contains NUL bytes; it looks binary", hint=_BINARY_HINT)
    controls = len(_CONTROL_CHARS_RE.findall(text))
    if controls > _MAX_CONTROL_RATIO * len(text):
        raise BinaryFileError(
            name,
            f"{controls} of {len(text)} characters are control characters; it looks binary",
            hint=_BINARY_HINT,
        )


def _decode(name: str, data: bytes) -> str:
    """UTF-8 (with or without BOM), or UTF-16 when a BOM says so. Anything else is an error:
    guessing latin-1 would silently garble text and the graph built from it."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise DecodeError(name, f"invalid UTF-16 at byte {exc.start}", hint=_UTF8_HINT) from exc
        _check_not_binary(name, text)
        return text
    if b"\x00" in data:
        raise BinaryFileError(name, "file contains NUL bytes; it looks binary", hint=_BINARY_HINT)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        # Invalid UTF-8 with many control bytes is binary; with few it is text in another
        # encoding, which needs a different fix.
        sample = data[:65536]
        controls = sum(1 for b in sample if (b < 32 and b not in b"\t\n\r\f\v") or b == 127)
        if controls > _MAX_CONTROL_RATIO * len(sample):
            raise BinaryFileError(
                name, "file is not text; it looks binary", hint=_BINARY_HINT
            ) from exc
        raise DecodeError(
            name,
            f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})",
            hint=_UTF8_HINT,
        ) from exc
    _check_not_binary(name, text)
    return text


def _non_empty(name: str, text: str, what: str = "file") -> str:
    if not text.strip():
        raise EmptyFileError(name, f"{what} contains only whitespace", hint="Add text to the file.")
    return text


# --- formats -----------------------------------------------------------------------------------
def _load_pdf(name: str, data: bytes) -> str:
    # Imported here so that text-only use of kgviz never pays for pypdf.
    from pypdf import PdfReader

    if b"%PDF-" not in data[:1024]:
        raise DecodeError(name, "not a PDF (no %PDF- header)", hint="Check that the file is a PDF.")
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise DecodeError(name, "PDF is password-protected", hint="Save an unprotected copy.")
        pages = [page.extract_text() or "" for page in reader.pages]
    except IngestError:
        raise
    except Exception as exc:  # pypdf raises many exception types on damaged files
        raise DecodeError(
            name,
            f"PDF could not be read ({type(exc).__name__}: {exc})",
            hint="The PDF may be damaged; re-export or re-download it.",
        ) from exc
    text = "\n\n".join(p.strip() for p in pages if p.strip())
    if not text:
        raise EmptyFileError(
            name,
            f"PDF has no extractable text ({len(pages)} page(s)); it may be scanned images",
            hint="Run OCR on the PDF or paste its text into a .txt file.",
        )
    return text


def _jsonl_lines(name: str, data: bytes) -> Iterable[tuple[int, str | DecodeError]]:
    """(line number, text or the error for that line). Decodes line by line when the whole
    file is not valid UTF-8, so one bad line does not cost the rest of the corpus."""
    try:
        text = _decode(name, data)
    except DecodeError:
        for n, raw in enumerate(data.split(b"\n"), start=1):
            try:
                yield n, raw.decode("utf-8-sig" if n == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                yield n, DecodeError(name, f"line {n}: not valid UTF-8 at column {exc.start + 1}")
        return
    yield from enumerate(text.split("\n"), start=1)


JSONL_LINE_HINT = ('Fix or delete this line: each line must be one JSON object such as '
                   '{"id": "...", "title": "...", "text": "..."}. The file\'s other lines are loaded.')
_LINE_REASON_RE = re.compile(r"^line (\d+): ")


def skipped_line(err: IngestError) -> int | None:
    """The line number when ``err`` reports one skipped line of a .jsonl file whose other lines
    were loaded (the reasons this module writes start with "line N: "); None for a rejected file."""
    m = _LINE_REASON_RE.match(err.reason)
    return int(m.group(1)) if m else None


def _json_error(exc: json.JSONDecodeError) -> str:
    # json's messages sometimes end in " at" ("Unterminated string starting at"), which it
    # completes with ": line 1 column 29"; do not write "at at column 29"
    msg = exc.msg.rstrip().rstrip(":")
    return f"{msg} column {exc.colno}" if msg.endswith(" at") else f"{msg} at column {exc.colno}"


def _parse_jsonl_row(name: str, n: int, line: str) -> Document:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        reason = f"line {n}: invalid JSON ({_json_error(exc)})"
        raise DecodeError(name, reason) from exc
    if not isinstance(row, dict):
        raise DecodeError(name, f"line {n}: expected a JSON object, got {type(row).__name__}")
    text = row.get("text")
    if not isinstance(text, str):
        raise DecodeError(name, f"line {n}: missing or non-string 'text' field")
    if not normalize_text(text):
        raise EmptyFileError(name, f"line {n}: 'text' is empty")
    corpus_id = row.get("id", f"line{n}")
    if not isinstance(corpus_id, (str, int)) or isinstance(corpus_id, bool):
        raise DecodeError(name, f"line {n}: 'id' must be a string or integer")
    title = row.get("title") or str(corpus_id)
    if not isinstance(title, str):
        raise DecodeError(name, f"line {n}: 'title' must be a string")
    return document_from_text(text, title=title.strip(), source=f"{name}#{corpus_id}")


def _load_jsonl(name: str, data: bytes) -> tuple[list[Document], list[IngestError]]:
    docs: list[Document] = []
    errors: list[IngestError] = []
    for n, line in _jsonl_lines(name, data):
        if isinstance(line, DecodeError):
            errors.append(line)
            continue
        if not line.strip():
            continue
        try:
            docs.append(_parse_jsonl_row(name, n, line))
        except IngestError as exc:
            errors.append(exc)
    for err in errors:
        if not err.hint:  # each skipped line says what to do about it
            err.hint = JSONL_LINE_HINT
    if not docs:
        if not errors:
            raise EmptyFileError(name, "file contains only blank lines", hint="Add JSON lines.")
        first = "; ".join(e.reason for e in errors[:3])
        raise DecodeError(
            name,
            f"no usable lines ({len(errors)} bad): {first}",
            hint='Each line must be a JSON object: {"id": "...", "title": "...", "text": "..."}.',
        )
    return docs, errors


# --- public API --------------------------------------------------------------------------------
def load_bytes(
    name: str,
    data: bytes,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    errors: list[IngestError] | None = None,
) -> list[Document]:
    """Documents in ``data``, a file called ``name`` (its extension picks the format; e.g. a
    Streamlit upload). Raises an IngestError subclass when the file as a whole is unusable.
    Bad lines of a .jsonl file are skipped and appended to ``errors`` (logged when None)."""
    ext = _extension(name)
    _check_size(name, len(data), max_bytes)
    title = title_from_stem(PurePath(name).stem)
    if ext == ".jsonl":
        docs, line_errors = _load_jsonl(name, data)
        for err in line_errors:
            if errors is None:
                log.warning("skipped %s", err)
            else:
                errors.append(err)
        return docs
    if ext == ".pdf":
        text = _load_pdf(name, data)
    else:
        text = _non_empty(name, _decode(name, data))
        if ext in (".md", ".markdown"):
            heading, text = split_title(text)
            title = heading or title
            text = _non_empty(name, text, "Markdown text")
    return [document_from_text(text, title=title, source=name)]


def load_file(
    path: str | os.PathLike[str],
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    errors: list[IngestError] | None = None,
) -> list[Document]:
    """Documents in one file. The size is checked before the file is read."""
    name = os.fspath(path)
    p = Path(name)
    try:
        size = p.stat().st_size
    except FileNotFoundError as exc:
        raise IngestError(name, "no such file", hint="Check the path.") from exc
    except OSError as exc:
        raise IngestError(name, f"cannot read the file ({exc.strerror or exc})") from exc
    if p.is_dir():
        raise IngestError(name, "is a folder, not a file", hint="Use load_paths for folders.")
    _extension(name)
    _check_size(name, size, max_bytes)
    try:
        with p.open("rb") as fh:
            data = fh.read(max_bytes + 1)  # the file may have grown since stat()
    except OSError as exc:
        raise IngestError(name, f"cannot read the file ({exc.strerror or exc})") from exc
    _check_size(name, len(data), max_bytes)
    return load_bytes(name, data, max_bytes=max_bytes, errors=errors)


def _walk(folder: Path) -> tuple[list[Path], list[str]]:
    """Supported files under ``folder`` in a stable order, and the unsupported ones. Hidden files
    and folders (.git, .venv, ...) are not content and are skipped."""
    found: list[Path] = []
    ignored: list[str] = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for fname in sorted(files):
            if fname.startswith("."):
                continue
            f = Path(root) / fname
            if f.suffix.lower() in SUPPORTED_EXTENSIONS:
                found.append(f)
            else:
                ignored.append(str(f))
    return found, ignored


class _Collector:
    def __init__(self) -> None:
        self.documents: list[Document] = []
        self.errors: list[IngestError] = []
        self.duplicates: list[str] = []
        self.ignored: list[str] = []
        self._seen: set[str] = set()

    def add(self, docs: Iterable[Document]) -> None:
        for doc in docs:
            if doc.id in self._seen:
                self.duplicates.append(doc.source)
                continue
            self._seen.add(doc.id)
            self.documents.append(doc)

    def result(self) -> LoadResult:
        return LoadResult(
            self.documents, self.errors, len(self.duplicates), self.duplicates, self.ignored
        )


def load_paths(
    paths: Iterable[str | os.PathLike[str]], *, max_bytes: int = DEFAULT_MAX_BYTES
) -> LoadResult:
    """Load files and folders (walked recursively for supported files). Errors are collected per
    file; documents with an id already loaded in this call are counted as duplicates."""
    out = _Collector()
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            files, ignored = _walk(p)
            out.ignored.extend(ignored)
            if not files:
                out.errors.append(
                    UnsupportedFileError(
                        str(p),
                        f"folder has no supported files ({', '.join(SUPPORTED_EXTENSIONS)})",
                    )
                )
        else:
            files = [p]
        for f in files:
            try:
                out.add(load_file(f, max_bytes=max_bytes, errors=out.errors))
            except IngestError as exc:
                out.errors.append(exc)
    return out.result()


def load_uploads(
    uploads: Iterable[tuple[str, bytes]], *, max_bytes: int = DEFAULT_MAX_BYTES
) -> LoadResult:
    """Like load_paths, for (file name, content) pairs such as Streamlit uploads."""
    out = _Collector()
    for name, data in uploads:
        try:
            out.add(load_bytes(name, data, max_bytes=max_bytes, errors=out.errors))
        except IngestError as exc:
            out.errors.append(exc)
    return out.result()
