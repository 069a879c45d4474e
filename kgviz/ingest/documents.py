"""Documents and their identity.

A document's id is "doc:" + the first 16 hex digits of sha256 of its normalised text
(kgviz.text.normalize_text). Markdown markup is stripped and a Markdown document's opening
heading becomes its title before that (kgviz.ingest.markdown.split_title), so the same text
arriving as .md, .txt or a .jsonl record is one document with one id, whatever its format.

``source`` says where the text came from without naming the machine: a path relative to the
build's root folder, an uploaded file's name, or "<file>#<record id>" for a .jsonl record.
"""
from __future__ import annotations

import hashlib
import re
from typing import NamedTuple

from kgviz.errors import EmptyFileError
from kgviz.text import normalize_text
from kgviz.types import Document


class Loaded(NamedTuple):
    """A loaded document and whether its title is a real one (a heading, PDF metadata, a .jsonl
    title) rather than the last resort (a file name or record id). When the same text arrives
    twice, a real title replaces a last-resort one."""

    doc: Document
    titled: bool


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
