"""SQuAD answer normalisation and whole-token containment: the primitives the answer metrics
(``kgviz.verify.metrics``), the gold funnel and the offline judge (``kgviz.offline.judge``) share.
A leaf: it imports nothing from kgviz, so ``offline`` uses it without importing ``verify``.

SQuAD normalisation: lowercase, drop punctuation, drop the articles a/an/the, collapse
whitespace. Containment is checked on whole normalised tokens, so "1898" is not found inside
"18980".
"""
from __future__ import annotations

import re
import string

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_DROP_PUNCT = str.maketrans("", "", string.punctuation)  # one C pass (a generator per character was ~60% of it)


def normalize_answer(text: str) -> str:
    """SQuAD normalisation (the order matters: punctuation goes before articles are matched)."""
    lowered = text.lower()
    no_punct = lowered.translate(_DROP_PUNCT)
    no_articles = _ARTICLES.sub(" ", no_punct)
    return " ".join(no_articles.split())


def contains(haystack: str, needle: str) -> bool:
    """Normalised ``needle`` occurs in normalised ``haystack`` as whole tokens."""
    n = normalize_answer(needle)
    return bool(n) and f" {n} " in f" {normalize_answer(haystack)} "
