"""The offline toolkit stays a leaf: plain text rules that tasks, extraction and the judge call."""
from __future__ import annotations

import ast
import re
from pathlib import Path

OFFLINE = Path(__file__).resolve().parents[2] / "kgviz" / "offline"
# what a text heuristic may need: text utilities, types, the typed task values it returns (a leaf
# module), prompts' answer constants, the embedder protocol, answer normalisation, the claim model
# and extracted triples - all leaves below offline, none of providers, verify or index
ALLOWED = ("kgviz.offline", "kgviz.text", "kgviz.types", "kgviz.task_results", "kgviz.errors", "kgviz.prompts.answer",
           "kgviz.embedding", "kgviz.answer_norm", "kgviz.claims", "kgviz.facts.triples")


def _kgviz_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kgviz"):
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names if a.name.startswith("kgviz"))
    return names


def test_the_toolkit_imports_no_task_method_store_or_ui_module() -> None:
    outside = {f"{p.name}: {m}" for p in OFFLINE.glob("*.py") for m in _kgviz_imports(p)
               if not m.startswith(ALLOWED)}
    assert not outside


def test_the_toolkit_holds_every_offline_heuristic() -> None:
    names = {p.stem for p in OFFLINE.glob("*.py")}
    assert {"stopwords", "stem", "qtype", "extract", "answer", "kg_rag", "kg_infused", "claims", "judge"} <= names


def test_no_stemmer_or_question_classifier_outside_the_toolkit() -> None:
    # the four stemmers and two classifiers that drifted apart lived in tasks/ and verify/
    kgviz = OFFLINE.parent
    defined = re.compile(r"^def (_?stem|question_type|answer_type)\(", re.M)
    found = [str(p.relative_to(kgviz)) for p in kgviz.rglob("*.py")
             if p.relative_to(kgviz).parts[0] != "offline" and defined.search(p.read_text(encoding="utf-8"))]
    assert found == []
