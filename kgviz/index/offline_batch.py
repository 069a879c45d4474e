"""The offline extraction of a batch of chunks, as a build worker process runs it
(kgviz.index.processes), and the grounding check every extraction goes through. Apart from
kgviz.index.extract so that a worker imports the extractor and the check only (0.2 s), not the
graph store (Kùzu: 0.9 s per worker)."""
from __future__ import annotations

import time

from kgviz.facts.triples import ExtractionOutput
from kgviz.index.ground import ground_output
from kgviz.offline.extract import extract_offline
from kgviz.types import Chunk


def checked(out: ExtractionOutput, chunk: Chunk, title: str, offline: bool,
            unfound: list[str] | None = None) -> ExtractionOutput:
    """``out`` with the facts that are not in the chunk left out (kgviz.index.extract's docstring); an
    offline output is kept whole and what the check could not find is appended to ``unfound``."""
    grounded = ground_output(out, chunk.text, title)
    if not offline:
        return grounded
    if unfound is not None:
        unfound += [f"{chunk.id}: {r.describe()}" for r in grounded.rejected]
    return out


def extract_offline_batch(items: list[tuple[Chunk, str]], max_triples: int) -> list[tuple[ExtractionOutput, float, list[str]]]:
    """In a worker process: for each (chunk, title), what the offline extractor and the grounding
    check give, the seconds it took, and the facts the check could not find (``checked``'s
    ``unfound``). The chunk itself is not sent back: the caller has it."""
    out = []
    for chunk, title in items:
        t0 = time.perf_counter()
        value = extract_offline(chunk.text, max_triples, title)
        seconds = time.perf_counter() - t0
        unfound: list[str] = []
        out.append((checked(value, chunk, title, True, unfound), seconds, unfound))
    return out
