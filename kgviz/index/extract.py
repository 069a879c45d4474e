"""The extraction stage: run "extract_triples" over chunks with a thread pool, record an
Extraction row per chunk, and reuse the rows an interrupted build already paid for.

Resume rule: a chunk counts as extracted only when its Extraction row exists. Rows are written in
batches as chunks finish (the row is the only thing this stage writes, so there is never a partial
chunk to clean up). On a re-run the stored row is turned back into triples without calling the
model: an LLM row's raw reply is parsed again (the parser is deterministic) and an offline row is
re-run through the (deterministic) pattern extractor. Rows with status "failed" (and LLM rows
with an empty reply, which kgviz before issue 15 stored as "ok") are retried when
BuildParams.retry_failed is set.

Per-chunk provider failures (rate limits after the SDK's retries, timeouts, 5xx) are recorded as
failed rows and the build goes on; a missing or rejected API key stops the build at once.
"""
from __future__ import annotations

import threading
import time
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Callable, Sequence

from kgviz.errors import (
    AuthenticationError,
    BuildCancelled,
    ConfigError,
    LLMOutputError,
    MissingKeyError,
    ProviderError,
)
from kgviz.facts.parse import parse_triples
from kgviz.facts.triples import ExtractionOutput
from kgviz.graph import writes
from kgviz.graph.store import GraphStore
from kgviz.offline.extract import HEURISTIC_NAME, extract_offline
from kgviz.offline.lexicon import split_predicate
from kgviz.index.params import BuildParams
from kgviz.prompts.extraction import EXTRACT_TRIPLES_PROMPT_NAME, EXTRACT_TRIPLES_TASK_NAME
from kgviz.reasoning import OFFLINE_MODE, Reasoner
from kgviz.types import Chunk, Usage

_FATAL = (AuthenticationError, MissingKeyError, ConfigError)
RAW_EXCERPT_CHARS = 300
MAX_BUFFER = 1000  # ours: Extraction rows held before a flush regardless of time


@dataclass
class ExtractResult:
    outputs: dict[str, ExtractionOutput] = field(default_factory=dict)
    failures: list[tuple[str, str, str]] = field(default_factory=list)
    n_malformed: int = 0
    usage: Usage = field(default_factory=Usage)
    extracted: int = 0
    reused: int = 0


@dataclass
class _Run:
    chunk: Chunk
    output: ExtractionOutput | None
    error: str
    usage: Usage
    raw: str


def _row(chunk_id: str, mode: str, run: _Run, status: str) -> dict[str, object]:
    out = run.output
    warnings = "; ".join(out.warnings[:5]) if out else ""
    return {
        "chunk_id": chunk_id,
        "mode": mode,
        "prompt_name": HEURISTIC_NAME if mode == OFFLINE_MODE else EXTRACT_TRIPLES_PROMPT_NAME,
        "raw": run.raw,
        "status": status,
        "n_triples": len(out.triples) if out else 0,
        "n_malformed": out.n_malformed if out else 0,
        "error": run.error or warnings,
        "input_tokens": run.usage.input_tokens,
        "output_tokens": run.usage.output_tokens,
    }


def stored_extractions(store: GraphStore, chunk_ids: Sequence[str]) -> dict[str, dict[str, object]]:
    return writes.extractions(store, chunk_ids)


def _failed_row(row: dict[str, object]) -> bool:
    """A failed row, or an LLM row whose stored reply is empty (kgviz before issue 15 recorded an
    empty reply as "ok, 0 triples"; it is a failure and is asked again)."""
    if row.get("status") == "failed":
        return True
    return row.get("mode") != OFFLINE_MODE and not str(row.get("raw") or "").strip()


def rederive(chunk: Chunk, row: dict[str, object], max_triples: int, title: str = "") -> ExtractionOutput:
    """Triples of an already-extracted chunk, without calling any model."""
    if row.get("mode") == OFFLINE_MODE:
        return extract_offline(chunk.text, max_triples, title)
    return parse_triples(str(row.get("raw") or ""), max_triples, split_predicate=split_predicate)


def run_extraction(
    store: GraphStore,
    reasoner: Reasoner,
    chunks: Sequence[Chunk],
    params: BuildParams,
    progress: Callable[[int, int, str, Usage], None],
    cancel: threading.Event | None,
    titles: dict[str, str] | None = None,
) -> ExtractResult:
    """``titles`` ({doc id: title}) reach the offline extractor, whose sentence facts hang a
    passage on its title; an LLM's prompt does not use them."""
    res = ExtractResult()
    titles = titles or {}
    stored = stored_extractions(store, [c.id for c in chunks])
    retry = [cid for cid, r in stored.items() if params.retry_failed and _failed_row(r)]
    writes.delete_extractions(store, retry)
    todo: deque[Chunk] = deque()
    for c in chunks:
        row = stored.get(c.id)
        if row is None or c.id in retry:
            todo.append(c)
            continue
        res.reused += 1
        if _failed_row(row):
            res.failures.append((c.id, str(row.get("error") or "failed"), str(row.get("raw") or "")[:RAW_EXCERPT_CHARS]))
            continue
        out = rederive(c, row, params.max_triples_per_chunk, titles.get(c.doc_id, ""))
        res.outputs[c.id] = out
        res.n_malformed += out.n_malformed
    total = len(chunks)
    progress(res.reused, total, f"{res.reused} chunks already extracted", res.usage)
    if todo:
        _run_pool(store, reasoner, todo, params, res, total, progress, cancel, titles)
    return res


def _extract_one(reasoner: Reasoner, chunk: Chunk, max_triples: int, title: str = "") -> _Run:
    try:
        result = reasoner.run(EXTRACT_TRIPLES_TASK_NAME, text=chunk.text, max_triples=max_triples, title=title)
    except _FATAL:
        raise
    except LLMOutputError as exc:
        call = getattr(exc, "call", None)
        raw = call.raw_output if call is not None else ""
        return _Run(chunk, None, exc.user_message(), call.usage if call is not None else Usage(), raw)
    except ProviderError as exc:
        return _Run(chunk, None, exc.user_message(), Usage(), "")
    out: ExtractionOutput = result.value
    raw = out.raw if reasoner.is_offline else result.call.raw_output
    return _Run(chunk, out, "", result.call.usage, raw)


def _run_pool(
    store: GraphStore,
    reasoner: Reasoner,
    todo: deque[Chunk],
    params: BuildParams,
    res: ExtractResult,
    total: int,
    progress: Callable[[int, int, str, Usage], None],
    cancel: threading.Event | None,
    titles: dict[str, str],
) -> None:
    buffer: list[dict[str, object]] = []
    done = res.reused
    stop = False
    fatal: BaseException | None = None
    window = max(1, params.workers) * 2
    in_flight: dict[Future[_Run], Chunk] = {}
    last_flush = time.monotonic()

    def flush() -> None:
        if buffer:
            store.bulk_load_nodes("Extraction", list(buffer))
            buffer.clear()

    with ThreadPoolExecutor(max_workers=params.workers, thread_name_prefix="kgviz-extract") as pool:
        try:
            while todo or in_flight:
                while not stop and todo and len(in_flight) < window:
                    c = todo.popleft()
                    in_flight[pool.submit(_extract_one, reasoner, c, params.max_triples_per_chunk,
                                            titles.get(c.doc_id, ""))] = c
                if not in_flight:
                    break
                finished, _ = wait(list(in_flight), return_when=FIRST_COMPLETED)
                for fut in finished:
                    chunk = in_flight.pop(fut)
                    try:
                        run = fut.result()
                    except _FATAL as exc:
                        fatal, stop = fatal or exc, True
                        continue
                    done += 1
                    _record(run, reasoner.mode, res, buffer)
                    progress(done, total, f"{chunk.id}: {len(run.output.triples) if run.output else 0} triples", res.usage)
                if cancel is not None and cancel.is_set():
                    stop = True  # finish what is in flight, keep it, submit nothing new
                # cheap (offline) chunks finish in microseconds: flush by size *and* time, so a
                # kill loses little work and fast builds are not bound by small writes
                due = time.monotonic() - last_flush >= params.flush_interval_s or len(buffer) >= MAX_BUFFER
                if stop or (len(buffer) >= params.batch_size and due):
                    flush()
                    last_flush = time.monotonic()
        finally:
            flush()  # what finished is kept, whatever stopped the loop
    if fatal is not None:
        raise fatal
    if stop and todo:
        raise BuildCancelled(
            f"build cancelled after {done} of {total} chunks were extracted",
            hint="run the build again: extracted chunks are kept and skipped",
        )


def _record(run: _Run, mode: str, res: ExtractResult, buffer: list[dict[str, object]]) -> None:
    res.extracted += 1
    res.usage = res.usage + run.usage
    if run.output is None:
        res.failures.append((run.chunk.id, run.error, run.raw[:RAW_EXCERPT_CHARS]))
        buffer.append(_row(run.chunk.id, mode, run, "failed"))
        return
    status = run.output.status
    res.n_malformed += run.output.n_malformed
    if status == "failed":
        reason = run.output.warnings[-1] if run.output.warnings else "no triples in the reply"
        res.failures.append((run.chunk.id, reason, run.raw[:RAW_EXCERPT_CHARS]))
    else:
        res.outputs[run.chunk.id] = run.output
    buffer.append(_row(run.chunk.id, mode, run, status))
