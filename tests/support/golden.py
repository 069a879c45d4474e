"""Golden traces: every method on every sample question (and, where ../shared/data exists, on the
first HotpotQA questions), offline, reduced to a canonical JSON whose hash must not change when the
code is restructured with behaviour unchanged (issue 11).

Canonical form: ``Run.to_dict()`` without wall-clock fields (``seconds``, ``retrieval_seconds``,
every ``latency_s``); keys sorted; floats rounded to 9 decimals (a reordering of float sums in a
refactor must not count as a change in behaviour, a change in a score must).

Regenerate after a deliberate behaviour change: ``python -m tests.support.golden --write`` (and say
in the commit what changed and why). ``--dump DIR`` writes the full canonical traces for a diff.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any, Iterable

ROOT = Path(__file__).resolve().parents[2]
GOLDEN_DIR = ROOT / "tests" / "golden"
SAMPLE_FILE = GOLDEN_DIR / "traces_sample.json"
HOTPOT_FILE = GOLDEN_DIR / "traces_hotpotqa.json"
HOTPOT_DIR = ROOT.parent / "shared" / "data" / "hotpotqa"
HOTPOT_QUESTIONS = 25  # enough to walk every method through many shapes, small enough for CI
_WALL_CLOCK = {"seconds", "retrieval_seconds", "latency_s"}


def canonical(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: canonical(v) for k, v in sorted(obj.items()) if k not in _WALL_CLOCK}
    if isinstance(obj, (list, tuple)):
        return [canonical(v) for v in obj]
    if isinstance(obj, float):
        return round(obj, 9)
    return obj


def digest(run_dict: dict[str, Any]) -> str:
    blob = json.dumps(canonical(run_dict), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


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


def digests(runs: dict[str, dict[str, Any]]) -> dict[str, str]:
    return {k: digest(v) for k, v in sorted(runs.items())}


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
    changed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, path, make in sets:
            runs = make(Path(tmp))
            new = digests(runs)
            if args.dump:
                args.dump.mkdir(parents=True, exist_ok=True)
                (args.dump / f"{name}.json").write_text(json.dumps(runs, indent=1, sort_keys=True, ensure_ascii=False))
            old = json.loads(path.read_text()) if path.exists() else {}
            diff = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
            changed += len(diff)
            print(f"{name}: {len(new)} runs, {len(diff)} differ from {path.name}")
            for k in diff[:20]:
                print("  ", k)
            if args.write:
                path.write_text(json.dumps(new, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    return 1 if changed and not args.write else 0


if __name__ == "__main__":
    sys.exit(main())
