"""Which files a build reads, and the name each document's source is stored under.

Named files are always read. A folder is walked for corpus files only: hidden entries (.git,
.venv) are passed over silently; files of other types, project documentation (README, LICENSE,
...) and .jsonl files whose records have no "text" (questions, entity lists) are skipped and
reported with the reason, since a folder that holds a corpus usually holds its paperwork too.
Name a skipped file explicitly to load it anyway.

A walk opens regular files only: a FIFO (opening one waits for a writer, so a build hung on a
pipe named x.jsonl), a device or a socket is reported and skipped, and so is a symbolic link
that leads outside the folder named (a link to a regular file inside it is read as that file).

Sources are stored relative to the build's root (the deepest folder holding everything named),
so a database, its traces and exported case files never carry the building machine's paths.
"""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Iterable

from kgviz.ingest.formats import SUPPORTED_EXTENSIONS
from kgviz.ingest.jsonl import parse_object
from kgviz.ingest.limits import LoadLimits

# Stems of the files projects keep beside their content (compared case-insensitively).
DOCUMENTATION_STEMS = frozenset(
    "readme changelog changes history news license licence copying notice authors contributors "
    "contributing code_of_conduct security install todo citation".split()
)


@dataclass(frozen=True)
class IgnoredFile:
    """A file a folder walk did not load, and why (the path is relative to the build's root)."""

    path: str
    reason: str
    loads_when_named: bool = True  # False for types kgviz cannot read at all


def build_root(paths: Iterable[str | os.PathLike[str]]) -> Path:
    """The deepest folder holding every named path (a named file counts as its folder)."""
    dirs = []
    for raw in paths:
        p = Path(os.path.abspath(raw))
        dirs.append(str(p if p.is_dir() else p.parent))
    return Path(os.path.commonpath(dirs)) if dirs else Path.cwd()


def source_name(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` with forward slashes (the file name if it is not inside)."""
    try:
        return Path(os.path.abspath(path)).relative_to(root).as_posix()
    except ValueError:
        return PurePath(path).name


def _first_record_keys(path: Path, limits: LoadLimits) -> list[str] | None:
    """The keys of the first non-blank line's JSON object; None when that line is not one (the
    loader then reports the line properly)."""
    try:
        with path.open("rb") as fh:
            while raw := fh.readline(limits.max_json_line_chars + 1):  # bounded: a line may be huge
                if raw.strip():
                    row = parse_object(raw.decode("utf-8-sig", "replace").rstrip("\r\n"), limits)
                    return None if not isinstance(row, dict) else sorted(row)
    except OSError:
        return None
    return None


def file_kind(mode: int) -> str:
    """What a file that is not a regular file is, for messages."""
    for test, name in ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return "not a regular file"


def _inside(path: str, folder: str) -> bool:
    return os.path.commonpath([path, folder]) == folder


def not_regular(path: Path, folder: Path) -> str | None:
    """Why a walk of ``folder`` must not open ``path`` (None: a regular file it may read).
    Decided from the file's metadata alone: opening a FIFO would block."""
    try:
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            if not _inside(os.path.realpath(path), os.path.realpath(folder)):
                return "a symbolic link leading outside the folder"
            info = os.stat(path)
    except OSError as exc:  # e.g. a link to nothing
        return f"cannot be read ({exc.strerror or exc})"
    if not stat.S_ISREG(info.st_mode):
        return f"{file_kind(info.st_mode)}, not a regular file"
    return None


def skip_reason(path: Path, limits: LoadLimits) -> str | None:
    """Why a folder walk should not load ``path`` (None: it is corpus)."""
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_EXTENSIONS:
        return f"not a document type ({suffix or 'no extension'})"
    if path.stem.lower() in DOCUMENTATION_STEMS:
        return "project documentation, not corpus"
    if suffix == ".jsonl":
        keys = _first_record_keys(path, limits)
        if keys is not None and "text" not in keys:
            what = "a questions file" if "question" in keys else "not a corpus file"
            return f"{what}: its records have no 'text' (keys: {', '.join(keys[:6])})"
    return None


def walk(folder: Path, root: Path, limits: LoadLimits) -> tuple[list[Path], list[IgnoredFile]]:
    """Corpus files under ``folder`` in a stable order, and the files skipped with reasons.
    Single documents come before .jsonl collections, so when a collection repeats a document,
    the document keeps its own file as its source."""
    found: list[Path] = []
    ignored: list[IgnoredFile] = []
    for dirpath, dirs, files in os.walk(folder):  # links to folders are listed in dirs, never followed
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for d in dirs:
            linked = Path(dirpath) / d
            if os.path.islink(linked) and not_regular(linked, folder) is not None:
                ignored.append(IgnoredFile(source_name(linked, root), "a symbolic link leading outside the folder"))
        for fname in sorted(files):
            if fname.startswith("."):
                continue
            f = Path(dirpath) / fname
            odd = not_regular(f, folder)
            if odd is not None:
                # a link is read when named; a pipe, device or socket never is
                named_ok = odd.startswith("a symbolic link")
                ignored.append(IgnoredFile(source_name(f, root), odd, loads_when_named=named_ok))
                continue
            reason = skip_reason(f, limits)
            if reason is None:
                found.append(f)
            else:
                readable = f.suffix.lower() in SUPPORTED_EXTENSIONS
                ignored.append(IgnoredFile(source_name(f, root), reason, readable))
    found.sort(key=lambda f: f.suffix.lower() == ".jsonl")  # stable: keeps the walk order otherwise
    return found, ignored
