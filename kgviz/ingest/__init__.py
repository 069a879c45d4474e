"""Ingest: load files into Documents, split them into chunks and KET-RAG sub-chunks."""
from kgviz.ingest.chunking import (
    chunk_document,
    chunk_documents,
    chunk_spans,
    split_subchunks,
    subchunk_spans,
    total_tokens,
)
from kgviz.ingest.dedup import NEAR_DUPLICATE_THRESHOLD
from kgviz.ingest.limits import DEFAULT_LIMITS, LoadLimits
from kgviz.ingest.loaders import (
    DEFAULT_MAX_BYTES,
    SUPPORTED_EXTENSIONS,
    Duplicate,
    IgnoredFile,
    LoadResult,
    document_from_text,
    load_bytes,
    load_file,
    load_paths,
    load_uploads,
)
from kgviz.ingest.markdown import strip_markdown

__all__ = [
    "DEFAULT_LIMITS",
    "DEFAULT_MAX_BYTES",
    "NEAR_DUPLICATE_THRESHOLD",
    "Duplicate",
    "IgnoredFile",
    "LoadLimits",
    "SUPPORTED_EXTENSIONS",
    "LoadResult",
    "chunk_document",
    "chunk_documents",
    "chunk_spans",
    "document_from_text",
    "load_bytes",
    "load_file",
    "load_paths",
    "load_uploads",
    "split_subchunks",
    "strip_markdown",
    "subchunk_spans",
    "total_tokens",
]
