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

Grounding (issue 23): every fact read from a model's reply is checked against its chunk
(``kgviz.index.ground``); a fact with a name the chunk does not hold is left out and counted, per
chunk, as ungrounded (a copy of the prompt's examples, or not in the text). The offline extractor
reads its names from the text: its facts are checked the same way but kept whatever the check
says (the offline graph is the reference the golden traces pin; the check finds all 74,580 offline
facts of the sample, HotpotQA, 2Wiki and MuSiQue corpora), and a miss is named in the build's
warnings.
"""
from __future__ import annotations

import threading
import time
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from typing import Mapping, Sequence

from kgviz.errors import BuildCancelled
from kgviz.facts.parse import parse_triples
from kgviz.facts.triples import ExtractionOutput
from kgviz.index.ask import FATAL, ask
from kgviz.index.ground import PROMPT_EXAMPLE
from kgviz.index.offline_batch import checked, extract_offline_batch
from kgviz.index.processes import ProcessPool, process_count
from kgviz.graph import writes
from kgviz.graph.rows import ExtractionRow
from kgviz.graph.store import GraphStore
from kgviz.offline.extract import HEURISTIC_NAME, extract_offline
from kgviz.offline.lexicon import split_predicate
from kgviz.index.params import BuildParams, BuildReport, ExtractProgress
from kgviz.prompts.extraction import EXTRACT_TRIPLES_PROMPT_NAME, EXTRACT_TRIPLES_TASK_NAME
from kgviz.reasoning import OFFLINE_MODE, Reasoner
from kgviz.types import Chunk, Usage

RAW_EXCERPT_CHARS = 300
MAX_BUFFER = 1000  # ours: Extraction rows held before a flush regardless of time
MAX_LISTED_REJECTIONS = 200  # ours: rejected facts named in the report; the counts cover all
# The offline extractor is pure Python, so threads share one core (the GIL): from this many
# chunks on, an offline build extracts in worker processes, one per core up to ``workers``, each
# given OFFLINE_BATCH chunks at a time (ours; issue 29: extraction was the largest stage of a
# 10k-passage offline build). Two workers answer their first batch after 0.3-0.4 s (they import
# kgviz.index.offline_batch only) and one extracts ~550 HotpotQA passages/s; well below this the
# start costs more than the second core gives.
OFFLINE_PROCESS_MIN_CHUNKS = 2000
OFFLINE_BATCH = 200


@dataclass(frozen=True)
class ChunkFacts:
    """What one chunk's reply gave: facts kept, facts left out as not in the text (of which
    copies of the prompt's examples), and lines that could not be read."""

    chunk_id: str
    accepted: int
    ungrounded: int
    prompt_examples: int
    malformed: int

    @property
    def mostly_ungrounded(self) -> bool:
        """More of its facts were left out than kept (ours)."""
        return self.ungrounded > self.accepted


@dataclass
class ExtractResult:
    outputs: dict[str, ExtractionOutput] = field(default_factory=dict)
    failures: list[tuple[str, str, str]] = field(default_factory=list)
    n_malformed: int = 0
    usage: Usage = field(default_factory=Usage)
    extracted: int = 0  # chunks extracted in this build (their reply was read)
    failed: int = 0  # chunks whose extraction failed in this build
    reused: int = 0
    chunk_facts: list[ChunkFacts] = field(default_factory=list)  # chunks with a read reply
    rejected: list[tuple[str, str, str]] = field(default_factory=list)  # (chunk, fact, why), capped
    offline_unfound: list[str] = field(default_factory=list)  # offline facts the check could not find (kept)

    def add(self, chunk_id: str, out: ExtractionOutput) -> None:
        self.outputs[chunk_id] = out
        self.n_malformed += out.n_malformed
        n_copy = sum(r.reason == PROMPT_EXAMPLE for r in out.rejected)
        self.chunk_facts.append(ChunkFacts(chunk_id, len(out.triples), len(out.rejected), n_copy, out.n_malformed))
        room = MAX_LISTED_REJECTIONS - len(self.rejected)
        self.rejected += [(chunk_id, r.fact.render(), r.why()) for r in out.rejected[:max(0, room)]]

    def fill(self, report: BuildReport, offline: bool) -> None:
        """The extraction figures of ``report``: chunks extracted / failed / reused, and per chunk
        and in total the facts kept, left out as not in the text, and the malformed lines."""
        report.extracted_chunks, report.failed_chunks = self.extracted, self.failed
        report.reused_extractions = self.reused
        report.failures, report.n_malformed_lines = self.failures, self.n_malformed
        report.chunk_facts = [asdict(c) for c in self.chunk_facts]
        report.facts_accepted = sum(c.accepted for c in self.chunk_facts)
        report.facts_ungrounded = sum(c.ungrounded for c in self.chunk_facts)
        report.facts_prompt_examples = sum(c.prompt_examples for c in self.chunk_facts)
        report.rejected_facts = list(self.rejected)
        read = [c for c in self.chunk_facts if c.accepted or c.ungrounded]
        report.ungrounded_chunks = sum(c.mostly_ungrounded for c in read)
        report.not_following_prompt = not offline and 2 * report.ungrounded_chunks > len(read)
        if self.offline_unfound:
            report.warnings.append(f"the offline extractor wrote {len(self.offline_unfound)} fact(s) with a name the "
                                   f"grounding check does not find in the chunk (kept): "
                                   + "; ".join(self.offline_unfound[:3]))


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


def stored_extractions(store: GraphStore, chunk_ids: Sequence[str]) -> dict[str, ExtractionRow]:
    return writes.extractions(store, chunk_ids)


def _failed_row(row: Mapping[str, object]) -> bool:
    """A failed row, or an LLM row whose stored reply is empty (kgviz before issue 15 recorded an
    empty reply as "ok, 0 triples"; it is a failure and is asked again)."""
    if row.get("status") == "failed":
        return True
    return row.get("mode") != OFFLINE_MODE and not str(row.get("raw") or "").strip()


def rederive(chunk: Chunk, row: Mapping[str, object], max_triples: int, title: str = "") -> ExtractionOutput:
    """Triples of an already-extracted chunk, without calling any model."""
    if row.get("mode") == OFFLINE_MODE:
        return extract_offline(chunk.text, max_triples, title)
    return parse_triples(str(row.get("raw") or ""), max_triples, split_predicate=split_predicate)


def run_extraction(
    store: GraphStore,
    reasoner: Reasoner,
    chunks: Sequence[Chunk],
    params: BuildParams,
    progress: ExtractProgress,
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
        title = titles.get(c.doc_id, "")
        out = rederive(c, row, params.max_triples_per_chunk, title)
        res.add(c.id, checked(out, c, title, row.get("mode") == OFFLINE_MODE, res.offline_unfound))
    total = len(chunks)
    progress(res.reused, total, f"{res.reused} chunks already extracted", res.usage)
    if todo and params.batch:  # replies from the provider's batch endpoint
        from kgviz.index.batch_extract import batch_reasoner

        reasoner = batch_reasoner(store, reasoner, list(todo), params, progress, cancel, titles, res.reused)
    if todo and reasoner.is_offline and offline_processes(params, len(todo)) > 1:
        _run_offline_processes(store, reasoner, todo, params, progress, cancel, titles, res, total)
    elif todo:
        _run_pool(store, reasoner, todo, params, progress, cancel, titles, res, total)
    return res


def offline_processes(params: BuildParams, n_chunks: int) -> int:
    """Worker processes for an offline extraction of ``n_chunks`` (1: the thread pool instead):
    one per usable core up to ``params.workers`` (KGVIZ_WORKERS / --workers)."""
    return process_count(params.workers, n_chunks, OFFLINE_PROCESS_MIN_CHUNKS)


def _extract_one(reasoner: Reasoner, chunk: Chunk, max_triples: int, title: str = "") -> _Run:
    asked = ask(reasoner, EXTRACT_TRIPLES_TASK_NAME, text=chunk.text, max_triples=max_triples, title=title)
    out: ExtractionOutput | None = asked.value
    raw = out.raw if out is not None and reasoner.is_offline else asked.raw
    return _Run(chunk, out, asked.error, asked.usage, raw)


def _run_pool(
    store: GraphStore,
    reasoner: Reasoner,
    todo: deque[Chunk],
    params: BuildParams,
    progress: ExtractProgress,
    cancel: threading.Event | None,
    titles: dict[str, str],
    res: ExtractResult,
    total: int,
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
                    except FATAL as exc:
                        fatal, stop = fatal or exc, True
                        continue
                    done += 1
                    _record(run, reasoner.mode, res, buffer, titles.get(chunk.doc_id, ""))
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


def _run_offline_processes(
    store: GraphStore,
    reasoner: Reasoner,
    todo: deque[Chunk],
    params: BuildParams,
    progress: ExtractProgress,
    cancel: threading.Event | None,
    titles: dict[str, str],
    res: ExtractResult,
    total: int,
) -> None:
    """``_run_pool`` for the offline extractor, in worker processes (OFFLINE_PROCESS_MIN_CHUNKS;
    kgviz.index.processes: fresh interpreters, never forks of this possibly threaded process):
    the same outputs, Extraction rows and report, since the extractor is a function of the chunk
    text and title alone and the batches come back in input order. Rows are flushed as
    ``_run_pool`` flushes them; a cancel stops handing out batches and keeps what finished; a
    worker's error stops the build with that error, after the rows of the batches before it are
    written."""
    items = [(c, titles.get(c.doc_id, "")) for c in todo]
    todo.clear()
    batches = [items[i:i + OFFLINE_BATCH] for i in range(0, len(items), OFFLINE_BATCH)]
    done = res.reused
    buffer: list[dict[str, object]] = []
    last_flush = time.monotonic()
    tasks = ((batch, params.max_triples_per_chunk) for batch in batches)
    try:
        with ProcessPool(offline_processes(params, len(items))) as pool:
            for batch, results in zip(batches, pool.map(extract_offline_batch, tasks, cancel)):
                for (chunk, _), (output, seconds, unfound) in zip(batch, results):
                    run = _Run(chunk, output, "", Usage(latency_s=seconds), output.raw)
                    done += 1
                    res.offline_unfound += unfound
                    if reasoner.ledger is not None:  # as Reasoner.run records an offline call
                        reasoner.ledger.record(EXTRACT_TRIPLES_TASK_NAME, run.usage)
                    _record(run, reasoner.mode, res, buffer, grounded=True)
                    progress(done, total, f"{run.chunk.id}: {len(run.output.triples) if run.output else 0} triples",
                             res.usage)
                due = time.monotonic() - last_flush >= params.flush_interval_s or len(buffer) >= MAX_BUFFER
                if buffer and (pool.cancelled or (len(buffer) >= params.batch_size and due)):  # as _run_pool
                    store.bulk_load_nodes("Extraction", list(buffer))
                    buffer.clear()
                    last_flush = time.monotonic()
            cancelled = pool.cancelled
    finally:
        if buffer:  # what finished is kept, whatever stopped the loop
            store.bulk_load_nodes("Extraction", list(buffer))
    if cancelled and done < total:
        raise BuildCancelled(
            f"build cancelled after {done} of {total} chunks were extracted",
            hint="run the build again: extracted chunks are kept and skipped",
        )


def _record(run: _Run, mode: str, res: ExtractResult, buffer: list[dict[str, object]], title: str = "",
            grounded: bool = False) -> None:
    """Count and buffer one chunk's outcome; ``grounded``: the output went through ``checked``
    already (in a worker process)."""
    res.usage = res.usage + run.usage
    if run.output is None:
        res.failed += 1
        res.failures.append((run.chunk.id, run.error, run.raw[:RAW_EXCERPT_CHARS]))
        buffer.append(_row(run.chunk.id, mode, run, "failed"))
        return
    if not grounded:
        run.output = checked(run.output, run.chunk, title, mode == OFFLINE_MODE, res.offline_unfound)
    status = run.output.status
    if status == "failed":
        res.failed += 1
        res.n_malformed += run.output.n_malformed
        reason = run.output.warnings[-1] if run.output.warnings else "no triples in the reply"
        res.failures.append((run.chunk.id, reason, run.raw[:RAW_EXCERPT_CHARS]))
    else:
        res.extracted += 1
        res.add(run.chunk.id, run.output)
    buffer.append(_row(run.chunk.id, mode, run, status))
