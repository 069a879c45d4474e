"""Index steps that a killed build cannot leave half made.

The steps that follow the graph's rows (the document layer, KET-RAG's KNN graph with PageRank and
its keyword layer, the vector and full-text indexes) each rewrite one structure with several
statements, and a process can die between any two. A step marks itself in Meta
(``build.writing.<step>``) before its first write and deletes the mark after its last, so the next
build that finds a mark knows the step was interrupted: it redoes the step whole, even where a
signature says the structure is up to date, and the build report says what it repaired.

Kùzu's own multi-statement index creation (CREATE_FTS_INDEX) leaves hidden tables behind when it
is killed; kgviz.graph.search creates the index again under a free name.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

from kgviz.graph.protocol import GraphStore

MARK_PREFIX = "build.writing."

# what each step writes, as the repair is reported ("repaired the keyword layer ...")
STEP_LABELS = {
    "doc_layer": "the document layer (SIMILAR_DOC edges)",
    "ket_core": "the KNN graph, PageRank and core chunks",
    "keywords": "the keyword layer (sub-chunks and keywords)",
    "fts_index": "the full-text index on Chunk",
}


def label(step: str) -> str:
    if step.startswith("vector_index:"):
        return f"the vector index on {step.split(':', 1)[1]}"
    return STEP_LABELS[step]


@contextmanager
def marked(store: GraphStore, step: str) -> Iterator[bool]:
    """Hold the step's mark while the block writes; yields whether an earlier build left the
    mark set (it was killed, or failed, inside this step)."""
    key = MARK_PREFIX + step
    interrupted = store.get_meta(key) is not None
    store.set_meta(key, "1")
    yield interrupted
    store.delete_meta(key)  # only after the block's last write: an exception keeps the mark


def record_repair(report: Any, step: str) -> None:
    """Name the repair in the build report (``repairs``, and ``warnings``, which the Build page
    and the CLI show)."""
    note = f"repaired {label(step)}: an earlier build was interrupted while writing it"
    report.repairs.append(note)
    report.warnings.append(note)
