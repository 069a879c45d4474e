#!/usr/bin/env python3
"""Record a live local model's extraction of four sample documents (issue 23's 0.5B run) into
``sample_recorded/grounding/``, or of other documents (``--docs``, ``--out``, ``--tag``: the 1.5B's
replies on short real-world paragraphs in ``sample_recorded/paragraphs/``), so the grounding
figures replay without a server.

  bash ../shared/tools/local_llm.sh serve qwen-0.5b 8801
  export OPENAI_API_KEY=local KGVIZ_TIMEOUT_S=900
  python scripts/record_grounding.py --llm openai-compatible:qwen2.5-coder-0.5b-instruct@http://127.0.0.1:8801/v1 \\
      --server "llama-server ... -np 1 -t 1"

Then, with no server (what tests/test_recorded_grounding.py does):

  kgviz build <the four documents> --db /tmp/g --llm recorded:sample_recorded/grounding --embedder hashing --workers 1

The build is the CLI's default (300-token chunks, 30 overlap, KET on), one worker; replies are
in the LLM cache's row format with a header line (kgviz.providers.recorded).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kgviz.config import Settings  # noqa: E402
from kgviz.index.params import BuildParams  # noqa: E402
from kgviz.index.pipeline import build  # noqa: E402
from kgviz.ingest import load_paths  # noqa: E402
from kgviz.providers.factory import make_llm  # noqa: E402
from kgviz.providers.recorded import RecordingLLM  # noqa: E402
from kgviz.replay import open_session  # noqa: E402

FOUR = ("agnes_vohl.md", "aster_wren.md", "edda_lunn.txt", "kellhaven.md")
OUT = ROOT / "sample_recorded" / "grounding"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--llm", required=True)
    ap.add_argument("--server", required=True, help="how the server ran (recorded in the header)")
    ap.add_argument("--docs", nargs="+", type=Path, default=[ROOT / "sample_data" / "corpus" / n for n in FOUR],
                    help="documents to extract (default: the four sample documents)")
    ap.add_argument("--out", type=Path, default=OUT, help="folder of the recording (default: %(default)s)")
    ap.add_argument("--tag", default="four", help="the file is extraction.<model>.<tag>.jsonl")
    args = ap.parse_args()
    from scripts.record_real_model import kgviz_commit  # the same header fields as the sample's

    inner = make_llm(args.llm, Settings.from_env(), use_cache=False)
    name = f"extraction.{inner.model}.{args.tag}.jsonl"
    names = [d.name for d in args.docs]
    header = {"kgviz_recording": 1, "provider": inner.provider, "model": inner.model,
              "base_url": getattr(inner, "base_url", None), "phase": "extraction",
              "recorded_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
              "kgviz_commit": kgviz_commit(), "server": args.server, "embedder": "hashing",
              "note": f"issue 23: the extraction of {', '.join(names)} with --workers 1"}
    args.out.mkdir(parents=True, exist_ok=True)
    rec = RecordingLLM(inner, args.out, name, header)
    loaded = load_paths(args.docs)
    db = Path(tempfile.mkdtemp(prefix="kgviz-record-"))
    session = open_session(db / "db", rec)
    try:
        report = build(loaded.documents, session.store, session.reasoner, BuildParams(workers=1))
    finally:
        session.close()
        shutil.rmtree(db, ignore_errors=True)
    d = report.to_dict()
    keys = ("extracted_chunks", "failed_chunks", "facts_accepted", "facts_ungrounded", "facts_prompt_examples",
            "ungrounded_chunks", "not_following_prompt", "n_malformed_lines", "counts", "rejected_facts")
    print(json.dumps({k: d[k] for k in keys}, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
