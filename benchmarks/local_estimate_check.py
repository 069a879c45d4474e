"""How close the local-model time estimate comes to a real build: the measured speed is taken from
a recording's own calls (tokens, seconds, end times of a real model: ``sample_recorded/``), the
estimate is computed for the same documents and worker count, and both are printed beside the
build's measured extraction time (build.json). A hold-in check, not a forecast: the calls that
measure the speed are the calls of the build being predicted; it shows that the arithmetic
(tokens / rates / measured parallelism) reproduces a real run, and what each part contributes.

    python3 benchmarks/local_estimate_check.py [--recording sample_recorded] [--file extraction.<model>.jsonl]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kgviz.index.estimate import estimate_cost, extraction_part  # noqa: E402
from kgviz.ingest import load_paths  # noqa: E402
from kgviz.providers.speed import TimedCall, measure  # noqa: E402
from kgviz.replay import BUILD_FILE, SAMPLE_BUILD, SAMPLE_CORPUS, SAMPLE_RECORDING  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--recording", type=Path, default=SAMPLE_RECORDING)
    p.add_argument("--file", default="")
    args = p.parse_args()
    build = json.loads((args.recording / BUILD_FILE).read_text(encoding="utf-8"))
    name = args.file or build["file"]
    lines = (args.recording / name).read_text(encoding="utf-8").splitlines()
    header, rows = json.loads(lines[0]), [json.loads(ln) for ln in lines[1:] if ln.strip()]
    calls = [TimedCall(r["input_tokens"], r["output_tokens"], r["latency_s"], r["created"]) for r in rows]
    speed = measure(calls)
    if speed is None:
        print(json.dumps({"error": "the recorded calls do not determine a speed"}))
        return 1
    workers = int(build.get("workers") or 1)
    docs = load_paths([SAMPLE_CORPUS]).documents
    from dataclasses import replace

    spec = f"openai-compatible:{header['model']}@{header.get('base_url') or 'http://127.0.0.1:8080/v1'}"
    # tokens only (no cache dir); the extraction's share, as the recorded calls are extraction calls
    est = extraction_part(estimate_cost(docs, replace(SAMPLE_BUILD, workers=workers), spec))
    seconds = speed.call_seconds(est.input_tokens, est.output_tokens) / speed.effective_parallelism(workers)
    recorded_tokens = (sum(r["input_tokens"] for r in rows), sum(r["output_tokens"] for r in rows))
    seconds_recorded_tokens = speed.call_seconds(*recorded_tokens) / speed.effective_parallelism(workers)
    print(json.dumps({
        "recording": str(args.recording / name), "model": header["model"], "calls": len(rows), "workers": workers,
        "prompt_tokens_per_s": round(speed.prompt_tps, 2), "generation_tokens_per_s": round(speed.gen_tps, 2),
        "basis": speed.basis, "parallelism": None if speed.parallelism is None else round(speed.parallelism, 3),
        "estimated_tokens_in_out": [est.input_tokens, est.output_tokens],
        "recorded_tokens_in_out": list(recorded_tokens),
        "estimate_s": round(seconds, 1), "estimate_with_recorded_tokens_s": round(seconds_recorded_tokens, 1),
        "measured_extract_stage_s": build.get("extract_stage_seconds"),
        "source": speed.describe(workers),
    }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
