"""The whole benchmark suite in one command; prints one JSON document (figures, targets, met).

    python3 benchmarks/run.py [--quick]

Same as `kgviz bench --json`; the code lives in benchmarks/suite.py and reuses the other
scripts in this folder (build_hotpotqa.py, bulk_vs_rows.py, retrieval_latency.py).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]  # the suite (a sibling script), kgviz

from suite import run_bench  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes: checks the suite runs, timings mean nothing")
    args = ap.parse_args()
    report = run_bench(quick=args.quick, log=lambda m: print(m, file=sys.stderr))
    print(json.dumps(report, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
