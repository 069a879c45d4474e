"""Human labels survive a restart and a rebuild that adds an unrelated document (issue 25): the
labels file is not part of the graph, and what a label is keyed by (question text, method, answer
text; a claim's text; a context item's id) does not change when another document is added, since
chunk, triple and entity ids hash their own text and names. Each `kgviz build` runs in its own
process (a restart); the labels are made and read back through the same library calls the pages use."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kgviz import compare as cmp
from kgviz.config import Settings
from kgviz.evaluate import labels as lb
from kgviz.workspace import open_workspace

from eval_paths import ROOT

pytestmark = pytest.mark.slow
QUESTION = "In what year was the Tidewell Line founded?"
METHODS = ["kg-rag", "text-rag", "kg-infused"]
UNRELATED = """# Pellory Bakery

The Pellory Bakery is a family bakery in the mountain village of Drosk. It was opened in 1952 by the baker
Ilse Marrow, who learned her trade in a monastery kitchen. Today her grandson Pieter Marrow runs it.
"""


def _build(home: Path, db: Path, *paths: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "KGVIZ_DB")}
    env.update(KGVIZ_HOME=str(home), KGVIZ_LLM="offline", KGVIZ_EMBEDDER="hashing")
    done = subprocess.run([sys.executable, "-m", "kgviz.cli", "build", *map(str, paths), "--db", str(db)],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr


def _compare(home: Path, db: Path, monkeypatch: pytest.MonkeyPatch) -> cmp.Comparison:
    monkeypatch.setenv("KGVIZ_HOME", str(home))
    with open_workspace(Settings.from_env(), db_dir=db, llm_spec="offline", embedder_spec="hashing") as ws:
        return cmp.compare(QUESTION, METHODS, ws.method_context(), ["1898"])


def test_labels_stay_attached_to_the_same_run_claim_and_item_after_adding_a_document(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, db = tmp_path / "home", tmp_path / "ws"
    _build(home, db, ROOT / "sample_data" / "corpus")
    before = _compare(home, db, monkeypatch)
    made = {}
    for r in before.results:
        key = lb.label_key(QUESTION, r.method, r.run.answer)
        claim = r.verdict.claims[0]
        item = (claim.evidence or [i.id for i in r.run.context.items])[0]
        lb.save_label(db, key, lb.RunLabel(r.method != "kg-infused", f"run note {r.method}"))
        lb.save_claim_label(db, lb.claim_key(key, claim.text), lb.ClaimLabel(True, f"claim note {r.method}"))
        lb.save_item_label(db, lb.item_key(key, item), lb.ItemLabel(False, f"item note {r.method}"))
        made[r.method] = (r.run.answer, claim.text, item)
    saved = (db / lb.LABELS_FILE).read_bytes()

    extra = tmp_path / "pellory_bakery.md"
    extra.write_text(UNRELATED, encoding="utf-8")
    _build(home, db, extra)  # a new process adds a document to the same workspace
    assert (db / lb.LABELS_FILE).read_bytes() == saved  # the build leaves the labels file alone

    after = _compare(home, db, monkeypatch)
    labels = lb.load_labels(db)
    for r in after.results:
        answer, claim, item = made[r.method]
        assert r.run.answer == answer, f"{r.method}: the unrelated document changed the answer"
        mine = lb.for_run(labels, QUESTION, r.method, r.run.answer, [c.text for c in r.verdict.claims])
        assert mine.run == lb.RunLabel(r.method != "kg-infused", f"run note {r.method}")
        assert mine.claims == {claim: lb.ClaimLabel(True, f"claim note {r.method}")}
        assert mine.items == {item: lb.ItemLabel(False, f"item note {r.method}")}
        # the labelled item is still in this run's context under the same id
        assert item in {i.id for i in [*r.run.context.items, *r.run.context.sources]}
