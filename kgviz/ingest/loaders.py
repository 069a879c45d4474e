"""Load files into Documents: .txt, .md/.markdown, .pdf and .jsonl corpora.

Every rejection is a typed IngestError naming the file (or the .jsonl line) and the reason.
``load_paths`` and ``load_uploads`` collect errors per file, so one bad file never stops the
others, and report what they left out: files a folder walk skipped (kgviz.ingest.collect),
exact duplicates (same normalised text, so same id, whatever the format: the second copy is not
loaded, and both sources are reported) and near-duplicates (kgviz.ingest.dedup: reported, and
left out only when ``skip_near_duplicates`` is set; the default keeps them, since a near copy can
carry a correction the first lacks).
"""
from __future__ import annotations

import dataclasses
import logging
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any, Iterable

from kgviz.errors import IngestError, UnsupportedFileError
from kgviz.ingest.collect import IgnoredFile, build_root, file_kind, source_name, walk
from kgviz.ingest.dedup import NEAR_DUPLICATE_THRESHOLD, find_near_duplicates
from kgviz.ingest.documents import Loaded, document_from_text, title_from_stem
from kgviz.ingest.formats import JSONL_LINE_HINT, SUPPORTED_EXTENSIONS, _check_size, _extension, load_data
from kgviz.ingest.limits import DEFAULT_LIMITS, LoadLimits
from kgviz.types import Document

log = logging.getLogger(__name__)

DEFAULT_MAX_BYTES = 20_000_000  # same as Settings.max_file_bytes (megabytes of 1,000,000 bytes)

__all__ = [
    "DEFAULT_MAX_BYTES", "JSONL_LINE_HINT", "SUPPORTED_EXTENSIONS", "Duplicate", "IgnoredFile", "LoadResult",
    "document_from_text", "load_bytes", "load_file", "load_paths", "load_uploads", "skipped_line",
    "title_from_stem",
]


@dataclass(frozen=True)
class Duplicate:
    """A document left out (or, for a kept near-duplicate, flagged) because it repeats another."""

    source: str  # the copy
    kept: str  # the source of the document it repeats
    doc_id: str  # id of the kept document
    similarity: float = 1.0  # 1.0: same normalised text; below: shingle overlap (near-duplicate)
    skipped: bool = True  # False: a near-duplicate that was reported and loaded anyway


@dataclass(frozen=True)
class LoadResult:
    documents: list[Document]
    errors: list[IngestError]
    duplicates: list[Duplicate] = field(default_factory=list)  # exact copies, not loaded
    near_duplicates: list[Duplicate] = field(default_factory=list)  # see Duplicate.skipped
    ignored: list[IgnoredFile] = field(default_factory=list)  # files a folder walk skipped

    @property
    def skipped_duplicates(self) -> int:
        """Documents not loaded because they repeat a loaded one."""
        return len(self.duplicates) + sum(d.skipped for d in self.near_duplicates)

    @property
    def duplicate_sources(self) -> list[str]:
        return [d.source for d in self.duplicates]

    @property
    def ignored_files(self) -> list[str]:
        return [i.path for i in self.ignored]

    def to_dict(self) -> dict[str, Any]:
        """What was loaded and left out, for the CLI's JSON (documents by id, title, source)."""
        return {
            "documents": [{"id": d.id, "title": d.title, "source": d.source} for d in self.documents],
            "errors": [{"path": e.path, "reason": e.reason, "hint": e.hint} for e in self.errors],
            "duplicates": [dataclasses.asdict(d) for d in self.duplicates],
            "near_duplicates": [dataclasses.asdict(d) for d in self.near_duplicates],
            "ignored": [dataclasses.asdict(i) for i in self.ignored],
        }


_LINE_REASON_RE = re.compile(r"^line (\d+): ")


def skipped_line(err: IngestError) -> int | None:
    """The line number when ``err`` reports one skipped line of a .jsonl file whose other lines
    were loaded (the reasons this module writes start with "line N: "); None for a rejected file."""
    m = _LINE_REASON_RE.match(err.reason)
    return int(m.group(1)) if m else None


def _sink(errors: list[IngestError] | None, found: list[IngestError]) -> None:
    for err in found:
        if errors is None:
            log.warning("skipped %s", err)
        else:
            errors.append(err)


def load_bytes(
    name: str,
    data: bytes,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    errors: list[IngestError] | None = None,
    limits: LoadLimits = DEFAULT_LIMITS,
) -> list[Document]:
    """Documents in ``data``, a file called ``name`` (its extension picks the format; e.g. a
    Streamlit upload; stored as the source). Raises an IngestError subclass when the file as a
    whole is unusable. Bad lines of a .jsonl file are skipped and appended to ``errors`` (logged
    when None)."""
    loaded, bad = load_data(name, name, data, max_bytes=max_bytes, limits=limits)
    _sink(errors, bad)
    return [x.doc for x in loaded]


def _read(path: Path, name: str, max_bytes: int) -> bytes:
    """The file's bytes; the size is checked before reading."""
    try:
        info = path.stat()
    except FileNotFoundError as exc:
        raise IngestError(name, "no such file", hint="Check the path.") from exc
    except OSError as exc:
        raise IngestError(name, f"cannot read the file ({exc.strerror or exc})") from exc
    if stat.S_ISDIR(info.st_mode):
        raise IngestError(name, "is a folder, not a file", hint="Use load_paths for folders.")
    if not stat.S_ISREG(info.st_mode):  # never opened: a FIFO would wait for a writer
        raise UnsupportedFileError(name, f"is {file_kind(info.st_mode)}, not a regular file",
                                   hint="Give the path of a file saved on disk.")
    size = info.st_size
    _extension(name)
    _check_size(name, size, max_bytes)
    try:
        with path.open("rb") as fh:
            data = fh.read(max_bytes + 1)  # the file may have grown since stat()
    except OSError as exc:
        raise IngestError(name, f"cannot read the file ({exc.strerror or exc})") from exc
    _check_size(name, len(data), max_bytes)
    return data


def _load_path(path: Path, source: str, max_bytes: int, limits: LoadLimits) -> tuple[list[Loaded], list[IngestError]]:
    name = os.fspath(path)
    return load_data(name, source, _read(path, name, max_bytes), max_bytes=max_bytes, limits=limits)


def load_file(
    path: str | os.PathLike[str],
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    errors: list[IngestError] | None = None,
    limits: LoadLimits = DEFAULT_LIMITS,
) -> list[Document]:
    """Documents in one file, with the file's name as their source. Errors name the path."""
    p = Path(os.fspath(path))
    loaded, bad = _load_path(p, p.name, max_bytes, limits)
    _sink(errors, bad)
    return [x.doc for x in loaded]


class _Collector:
    def __init__(self, threshold: float, skip_near: bool) -> None:
        self.items: list[Loaded] = []
        self.errors: list[IngestError] = []
        self.duplicates: list[Duplicate] = []
        self.ignored: list[IgnoredFile] = []
        self._at: dict[str, int] = {}
        self._threshold, self._skip_near = threshold, skip_near

    def add(self, loaded: Iterable[Loaded]) -> None:
        for item in loaded:
            i = self._at.get(item.doc.id)
            if i is None:
                self._at[item.doc.id] = len(self.items)
                self.items.append(item)
                continue
            kept = self.items[i]
            self.duplicates.append(Duplicate(item.doc.source, kept.doc.source, kept.doc.id))
            if item.titled and not kept.titled:  # a heading or jsonl title beats a file name
                self.items[i] = Loaded(dataclasses.replace(kept.doc, title=item.doc.title), True)

    def guard(self, label: str, fn: Any, *args: Any) -> None:
        """Run one file's load; any failure becomes that file's error (the batch goes on)."""
        try:
            loaded, bad = fn(*args)
        except IngestError as exc:
            self.errors.append(exc)
            return
        except (ValueError, RecursionError, MemoryError, OSError) as exc:  # a decoder bug must not cost the batch
            self.errors.append(IngestError(label, f"could not be loaded ({type(exc).__name__}: {str(exc)[:200]})"))
            return
        self.errors.extend(bad)
        self.add(loaded)

    def result(self) -> LoadResult:
        docs = [x.doc for x in self.items]
        near = find_near_duplicates([d.text for d in docs], self._threshold, drop=self._skip_near)
        reported = [Duplicate(docs[m.index].source, docs[m.match].source, docs[m.match].id,
                              round(m.similarity, 4), self._skip_near) for m in near]
        if self._skip_near:
            dropped = {m.index for m in near}
            docs = [d for k, d in enumerate(docs) if k not in dropped]
        return LoadResult(docs, self.errors, self.duplicates, reported, self.ignored)


def load_paths(
    paths: Iterable[str | os.PathLike[str]],
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    limits: LoadLimits = DEFAULT_LIMITS,
    skip_near_duplicates: bool = False,
    near_duplicate_threshold: float = NEAR_DUPLICATE_THRESHOLD,
) -> LoadResult:
    """Load files and folders (walked recursively for corpus files, see kgviz.ingest.collect).
    Sources are stored relative to the deepest folder holding every named path; errors name
    the paths as given."""
    paths = list(paths)
    root = build_root(paths)
    out = _Collector(near_duplicate_threshold, skip_near_duplicates)
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            files, ignored = walk(p, root, limits)
            out.ignored.extend(ignored)
            if not files:
                out.errors.append(UnsupportedFileError(
                    str(p), f"folder has no corpus files ({', '.join(SUPPORTED_EXTENSIONS)})"
                    + (f"; {len(ignored)} other file(s) skipped" if ignored else ""),
                ))
        else:
            files = [p]
        for f in files:
            out.guard(os.fspath(f), _load_path, f, source_name(f, root), max_bytes, limits)
    return out.result()


def load_uploads(
    uploads: Iterable[tuple[str, bytes]],
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    limits: LoadLimits = DEFAULT_LIMITS,
    skip_near_duplicates: bool = False,
    near_duplicate_threshold: float = NEAR_DUPLICATE_THRESHOLD,
) -> LoadResult:
    """Like load_paths, for (file name, content) pairs such as Streamlit uploads; the source is
    the file's name (a browser sends no folder)."""
    out = _Collector(near_duplicate_threshold, skip_near_duplicates)
    for name, data in uploads:
        base = PurePath(name).name or name
        out.guard(name, lambda: load_data(name, base, data, max_bytes=max_bytes, limits=limits))
    return out.result()
