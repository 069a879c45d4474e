"""What the streaming loop cut-off would have saved on real replies: every reply of a recording
(sample_recorded/ by default) is fed to LoopGuard piece by piece (words, as a stream delivers
them) and the replies it would cut are counted, with the share of their output tokens after the
cut (estimated by characters) and the parse of the cut text compared with the whole reply.

    python3 benchmarks/loop_guard_on_recording.py [--recording sample_recorded]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kgviz.facts.parse import parse_triples  # noqa: E402
from kgviz.providers.loop_guard import LoopGuard  # noqa: E402
from kgviz.providers.recorded import read_file, recording_files  # noqa: E402
from kgviz.replay import SAMPLE_RECORDING  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--recording", type=Path, default=SAMPLE_RECORDING)
    args = p.parse_args()
    out = []
    for f in recording_files(args.recording):
        header, rows = read_file(f)
        cut, saved, total, same_parse = 0, 0.0, 0, 0
        for r in rows:
            text, tokens = str(r["text"]), int(r["output_tokens"])
            total += tokens
            guard = LoopGuard(max_tokens=10**9)  # the server's own max_tokens already applied
            for piece in (x for x in text.replace(" ", " \0").replace("\n", "\n\0").split("\0") if x):
                if not guard.feed(piece):
                    break
            if guard.cut:
                cut += 1
                saved += tokens * (1 - len(guard.text) / max(1, len(text)))
                whole, kept = parse_triples(text), parse_triples(guard.text)
                same_parse += [t.render() for t in whole.triples] == [t.render() for t in kept.triples]
        out.append({"file": f.name, "model": header.get("model"), "replies": len(rows), "cut": cut,
                    "output_tokens": total, "output_tokens_after_the_cut": round(saved),
                    "cut_replies_with_the_same_triples": same_parse})
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
