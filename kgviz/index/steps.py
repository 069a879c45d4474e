"""Index steps that a killed build cannot leave half made.

The steps that follow the graph's rows (the document layer, KET-RAG's KNN graph with PageRank and
its keyword layer, the vector and full-text indexes) each rewrite one structure with several
statements, and a process can die between any two. A step marks itself in Meta
(``build.writing.<step>``) before its first write and deletes the mark after its last, so the next
build that finds a mark knows the step was interrupted: it redoes the step whole, even where a
signature says the structure is up to date, and the build report says what it repaired.

A whole build marks itself too (``BUILD_KEY``, holding the stage it is in) and clears the mark
when it finishes: a build stopped on its page (the app cancels a build whose page the user
leaves), cancelled or killed leaves it set, so every page and command that opens the workspace
can say the graph is unfinished and which stage it stopped in, rather than let a search fail on an
index the build never reached. The next build finishes it and says so in its warnings.

Kùzu's own multi-statement index creation (CREATE_FTS_INDEX) leaves hidden tables behind when it
is killed; kgviz.graph.search creates the index again under a free name.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

from kgviz.graph.protocol import GraphStore

MARK_PREFIX = "build.writing."
BUILD_KEY = "build.unfinished"  # the stage a build is in; deleted when it finishes

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


def mark_build_stage(store: GraphStore, stage: str) -> None:
    """The running build has reached ``stage`` (and has not finished)."""
    store.set_meta(BUILD_KEY, stage)


def clear_build_mark(store: GraphStore) -> None:
    """The build finished: every stage ran."""
    store.delete_meta(BUILD_KEY)


def unfinished_build(store: GraphStore) -> str | None:
    """The stage an unfinished build of this workspace stopped in (or is in, while one runs), or
    None when the last build finished."""
    return store.get_meta(BUILD_KEY)


def unfinished_notice(stage: str) -> str:
    """What a page or command says about a workspace whose last build did not finish."""
    return (f"The last build of this workspace stopped in its {stage} stage, before finishing (it failed, was "
            "cancelled, its page was left while it ran, or its process ended). What it wrote is kept, but "
            "searches that need a later stage fail or miss rows until a build finishes it: build again "
            "(the Build page, the Home page's sample button, or kgviz build) — finished work is reused.")
