"""The offline toolkit's one stemmer, so that "designed" meets "design" in content-word overlap.

``stem`` is Snowball's English stemmer (Porter2, the ``snowballstemmer`` package) with two rules
of ours before and after it, both needed by callers that compare a question with facts:

- irregular past forms map to their base first ("built" -> "build", "born" -> "birth"), since no
  suffix rule can see that "wrote" is "write";
- an agent-noun ending "-er"/"-or" left by Snowball is cut when at least four letters remain, so
  "director" meets "directed" and "founder" meets "founded" (Snowball keeps agent nouns apart
  from their verbs; a question asks "who directed", a fact says "director").

Known gap: an agent noun of a verb ending in "e" keeps a different stem ("writer" -> "writ",
"write" -> "write"); both sides of a comparison are stemmed alike, so only that pair misses.

Used by the extractive answer, kg-rag's and kg-infused's offline ranking and the offline judge.
Stems are lower-case; a possessive "'s" and surrounding quotes are dropped.
"""
from __future__ import annotations

import threading
from functools import lru_cache

import snowballstemmer

# common irregular past forms, mapped to one stem so "built" matches "build" and "born" "birth"
IRREGULAR_STEMS = {"built": "build", "born": "birth", "bore": "birth", "wrote": "write", "written": "write",
                   "won": "win", "led": "lead", "made": "make", "began": "begin", "begun": "begin", "ran": "run",
                   "sank": "sink", "sunk": "sink", "sold": "sell", "bought": "buy", "held": "hold", "gave": "give",
                   "given": "give", "took": "take", "taken": "take", "met": "meet", "found": "find", "grew": "grow",
                   "drew": "draw", "drawn": "draw", "left": "leave", "became": "become", "kept": "keep",
                   "taught": "teach", "spent": "spend", "lost": "lose", "chose": "choose", "chosen": "choose"}

_AGENT_SUFFIXES = ("er", "or")
_MIN_AGENT_ROOT = 4  # "river", "tower", "order" keep their ending; "director", "founder" lose it
# a Snowball stemmer object keeps state while it stems, so threads (parallel eval) share it under
# a lock; the cache makes the lock rare
_SNOWBALL = snowballstemmer.stemmer("english")
_SNOWBALL_LOCK = threading.Lock()


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The stem of one word (see the module docstring)."""
    w = word.lower().strip("'\u2018\u2019\"\u201c\u201d")
    if w.endswith(("'s", "\u2019s")):
        w = w[:-2]
    w = IRREGULAR_STEMS.get(w, w)  # then stemmed like any word: "became" -> "become" -> "becom"
    with _SNOWBALL_LOCK:
        s = _SNOWBALL.stemWord(w)
    for suffix in _AGENT_SUFFIXES:
        if s.endswith(suffix) and len(s) - len(suffix) >= _MIN_AGENT_ROOT:
            return s[: -len(suffix)]
    return s
