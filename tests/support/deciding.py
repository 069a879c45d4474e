"""The deciding-number check (issue 22, point 1): on a select or score step, a node that was not
chosen but shows a higher score than a chosen one must say why (``reason`` on the node), or the
screen tells a student the method picked the worse option.

"Shown score" is what the step panel and the player draw (``kgviz.viz.step_panel``): the step's
``scores[id]`` when it has one, else the node's own ``score``; roles are the strongest per node,
as the graph draws them. ``python -m tests.support.deciding`` runs every method offline on every
sample question and prints the counts (``--json`` the offending steps). A node that was not taken
is one in role rejected or candidate; taken is chosen or seed.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

DECIDING_KINDS = ("select", "score")  # the steps issue 22 counts; ``count`` also reports every step
_TAKEN = ("chosen", "seed")
_NOT_TAKEN = ("rejected", "candidate")
_STRENGTH = {"chosen": 5, "seed": 4, "context": 3, "rejected": 2, "candidate": 1}  # as kgviz.viz.trace draws


def shown_scores(step: Any) -> dict[str, float]:
    """Node id -> the score the trace gives it: the node's own ``score``, else ``step.scores``."""
    out = {str(k): float(v) for k, v in (step.scores or {}).items()
           if isinstance(v, (int, float)) and not isinstance(v, bool)}
    for n in step.nodes:
        if n.score is not None:
            out[n.id] = float(n.score)
    return out


def disagreeing(step: Any) -> list[str]:
    """Ids whose node ``score`` differs from the step's ``scores`` entry: two numbers for one node,
    so the player (which sizes by one) and the table or JSON (which read the other) disagree."""
    return [n.id for n in step.nodes if n.score is not None and n.id in step.scores
            and abs(float(step.scores[n.id]) - float(n.score)) > 1e-9]


def unexplained(step: Any) -> list[str]:
    """Ids of the step's nodes that were not taken (rejected, candidate), show a higher score than
    a taken one (chosen, seed) and carry no ``reason``."""
    role: dict[str, str] = {}
    reason: dict[str, str] = {}
    for n in step.nodes:
        if n.id not in role or _STRENGTH.get(n.role, 0) > _STRENGTH.get(role[n.id], 0):
            role[n.id] = n.role
        if getattr(n, "reason", ""):
            reason[n.id] = n.reason
    scores = shown_scores(step)
    taken = [scores[i] for i, r in role.items() if r in _TAKEN and i in scores]
    if not taken:
        return []
    low = min(taken)
    return [i for i, r in role.items() if r in _NOT_TAKEN and i in scores and scores[i] > low + 1e-9
            and not reason.get(i)]


@dataclass
class Count:
    deciding_steps: int = 0  # select / score steps
    deciding_unexplained: int = 0  # of those, steps with an unexplained node
    all_steps: int = 0
    all_unexplained: int = 0  # any step kind
    select_steps: int = 0  # kind select only: the figure issue 22 quotes (51 of 133 on main)
    select_unexplained: int = 0
    disagreeing: int = 0  # steps where a node's score and step.scores differ
    where: list[dict[str, Any]] = field(default_factory=list)


def count(runs: Iterable[Any]) -> Count:
    out = Count()
    for run in runs:
        for s in run.trace:
            ids, differ = unexplained(s), disagreeing(s)
            deciding = s.kind in DECIDING_KINDS
            out.all_steps += 1
            out.deciding_steps += deciding
            out.all_unexplained += bool(ids)
            out.deciding_unexplained += bool(ids) and deciding
            out.select_steps += s.kind == "select"
            out.select_unexplained += bool(ids) and s.kind == "select"
            out.disagreeing += bool(differ)
            if ids or differ:
                out.where.append({"method": run.method, "question": run.question, "step": s.index + 1,
                                  "kind": s.kind, "title": s.title, "unexplained": ids, "disagreeing": differ})
    return out


def sample_runs(db: Path, methods: Sequence[str] | None = None) -> list[Any]:
    """Every method (or ``methods``) offline on every sample question."""
    from kgviz.methods.registry import list_methods
    from kgviz.run import run_method
    from tests.support import golden

    ctx = golden.build_graph(golden.ROOT / "sample_data" / "corpus", db)
    try:
        qs = golden.questions(golden.ROOT / "sample_data" / "questions.jsonl")
        return [run_method(m, q, ctx) for q in qs for m in (methods or list_methods())]
    finally:
        ctx.store.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print every offending step")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        runs = sample_runs(Path(tmp) / "db")
    c = count(runs)
    print(f"select/score steps: {c.deciding_unexplained} of {c.deciding_steps} show a rejected or candidate node "
          "above a chosen one with no reason")
    print(f"select steps: {c.select_unexplained} of {c.select_steps}")
    print(f"all steps: {c.all_unexplained} of {c.all_steps}; steps whose node score and step score differ: "
          f"{c.disagreeing}")
    for m in dict.fromkeys(r.method for r in runs):
        mc = count([r for r in runs if r.method == m])
        print(f"  {m}: {mc.deciding_unexplained} of {mc.deciding_steps} select/score, {mc.all_unexplained} of "
              f"{mc.all_steps} steps, {mc.disagreeing} disagreeing")
    if args.json:
        print(json.dumps(c.where, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
