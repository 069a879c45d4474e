"""The issue-23 hand sample: 20 facts of the recorded qwen2.5-coder-1.5b extraction of the sample
(sample_recorded/extraction.qwen2.5-coder-1.5b-instruct.jsonl), before and after, with the
right/wrong judgement made by reading each fact's document (benchmarks/hand_sample_judged.json).

* before: every fact the parser of ``--baseline`` (a folder holding ``kgviz/facts/parse.py``, e.g.
  ``git show 94780fa^:kgviz/facts/parse.py``: the parser before issue 23) reads from the replies,
  no grounding check: what the graph held then;
* after: the facts stored by this checkout's build replaying the same replies (parser + grounding).

Each side is sampled with ``random.Random(23)`` from its distinct facts. Prints JSON: per side the
facts in the pool, the 20 sampled with their judgement, and the share judged right (a fact not in
the judged file is "unjudged" and named, never counted).

  python benchmarks/hand_sample.py --baseline /tmp/parse-before
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import random
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kgviz.offline.lexicon import split_predicate  # noqa: E402
from kgviz.providers.recorded import RecordedLLM, load_recording, read_file  # noqa: E402
from kgviz.replay import SAMPLE_RECORDING, build_sample, open_session  # noqa: E402

REPLIES = ROOT / "sample_recorded" / "extraction.qwen2.5-coder-1.5b-instruct.jsonl"
JUDGED = Path(__file__).with_name("hand_sample_judged.json")
N, SEED = 20, 23


def _render(t: object) -> str:
    """A parsed fact as the graph writes it: subject, relation, object; nested facts in brackets."""
    s, r, o = (getattr(t, k) for k in ("subject", "relation", "object"))
    side = (lambda x: f"({_render(x)})" if hasattr(x, "relation") else x.text)
    return f"{side(s)} {r} {side(o)}"


def before_pool(baseline: Path) -> list[str]:
    spec = importlib.util.spec_from_file_location("baseline_parse", baseline / "kgviz" / "facts" / "parse.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["baseline_parse"] = mod  # dataclasses look their module up while the class is made
    spec.loader.exec_module(mod)
    _, rows = read_file(REPLIES)
    return sorted({_render(t) for r in rows for t in mod.parse_triples(r["text"], 80, split_predicate=split_predicate).triples})


def after_pool() -> list[str]:
    session = open_session(Path(tempfile.mkdtemp()) / "db", RecordedLLM(SAMPLE_RECORDING, load_recording(SAMPLE_RECORDING)))
    try:
        build_sample(session)
        return sorted({str(x["t"]) for x in session.store.query("MATCH (t:Triple) RETURN t.text AS t")})
    finally:
        session.close()


def judged(pool: list[str], verdicts: dict[str, dict]) -> dict:
    facts = random.Random(SEED).sample(pool, min(N, len(pool)))
    rows = [{"fact": f, **verdicts.get(f, {"right": None, "why": "unjudged"})} for f in facts]
    known = [r for r in rows if r["right"] is not None]
    return {"pool": len(pool), "sampled": len(rows), "right": sum(r["right"] for r in known),
            "judged": len(known), "unjudged": [r["fact"] for r in rows if r["right"] is None], "facts": rows}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", type=Path, required=True, help="folder with the 'before' kgviz/facts/parse.py")
    args = ap.parse_args()
    verdicts = json.loads(JUDGED.read_text(encoding="utf-8"))
    print(json.dumps({"before": judged(before_pool(args.baseline), verdicts),
                      "after": judged(after_pool(), verdicts)}, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
