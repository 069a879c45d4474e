"""The one stopword list of the offline toolkit and its documented extensions."""
from __future__ import annotations

import re
from pathlib import Path

from kgviz.offline.stopwords import CLAIM_STOPWORDS, ENGLISH, PLAN_STOPWORDS, STOPWORDS

KGVIZ = Path(__file__).resolve().parents[2] / "kgviz"


def test_extensions_only_add_to_the_one_list() -> None:
    assert ENGLISH < STOPWORDS < PLAN_STOPWORDS and STOPWORDS < CLAIM_STOPWORDS
    assert PLAN_STOPWORDS - STOPWORDS == {"called", "named", "name", "first", "last"}
    assert CLAIM_STOPWORDS - STOPWORDS == {"answer"}


def test_the_list_holds_function_words_not_content_words() -> None:
    assert {"the", "whose", "might", "through", "yes"} <= STOPWORDS
    assert not {"born", "river", "designed", "city", "year"} & STOPWORDS


def test_no_module_outside_the_toolkit_keeps_its_own_stopword_list() -> None:
    # a frozenset named like a stopword list, written inline, outside kgviz/offline
    own = re.compile(r"^_?[A-Z_]*STOP[A-Z_]*\s*=\s*frozenset\(", re.M)
    found = [str(p.relative_to(KGVIZ)) for p in KGVIZ.rglob("*.py")
             if p.relative_to(KGVIZ).parts[0] != "offline" and own.search(p.read_text(encoding="utf-8"))]
    # facts/triples.py keeps NON_ENTITY_WORDS: words that can never be an entity name in an LLM's
    # reply (it holds "none", "null", "unknown"), a parser's rule rather than a stopword list
    assert found == []
