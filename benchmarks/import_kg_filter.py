"""KG-Infused App. B.1's entity filter on a curated KG import: counts before/after per mode, and how
often a name-only entity takes one of KG-Infused's k_e = 3 seed slots for the 2Wiki questions.

Prints JSON, one object per ``entity_filter`` mode (b1 / strict / none): the import report's counts
(entities seen, entry points, fact ends only, entities and facts removed, facts loaded) and
``seed_slots``: over the questions, the top-3 curated entities by cosine to the question (as
kg-infused seeds them), how many of those slots went to an entity that fails B.1 (no description,
or heads no fact).

    python3 benchmarks/import_kg_filter.py [--kg DIR] [--questions FILE] [--embedder SPEC]
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kgviz.graph.store import GraphStore  # noqa: E402
from kgviz.index.import_kg import ENTITY_FILTERS, import_kg  # noqa: E402
from kgviz.providers.factory import make_embedder  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
K_E = 3  # KG-Infused's seed entities (§4.3.1)


def _failing(store: GraphStore) -> set[str]:
    """Curated entities that fail B.1: no description, or the head of no fact."""
    rows = store.query("MATCH (e:Entity) WHERE e.origin = 'curated' "
                       "OPTIONAL MATCH (e)-[r:RELATED]->(:Entity) "
                       "RETURN e.id AS id, e.description AS d, count(r) AS heads")
    return {r["id"] for r in rows if not (r["d"] or "").strip() or r["heads"] == 0}


def measure(mode: str, kg: Path, questions: list[str], embedder_spec: str) -> dict:
    emb, _ = make_embedder(embedder_spec, fallback=False)  # a figure from another embedder would mislead
    with tempfile.TemporaryDirectory() as tmp:
        store = GraphStore.open(Path(tmp) / "db", embedder_id=emb.id, dim=emb.dim)
        try:
            report = import_kg(store, emb, kg, entity_filter=mode)  # type: ignore[arg-type]
            failing = _failing(store)
            slots = taken = 0
            for vec in emb.embed(questions):
                hits = store.vector_search("Entity", vec, K_E, where={"origin": "curated"})
                slots += len(hits)
                taken += sum(1 for e, _ in hits if e in failing)
        finally:
            store.close()
    out = {k: v for k, v in report.to_dict().items() if k not in ("bad_rows", "bad_entity_rows", "seconds")}
    out["seed_slots"] = {"questions": len(questions), "slots": slots, "to_entities_failing_b1": taken,
                         "share": round(taken / slots, 3) if slots else None}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kg", type=Path, default=DATA / "kg_2wiki_evidence")
    ap.add_argument("--questions", type=Path, default=DATA / "2wikimultihopqa" / "questions.jsonl")
    ap.add_argument("--embedder", default="hashing")
    args = ap.parse_args()
    questions = [json.loads(line)["question"] for line in args.questions.read_text(encoding="utf-8").splitlines()
                 if line.strip()]
    print(json.dumps({mode: measure(mode, args.kg, questions, args.embedder) for mode in ENTITY_FILTERS}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
