"""One file's bytes -> its documents: checks shared by every format, then .txt, .md, .pdf and
.jsonl. Every rejection is a typed IngestError naming the file and the reason; a bad .jsonl line
is an error for that line only ("line N: ..."), and the file's other lines still load.
"""
from __future__ import annotations

import codecs
import io
import re
from pathlib import PurePath
from typing import Iterable

from kgviz.errors import (
    BinaryFileError,
    ConfigError,
    DecodeError,
    EmptyFileError,
    FileTooLargeError,
    IngestError,
    LimitExceededError,
    UnsupportedFileError,
)
from kgviz.ingest.documents import Loaded, document_from_text, title_from_stem
from kgviz.ingest.jsonl import BadLine, id_text, iter_lines, parse_object
from kgviz.ingest.limits import LoadLimits, check_document
from kgviz.ingest.markdown import split_title
from kgviz.text import normalize_text

SUPPORTED_EXTENSIONS: tuple[str, ...] = (".jsonl", ".markdown", ".md", ".pdf", ".txt")

# More than this share of control characters means the "text" is really binary (ours).
_MAX_CONTROL_RATIO = 0.01
# Unicode category Cc minus the whitespace controls (tab, newlines, vertical tab, form feed).
_CONTROL_CHARS_RE = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x9f]")
_UTF8_HINT = "Save the file as UTF-8 (most editors offer 'Save with encoding') and load it again."
_BINARY_HINT = "kgviz reads plain text (.txt, .md), PDF and JSONL; export the file as text first."
# PDF title metadata that names the producing program or a template, not the document.
_JUNK_PDF_TITLE_RE = re.compile(r"^(untitled|microsoft (word|powerpoint)\b|document\d*$|.*\.(docx?|tex|pdf)$)",
                                re.IGNORECASE)
_MAX_TITLE_CHARS = 200


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
    """Sizes in the units KGVIZ_MAX_FILE_MB and the app's uploader use (1 MB = 1,000,000 bytes),
    exact when rounding would hide the difference from the limit."""
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f} MB ({n:,} bytes)"
    if n >= 1000:
        return f"{n / 1000:.1f} KB"
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



def _load_pdf(name: str, data: bytes) -> tuple[str, str]:
    """(text, title from the PDF's metadata or "")."""
    # Imported here so that text-only use of kgviz never pays for pypdf.
    from pypdf import PdfReader

    if b"%PDF-" not in data[:1024]:
        raise DecodeError(name, "not a PDF (no %PDF- header)", hint="Check that the file is a PDF.")
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise DecodeError(name, "PDF is password-protected", hint="Save an unprotected copy.")
        pages = [page.extract_text() or "" for page in reader.pages]
        meta = reader.metadata
        meta_title = str(meta.title or "") if meta is not None else ""
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
    return text, meta_title


def _pdf_title(meta_title: str, text: str) -> str | None:
    """The PDF's title metadata unless it names a program or template, else its first line
    when it reads like a title: short, and not a sentence (titles do not end with a period)."""
    meta_title = " ".join(meta_title.split())
    if meta_title and not _JUNK_PDF_TITLE_RE.match(meta_title) and len(meta_title) <= _MAX_TITLE_CHARS:
        return meta_title
    first = normalize_text(text).split("\n", 1)[0].strip()
    return first if 0 < len(first) <= 120 and not first.endswith((".", ",", ";", ":")) else None


# --- .jsonl corpus -----------------------------------------------------------------------------
def _jsonl_lines(name: str, data: bytes) -> Iterable[tuple[int, str | None, str]]:
    """(line number, text or None, reason). Decodes line by line when the whole file is not
    valid UTF-8, so one bad line does not cost the rest of the corpus."""
    try:
        text = _decode(name, data)
    except DecodeError:
        yield from iter_lines(data)
        return
    for n, line in enumerate(text.split("\n"), start=1):
        yield n, line, ""


def _jsonl_record(name: str, source: str, n: int, line: str, limits: LoadLimits) -> Loaded:
    row = parse_object(line, limits)
    if isinstance(row, BadLine):
        raise (LimitExceededError if row.limit else DecodeError)(name, f"line {n}: {row.reason}")
    text = row.get("text")
    if type(text) is not str:  # a JsonInt is digits, not text
        raise DecodeError(name, f"line {n}: missing or non-string 'text' field")
    if not normalize_text(text):
        raise EmptyFileError(name, f"line {n}: 'text' is empty")
    try:
        corpus_id = id_text(row.get("id", f"line{n}"), limits)
    except ValueError as exc:
        raise LimitExceededError(name, f"line {n}: {exc}") from exc
    if not corpus_id:
        raise DecodeError(name, f"line {n}: 'id' must be a non-empty string or integer")
    title = row.get("title")
    if title is not None and type(title) is not str:
        raise DecodeError(name, f"line {n}: 'title' must be a string")
    title = " ".join((title or "").split())[:_MAX_TITLE_CHARS]
    doc = document_from_text(text, title=title or corpus_id, source=f"{source}#{corpus_id}")
    check_document(name, doc.text, limits, where=f"line {n}: ")
    return Loaded(doc, bool(title))


JSONL_LINE_HINT = ('Fix or delete this line: each line must be one JSON object such as '
                   '{"id": "...", "title": "...", "text": "..."}. The file\'s other lines are loaded.')


def load_jsonl(name: str, source: str, data: bytes, limits: LoadLimits) -> tuple[list[Loaded], list[IngestError]]:
    loaded: list[Loaded] = []
    errors: list[IngestError] = []
    for n, line, reason in _jsonl_lines(name, data):
        if line is None:
            errors.append(DecodeError(name, f"line {n}: {reason}"))
            continue
        if not line.strip():
            continue
        try:
            loaded.append(_jsonl_record(name, source, n, line, limits))
        except IngestError as exc:
            errors.append(exc)
    for err in errors:
        if not err.hint:  # each skipped line says what to do about it
            err.hint = JSONL_LINE_HINT
    if not loaded:
        if not errors:
            raise EmptyFileError(name, "file contains only blank lines", hint="Add JSON lines.")
        first = "; ".join(e.reason for e in errors[:3])
        raise DecodeError(
            name,
            f"no usable lines ({len(errors)} bad): {first}",
            hint='Each line must be a JSON object: {"id": "...", "title": "...", "text": "..."}.',
        )
    return loaded, errors


# --- one file ----------------------------------------------------------------------------------
def load_data(
    name: str, source: str, data: bytes, *, max_bytes: int, limits: LoadLimits
) -> tuple[list[Loaded], list[IngestError]]:
    """Documents in ``data``, a file shown as ``name`` in errors and stored as ``source``, and the
    skipped .jsonl lines. Raises an IngestError subclass when the file as a whole is unusable."""
    ext = _extension(name)
    _check_size(name, len(data), max_bytes)
    if ext == ".jsonl":
        return load_jsonl(name, source, data, limits)
    title: str | None
    if ext == ".pdf":
        text, meta_title = _load_pdf(name, data)
        title = _pdf_title(meta_title, text)
    else:
        text = _non_empty(name, _decode(name, data))
        title = None
        if ext in (".md", ".markdown"):
            title, text = split_title(text)
            text = _non_empty(name, text, "Markdown text" + (" below the title heading" if title else ""))
    title = title[:_MAX_TITLE_CHARS] if title else None
    doc = document_from_text(text, title=title or title_from_stem(PurePath(source).stem), source=source)
    check_document(name, doc.text, limits)
    return [Loaded(doc, bool(title))], []
