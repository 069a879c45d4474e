"""Calibrated time estimate vs the measured extraction time, against a live local model (issue 23:
"within ±25 %, twice in a row"). Each round, in a fresh KGVIZ home: `--estimate --calibrate`'s
calibration (short calls until two agree, then the extraction of chunks of the documents until their output
length settles),
the estimate, then the build of the same documents with the same model (uncached, --workers 1),
its extraction stage timed. The calibration and the build run back to back, under the same load.
With ``--restart CMD`` each round starts from a freshly started server (see the option's help).

Printed per round, from the same calibration calls (before -> after in one run):

* ``before_s``: the arithmetic of the checkout without the corpus sample (kgviz's token counts,
  2 output tokens per chunk token, every prompt token processed), with the rates of the short
  calls only (the sample calls are told apart by their end times);
* ``after_s`` (``low_s`` .. ``high_s``): ``kgviz.index.estimate.estimate_cost`` as it is now;
* ``measured_s`` and each estimate's error, the load average at the start and end of the round.

  python benchmarks/live_estimate_check.py --llm openai-compatible:qwen2.5-coder-1.5b-instruct@http://127.0.0.1:8821/v1 --rounds 2

Defaults: the four sample documents of issue 23 (agnes_vohl, aster_wren, edda_lunn, kellhaven).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kgviz.config import Settings  # noqa: E402
from kgviz.index.estimate import calibrate_spec, estimate_cost, extraction_part  # noqa: E402
from kgviz.index.extract_sample import SAMPLE_FILE  # noqa: E402
from kgviz.index.params import BuildParams  # noqa: E402
from kgviz.index.pipeline import build  # noqa: E402
from kgviz.ingest import load_paths  # noqa: E402
from kgviz.providers.factory import make_llm, parse_llm_spec  # noqa: E402
from kgviz.providers.speed import SPEED_FILE, TimedCall, measure  # noqa: E402
from kgviz.replay import open_session  # noqa: E402
from tests.support.http_wait import wait_healthy  # noqa: E402

FOUR = ("agnes_vohl.md", "aster_wren.md", "edda_lunn.txt", "kellhaven.md")


def _rows(path: Path) -> list[dict]:
    return [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]


def _before(home: Path, docs: list, params: BuildParams, spec: str) -> float | None:
    """The previous estimate: short calls' rates x kgviz's token counts at ratio 2, no reuse."""
    sample_ends = {r["end"] for r in _rows(home / "cache" / SAMPLE_FILE)}
    short = [TimedCall(r["input_tokens"], r["output_tokens"], r["seconds"], r["end"], r["prompt_s"], "calibration")
             for r in _rows(home / "cache" / SPEED_FILE) if r["end"] not in sample_ends]
    speed = measure(short)
    if speed is None:
        return None
    tokens = extraction_part(estimate_cost(docs, params, spec))  # no cache dir: tokens only, ratio from BuildParams
    return speed.call_seconds(tokens.input_tokens, tokens.output_tokens)


def one_round(spec: str, docs: list, params: BuildParams) -> dict:
    home = Path(tempfile.mkdtemp(prefix="kgviz-live-est-"))
    try:
        settings = replace(Settings.from_env(), home=home)
        load0 = os.getloadavg()[0]
        t0 = time.monotonic()
        calibrate_spec(spec, settings, workers=params.workers, documents=docs, params=params)
        calibration_s = time.monotonic() - t0
        # the extraction's share: the estimate also counts the skeleton's description calls,
        # which the build makes after its "extract" stage
        est = extraction_part(estimate_cost(docs, params, spec, cache_dir=settings.cache_dir))
        before = _before(home, docs, params, spec)
        load1 = os.getloadavg()[0]
        session = open_session(home / "db", make_llm(spec, settings, use_cache=False))
        try:
            report = build(docs, session.store, session.reasoner, params)
        finally:
            session.close()
        measured = report.seconds_by_stage.get("extract")
        used = report.usage_by_stage.get("extract")
        err = (lambda e: None if e is None or not measured else round(100 * (e - measured) / measured, 1))
        return {
            "load_avg_1m": [round(load0, 1), round(load1, 1), round(os.getloadavg()[0], 1)],
            "calibration_s": round(calibration_s, 1),
            "before_s": before and round(before, 1), "after_s": est.seconds and round(est.seconds, 1),
            "low_s": est.seconds_low and round(est.seconds_low, 1), "high_s": est.seconds_high and round(est.seconds_high, 1),
            "measured_s": measured and round(measured, 1),
            "before_error_pct": err(before), "after_error_pct": err(est.seconds),
            "estimated_output_tokens": est.output_tokens,
            "measured_output_tokens": used.output_tokens if used else None,
            "build_calls": report.extracted_chunks + report.failed_chunks, "failed_chunks": report.failed_chunks,
            "time_source": est.time_source,
        }
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _restart(cmd: str, spec: str, timeout_s: float = 300) -> None:
    subprocess.run(cmd, shell=True, check=True, stdout=subprocess.DEVNULL)
    base = spec.split("@", 1)[1].rsplit("/v1", 1)[0]
    if wait_healthy(base + "/health", timeout_s, pause_s=1) != "ok":
        raise SystemExit(f"the server at {base} did not come back within {timeout_s:.0f} s after: {cmd}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--llm", required=True, help="a local openai-compatible spec")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--restart", metavar="CMD",
                    help="a shell command run before every round that restarts the server (the round then waits "
                         "for its /health), so every round starts from the same server state: llama-server keeps "
                         "earlier prompts in a host-memory cache (--cache-ram, 8 GiB by default)")
    ap.add_argument("--docs", nargs="+", type=Path, default=[ROOT / "sample_data" / "corpus" / n for n in FOUR])
    args = ap.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "local")
    docs = load_paths(args.docs).documents
    params = BuildParams(workers=1)
    _, model, _ = parse_llm_spec(args.llm)
    for i in range(args.rounds):
        if args.restart:
            _restart(args.restart, args.llm)
        row = {"model": model, "round": i + 1, **one_round(args.llm, docs, params)}
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
