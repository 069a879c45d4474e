"""Do human labels stay attached when a document is added? Builds the sample corpus offline into a
temporary workspace, runs every method on every sample question, adds one document (by default an
unrelated one written here; ``--add FILE`` for another) with ``kgviz build``, runs them again, and
prints how many graph ids disappeared, how many runs kept their answer (a run label's key) and
claims (claim labels), and how many context item ids stayed in the same run's context (item labels).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import json
import tempfile
from pathlib import Path
from typing import Any

from kgviz.cli import main as cli
from kgviz.compare import compare
from kgviz.config import Settings
from kgviz.methods.registry import list_methods
from kgviz.workspace import open_workspace

ROOT = Path(__file__).resolve().parents[1]
UNRELATED = """# Pellory Bakery

The Pellory Bakery is a family bakery in the mountain village of Drosk. It was opened in 1952 by the baker
Ilse Marrow, who learned her trade in a monastery kitchen. The bakery is known for a rye loaf baked in a
wood-fired oven that Ilse Marrow built herself in 1960. Today her grandson Pieter Marrow runs it.
"""


def snapshot(db: Path, questions: list[dict[str, Any]]) -> tuple[dict[Any, Any], dict[str, set[str]]]:
    with open_workspace(Settings.from_env(), db_dir=db, llm_spec="offline", embedder_spec="hashing") as ws:
        runs = {}
        for q in questions:
            for r in compare(q["question"], list_methods(), ws.method_context(), q["answers"]).results:
                runs[(q["id"], r.method)] = (r.run.answer, [c.text for c in r.verdict.claims],
                                             [i.id for i in [*r.run.context.items, *r.run.context.sources]])
        ids = {t: {row["id"] for row in ws.store.query(f"MATCH (n:{t}) RETURN n.id AS id")}
               for t in ("Document", "Chunk", "Entity", "Triple")}
    return runs, ids


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--add", type=Path, help="the document to add (default: an unrelated one)")
    args = ap.parse_args()
    questions = [json.loads(line) for line in (ROOT / "sample_data" / "questions.jsonl").read_text().splitlines()
                 if line.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        # offline, hashing, and a home of its own: nothing of the user's ~/.kgviz is read or written
        os.environ.update(KGVIZ_HOME=str(Path(tmp) / "home"), KGVIZ_LLM="offline", KGVIZ_EMBEDDER="hashing")
        db, extra = Path(tmp) / "ws", args.add or Path(tmp) / "pellory_bakery.md"
        if args.add is None:
            extra.write_text(UNRELATED, encoding="utf-8")
        docs = [p for p in sorted((ROOT / "sample_data" / "corpus").iterdir()) if p.name != extra.name]
        with contextlib.redirect_stdout(io.StringIO()):  # the builds' own reports: this prints one document
            assert cli(["build", *map(str, docs), "--db", str(db), "--json"]) == 0
        before, ids_before = snapshot(db, questions)
        with contextlib.redirect_stdout(io.StringIO()):
            assert cli(["build", str(extra), "--db", str(db), "--json"]) == 0
        after, ids_after = snapshot(db, questions)
    same = [k for k in before if before[k][0] == after[k][0]]
    print(json.dumps({
        "added": extra.name, "runs": len(before), "same answer (run labels apply)": len(same),
        "same claims": sum(before[k][1] == after[k][1] for k in before),
        "context item ids": sum(len(v[2]) for v in before.values()),
        "still in the same run's context": sum(len(set(before[k][2]) & set(after[k][2])) for k in before),
        "graph ids before / gone after": {t: [len(ids_before[t]), len(ids_before[t] - ids_after[t])] for t in ids_before},
        "answers changed": {f"{q} {m}": [before[(q, m)][0][:60], after[(q, m)][0][:60]]
                            for q, m in before if (q, m) not in same},
    }, indent=2))


if __name__ == "__main__":
    main()
