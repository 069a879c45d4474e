"""How many extraction calls the calibration needs to know a corpus's output length (issue 23):
the calibration's stopping rule (``kgviz.index.extract_sample.settled``) replayed on recorded
extraction replies of a real model, against the fixed two-chunk sample it replaced.

For each recorded corpus, every chunk's real output tokens are read from the recording (no
server). Then, over the chunk orders (the calibration's own ``sample_order`` and ``--orders``
random ones, seeded): the sample the rule takes, its estimate of the corpus's output tokens
(ratio × chunk tokens, as ``kgviz.index.estimate`` computes it) and whether the 95 % range
holds the real total; beside it, the two-chunk estimate over every pair of chunks (the old rule's
arithmetic on any two chunks).

    python benchmarks/calibration_sample.py [--orders 2000] [--json]
"""
from __future__ import annotations

import argparse
import itertools
import json
import random
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kgviz.index.extract_sample import SampleCall, corpus_chunks, sample_order, settled, shape  # noqa: E402
from kgviz.index.params import BuildParams  # noqa: E402
from kgviz.ingest import load_paths  # noqa: E402
from kgviz.prompts.extraction import (  # noqa: E402
    EXTRACT_TRIPLES_MAX_OUTPUT_TOKENS,
    EXTRACT_TRIPLES_SYSTEM,
    render_extract_triples,
)
from kgviz.providers.recorded import RecordedLLM  # noqa: E402
from kgviz.types import Chunk, Message  # noqa: E402

CORPORA = (("15 sample documents", "sample_data/corpus/*", "sample_recorded"),
           ("4 real-world paragraphs", "sample_recorded/paragraphs/docs/*.txt", "sample_recorded/paragraphs"))
WITHIN = 0.25  # the tolerance


def recorded_outputs(pattern: str, recording: str) -> list[tuple[Chunk, int]]:
    """Every chunk of the corpus with the output tokens its recorded extraction reply had."""
    docs = load_paths(sorted(ROOT.glob(pattern))).documents
    llm = RecordedLLM(ROOT / recording)
    out = []
    for c in corpus_chunks(docs, BuildParams()):
        r = llm.complete([Message("user", render_extract_triples(c.text))], system=EXTRACT_TRIPLES_SYSTEM,
                         max_tokens=EXTRACT_TRIPLES_MAX_OUTPUT_TOKENS)
        out.append((c, r.usage.output_tokens))
    return out


def take(order: list[tuple[Chunk, int]]) -> list[SampleCall]:
    """The calls the calibration makes in this order: one per chunk until ``settled``."""
    calls: list[SampleCall] = []
    for c, out in order:
        calls.append(SampleCall(c.n_tokens, 0, 0, 0, out, 0.0, 0.0, None, len(order)))
        if settled(calls, len(order)):
            break
    return calls


def judge(calls: list[SampleCall], chunk_tokens: int, total: int) -> tuple[float, bool, int]:
    """(relative error of the estimated total output, whether the range holds it, calls)."""
    s = shape([SampleCall(c.chunk_tokens, 1, 1, 1, c.output_tokens, 0.0, 0.0, None, c.population) for c in calls])
    assert s is not None
    est = s.output_ratio * chunk_tokens
    return est / total - 1, s.output_ratio_low * chunk_tokens <= total <= s.output_ratio_high * chunk_tokens, len(calls)


def measure(name: str, rows: list[tuple[Chunk, int]], orders: int, seed: int) -> dict:
    total = sum(o for _, o in rows)
    chunk_tokens = sum(c.n_tokens for c, _ in rows)
    by_id = {c.id: (c, o) for c, o in rows}
    own = judge(take([by_id[c.id] for c in sample_order([c for c, _ in rows])]), chunk_tokens, total)
    rng = random.Random(seed)
    rand = []
    for _ in range(orders):
        shuffled = rows[:]
        rng.shuffle(shuffled)
        rand.append(judge(take(shuffled), chunk_tokens, total))
    pairs = [sum(o for _, o in p) / sum(c.n_tokens for c, _ in p) * chunk_tokens / total - 1
             for p in itertools.combinations(rows, 2)]
    return {
        "corpus": name, "chunks": len(rows), "output_tokens": total,
        "per_chunk_output": [min(o for _, o in rows), max(o for _, o in rows)],
        "two_chunks": {"pairs": len(pairs), "within_25pct": sum(abs(e) <= WITHIN for e in pairs) / len(pairs),
                       "median_abs_error": statistics.median(abs(e) for e in pairs)},
        "rule_own_order": {"calls": own[2], "error": own[0], "range_holds": own[1]},
        "rule_random_orders": {
            "orders": orders, "mean_calls": statistics.mean(r[2] for r in rand),
            "within_25pct": sum(abs(r[0]) <= WITHIN for r in rand) / orders,
            "median_abs_error": statistics.median(abs(r[0]) for r in rand),
            "range_holds": sum(r[1] for r in rand) / orders},
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--orders", type=int, default=2000, help="random chunk orders per corpus")
    ap.add_argument("--seed", type=int, default=23)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    results = [measure(name, recorded_outputs(pattern, rec), args.orders, args.seed) for name, pattern, rec in CORPORA]
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    for r in results:
        two, own, rnd = r["two_chunks"], r["rule_own_order"], r["rule_random_orders"]
        print(f"{r['corpus']}: {r['chunks']} chunks, {r['output_tokens']} output tokens "
              f"({r['per_chunk_output'][0]}–{r['per_chunk_output'][1]} a chunk)")
        print(f"  two chunks (every pair of {two['pairs']}): within ±25 % {two['within_25pct']:.0%}, "
              f"median |error| {two['median_abs_error']:.1%}")
        print(f"  the rule, calibration order: {own['calls']} calls, error {own['error']:+.1%}, "
              f"range holds the total: {own['range_holds']}")
        print(f"  the rule, {rnd['orders']} random orders: {rnd['mean_calls']:.1f} calls on average, within ±25 % "
              f"{rnd['within_25pct']:.0%}, median |error| {rnd['median_abs_error']:.1%}, range holds the total "
              f"{rnd['range_holds']:.0%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
