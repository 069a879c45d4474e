"""Golden traces: every method on every sample question (and, where ../shared/data exists, on the
first HotpotQA questions), offline, reduced to a canonical JSON whose hash must not change when the
code is restructured with behaviour unchanged (issue 11).

Canonical form: ``Run.to_dict()`` without wall-clock fields (``seconds``, ``retrieval_seconds``,
every ``latency_s``), keys sorted. The saved traces (gzipped JSON) are compared structurally:
every id, text, order and count exactly, floats within FLOAT_TOL (float32 matrix products differ
in their last bits between BLAS kernels and when a refactor reorders a sum; a change in a score
that matters is far larger).

Regenerate after a deliberate behaviour change: ``python -m tests.support.golden --write`` (and say
in the commit what changed and why). ``--dump DIR`` writes the full canonical traces for a diff.
"""
from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path
from typing import Any, Iterable

from tests.support.data import SHARED_DATA

ROOT = Path(__file__).resolve().parents[2]
GOLDEN_DIR = ROOT / "tests" / "golden"
SAMPLE_FILE = GOLDEN_DIR / "traces_sample.json.gz"
HOTPOT_FILE = GOLDEN_DIR / "traces_hotpotqa.json.gz"
FLOAT_TOL = 1e-5
HOTPOT_DIR = SHARED_DATA / "hotpotqa"
HOTPOT_QUESTIONS = 25  # enough to walk every method through many shapes, small enough for CI
_WALL_CLOCK = {"seconds", "retrieval_seconds", "latency_s"}


def canonical(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: canonical(v) for k, v in sorted(obj.items()) if k not in _WALL_CLOCK}
    if isinstance(obj, (list, tuple)):
        return [canonical(v) for v in obj]
    if isinstance(obj, float):
        return round(obj, 7)
    return obj


def first_difference(a: Any, b: Any, path: str = "") -> str | None:
    """Where ``a`` and ``b`` differ (a JSON path and both values), or None when they are equal
    up to FLOAT_TOL on numbers."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return f"{path}: keys {sorted(set(a) ^ set(b))}"
        for k in a:
            found = first_difference(a[k], b[k], f"{path}.{k}")
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            found = first_difference(x, y, f"{path}[{i}]")
            if found:
                return found
        return None
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool) and not isinstance(b, bool):
        return None if abs(a - b) <= FLOAT_TOL else f"{path}: {a!r} != {b!r}"
    return None if a == b else f"{path}: {str(a)[:200]!r} != {str(b)[:200]!r}"


def load(path: Path) -> dict[str, Any]:
    return json.loads(gzip.decompress(path.read_bytes())) if path.exists() else {}


def save(path: Path, runs: dict[str, Any]) -> None:
    blob = json.dumps(runs, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    path.write_bytes(gzip.compress(blob, mtime=0))


def differences(saved: dict[str, Any], now: dict[str, Any]) -> dict[str, str]:
    """{run key: first difference} for every run that is new, gone or changed."""
    out = {}
    for key in sorted(set(saved) | set(now)):
        if key not in saved or key not in now:
            out[key] = "only in the " + ("new runs" if key in now else "saved runs")
            continue
        found = first_difference(saved[key], now[key])
        if found:
            out[key] = found
    return out


def build_graph(docs_path: Path, db: Path) -> Any:
    from kgviz.graph.store import GraphStore
    from kgviz.index.pipeline import BuildParams, build
    from kgviz.ingest import load_paths
    from kgviz.methods.base import MethodContext
    from kgviz.providers.embedders import HashingEmbedder
    from kgviz.providers.offline import OfflineLLM
    from kgviz.reasoning import Reasoner

    emb = HashingEmbedder()
    store = GraphStore.open(db, embedder_id=emb.id, dim=emb.dim)
    build(load_paths([docs_path]).documents, store, Reasoner(OfflineLLM(), emb), BuildParams(workers=1))
    return MethodContext(store, Reasoner(OfflineLLM(), emb))


def questions(path: Path, limit: int | None = None) -> list[str]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            out.append(json.loads(line)["question"])
    return out[:limit] if limit else out


def run_all(ctx: Any, qs: Iterable[str]) -> dict[str, dict[str, Any]]:
    """{"<method> | <question>": canonical run dict} for every method and question."""
    from kgviz.methods.registry import list_methods
    from kgviz.run import run_method

    runs = {}
    for q in qs:
        for m in list_methods():
            runs[f"{m} | {q}"] = canonical(run_method(m, q, ctx).to_dict())
    return runs


def sample_runs(tmp: Path) -> dict[str, dict[str, Any]]:
    ctx = build_graph(ROOT / "sample_data" / "corpus", tmp / "sample")
    try:
        return run_all(ctx, questions(ROOT / "sample_data" / "questions.jsonl"))
    finally:
        ctx.store.close()


def hotpot_runs(tmp: Path) -> dict[str, dict[str, Any]]:
    ctx = build_graph(HOTPOT_DIR / "corpus.jsonl", tmp / "hotpot")
    try:
        return run_all(ctx, questions(HOTPOT_DIR / "questions.jsonl", HOTPOT_QUESTIONS))
    finally:
        ctx.store.close()


def main(argv: list[str] | None = None) -> int:
    import tempfile

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="rewrite the golden files")
    ap.add_argument("--dump", type=Path, help="write the full canonical traces here (for a diff)")
    ap.add_argument("--no-hotpot", action="store_true")
    args = ap.parse_args(argv)
    sets = [("sample", SAMPLE_FILE, sample_runs)]
    if not args.no_hotpot and HOTPOT_DIR.exists():
        sets.append(("hotpotqa", HOTPOT_FILE, hotpot_runs))
    elif not args.no_hotpot:  # a worktree or clone away from shared/: say so, never skip in silence
        print(f"hotpotqa: skipped, no data at {HOTPOT_DIR} (set KGVIZ_DATA to the shared data folder)")
    changed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, path, make in sets:
            runs = make(Path(tmp))
            if args.dump:
                args.dump.mkdir(parents=True, exist_ok=True)
                (args.dump / f"{name}.json").write_text(json.dumps(runs, indent=1, sort_keys=True, ensure_ascii=False))
            diff = differences(load(path), runs)
            changed += len(diff)
            print(f"{name}: {len(runs)} runs, {len(diff)} differ from {path.name}")
            for k, where in list(diff.items())[:20]:
                print(f"   {k}\n      {where}")
            if args.write:
                save(path, runs)
    return 1 if changed and not args.write else 0


if __name__ == "__main__":
    sys.exit(main())
