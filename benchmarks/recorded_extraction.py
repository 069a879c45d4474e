"""The recorded real-model extraction replies (sample_recorded/extraction.*.jsonl) read by this
checkout's parser and, for a before -> after figure in one run, by another checkout's (issue 23).
Prints JSON: per parser, non-blank reply lines, malformed lines and their share, and triples read.

  python benchmarks/recorded_extraction.py --baseline /work/main
  python benchmarks/recorded_extraction.py --baseline /work/main --ground   # + grounding (replays the build)
  python benchmarks/recorded_extraction.py --baseline DIR --replies sample_recorded/paragraphs/extraction.<model>.paragraphs.jsonl

``--baseline DIR`` loads ``DIR/kgviz/facts/parse.py`` as a module of its own (it imports this
checkout's ``kgviz.facts.triples``: the data types are compatible). ``--ground`` also builds the
sample from the recorded replies with this checkout (sample_recorded/README.md) and reports the
facts kept and left out by the grounding check (``kgviz.index.ground``), with each rejection.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kgviz.facts.parse import parse_triples  # noqa: E402
from kgviz.offline.lexicon import split_predicate  # noqa: E402
from kgviz.providers.recorded import read_file  # noqa: E402

REPLIES = ROOT / "sample_recorded" / "extraction.qwen2.5-coder-1.5b-instruct.jsonl"


def _load_parser(checkout: Path) -> Callable[..., Any]:
    spec = importlib.util.spec_from_file_location("baseline_parse", checkout / "kgviz" / "facts" / "parse.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module.parse_triples


def figures(parse: Callable[..., Any], replies: list[str]) -> dict[str, Any]:
    lines = malformed = triples = 0
    for text in replies:
        out = parse(text, 80, split_predicate=split_predicate)
        lines += sum(1 for ln in text.splitlines() if ln.strip())
        malformed += out.n_malformed
        triples += len(out.triples)
    return {"reply_lines": lines, "malformed_lines": malformed,
            "malformed_share": round(malformed / lines, 4) if lines else 0.0, "triples": triples}


def grounding() -> dict[str, Any]:
    from kgviz.providers.recorded import RecordedLLM, load_recording
    from kgviz.replay import SAMPLE_RECORDING, build_sample, open_session

    session = open_session(Path(tempfile.mkdtemp()) / "db", RecordedLLM(SAMPLE_RECORDING, load_recording(SAMPLE_RECORDING)))
    try:
        report = build_sample(session)
    finally:
        session.close()
    keys = ("extracted_chunks", "failed_chunks", "facts_accepted", "facts_ungrounded", "facts_prompt_examples",
            "ungrounded_chunks", "not_following_prompt", "n_malformed_lines")
    d = report.to_dict()
    return {**{k: d[k] for k in keys}, "triples_in_graph": d["counts"].get("Triple", 0),
            "rejected": d["rejected_facts"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", type=Path, help="another checkout whose parser gives the 'before' figure")
    ap.add_argument("--ground", action="store_true", help="also replay the build and report the grounding check")
    ap.add_argument("--replies", type=Path, default=REPLIES,
                    help="another recording's replies (parser figures only), e.g. "
                         "sample_recorded/paragraphs/extraction.qwen2.5-coder-1.5b-instruct.paragraphs.jsonl")
    args = ap.parse_args()
    _, rows = read_file(args.replies)
    replies = [str(r["text"]) for r in rows]
    out: dict[str, Any] = {"replies": len(replies), "file": args.replies.name}
    if args.baseline:
        out["before"] = {"checkout": str(args.baseline), **figures(_load_parser(args.baseline), replies)}
    out["after"] = {"checkout": str(ROOT), **figures(parse_triples, replies)}
    if args.ground:
        out["grounding"] = grounding()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
