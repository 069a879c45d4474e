"""Document text with bidi overrides, ANSI escapes, C0 and C1 controls goes through every page
(AppTest) and the case file, and none of those characters reaches the screen raw (issue 28:
"Evil Corp" with bidi characters read "proC livE" in Explore, the Trace player, Retrieved
context and the case file's step table). kgviz.safe_text is the one rule: each is shown escaped."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from kgviz import compare as cmp
from kgviz.graph.store import GraphStore
from kgviz.index.pipeline import BuildParams, build
from kgviz.ingest import document_from_text
from kgviz.methods.base import MethodContext
from kgviz.methods.registry import list_methods
from kgviz.providers.embedders import HashingEmbedder
from kgviz.providers.offline import OfflineLLM
from kgviz.reasoning import Reasoner
from kgviz.safe_text import _UNSAFE_RE

pytestmark = pytest.mark.slow  # builds a graph and drives four pages and every method

ROOT = Path(__file__).resolve().parents[2]
EVIL = "\u202eEvil Corp\u202c"
TEXTS = {
    "Evil Corp": (f"{EVIL} was founded by Mara \x1b[31mVex\x1b[0m in 1921. {EVIL} is based in Tarn\u2066ova. "
                  f"Mara \x1b[31mVex\x1b[0m was born in Tarn\u2066ova in 1890. The harbour of Tarn\u2066ova "
                  f"was built by {EVIL} in 1930."),
    "Tarnova": (f"Tarn\u2066ova is a port town. {EVIL} employs Jon\x85Dee. Jon\x85Dee said that the "
                f"harbour\x07 was unsafe. Tarn\u2066ova lies on the coast."),
}
# the hostile characters as they sit in the texts above (the pages' inlined JavaScript libraries
# hold a few such characters in their own code, so the test looks for these sequences)
RAW = ("\u202eEvil", "Corp\u202c", "Tarn\u2066", "Jon\x85", "\x1b[31m", "\x1b[0m")
QUESTION = "Who founded \x1b[31mEvil Corp\x1b[0m?"  # a typed question carries C0 to the pages


def strings(message: Any) -> Iterator[str]:
    """Every string field of a protobuf message, nested messages included."""
    for field, value in message.ListFields():
        repeated = not isinstance(value, (str, bytes)) and not hasattr(value, "ListFields") and hasattr(value, "__iter__")
        values = value if repeated else [value]
        for v in values:
            if isinstance(v, str):
                yield v
            elif isinstance(v, bytes):
                continue
            elif hasattr(v, "ListFields"):
                yield from strings(v)


def raw_unsafe(at: AppTest) -> list[str]:
    """Shown text that holds a raw control or bidi character (with some context)."""
    found = []
    # a text input shows what the user typed (the question itself): not text kgviz displays
    texts = [(node.type, s) for node in _nodes(at) if node.type != "text_input" for s in strings(node.proto)]
    for df in at.dataframe:
        value = df.value
        if isinstance(value, pd.DataFrame):
            texts += [("dataframe", str(c)) for c in [*value.astype(str).to_numpy().ravel(), *value.columns]]
    for kind, t in texts:
        for raw in RAW:
            i = t.find(raw)
            if i >= 0:
                found.append(f"{kind}: {t[max(0, i - 30): i + 30]!r}")
    return sorted(set(found))


def _nodes(at: AppTest) -> Iterator[Any]:
    stack = [at._tree]
    while stack:
        node = stack.pop()
        if getattr(node, "proto", None) is not None:
            yield node
        stack.extend(getattr(node, "children", {}).values())


@pytest.fixture
def hostile_graph(app_env: Path) -> Path:
    emb = HashingEmbedder()
    docs = [document_from_text(text, title=title, source=f"{title}.txt") for title, text in TEXTS.items()]
    with GraphStore.open(app_env, embedder_id=emb.id, dim=emb.dim) as store:
        report = build(docs, store, Reasoner(OfflineLLM(), emb), BuildParams(workers=1))
        assert report.counts["Entity"] > 3
        texts = [r["t"] for r in store.query("MATCH (c:Chunk) RETURN c.text AS t")]
        # loading drops C0 controls (ESC, BEL) from documents; bidi and C1 characters stay
        assert any("\u202e" in t and "\x85" in t for t in texts)
    return app_env


def test_no_page_shows_a_control_or_bidi_character_raw(hostile_graph: Path) -> None:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180).run()
    at.switch_page("pages/explore.py").run()
    at.text_input[0].input("Evil").run()
    assert not at.exception, at.exception
    assert at.selectbox, "no entity found"
    leaks = {"explore": raw_unsafe(at)}

    at.switch_page("pages/trace.py").run()
    question = next(t for t in at.text_input if t.label == "Question")
    question.input(QUESTION).run()
    method = next(s for s in at.selectbox if s.label == "Method")
    for name in ("kg-rag", "ket-rag", "text-rag", "kg-infused"):
        method.set_value(name).run()
        next(b for b in at.button if b.label == "Run").click().run()
        assert not at.exception, (name, at.exception)
        leaks[f"trace {name}"] = raw_unsafe(at)
        method = next(s for s in at.selectbox if s.label == "Method")

    at.switch_page("pages/compare.py").run()
    next(t for t in at.text_input if t.label == "Question").input(QUESTION).run()
    next(b for b in at.button if b.label == "Compare").click().run()
    assert not at.exception, at.exception
    leaks["compare"] = raw_unsafe(at)
    bad = {k: v for k, v in leaks.items() if v}
    assert not bad, "\n".join(f"{k}: {x}" for k, v in bad.items() for x in v)


def test_the_case_file_shows_no_control_or_bidi_character_raw(hostile_graph: Path) -> None:
    emb = HashingEmbedder()
    with GraphStore.open(hostile_graph, embedder_id=emb.id, dim=emb.dim) as store:
        ctx = MethodContext(store, Reasoner(OfflineLLM(), emb))
        comparison = cmp.compare(QUESTION, list_methods(), ctx)
        page = cmp.case_file_html(comparison, store)
    leaks = [repr(page[max(0, m.start() - 40): m.start() + 40]) for m in _UNSAFE_RE.finditer(page)
             if m.group() not in "\n\t"]  # the case file inlines no library text: any raw one is a leak
    assert leaks == []
    assert "\\u202eEvil Corp" in page or "\\\\u202eEvil Corp" in page  # shown escaped, not dropped
