"""kg-infused's offline heuristics (KG-Infused RAG without an LLM): triple selection, subgraph
summary, query expansion, passage note and KG-augmented note.

All rules are ours (the paper always uses an LLM); ``kgviz.tasks.kg_infused`` holds the prompts
and parsers they stand in for, and labels each result with the rule that produced it.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import numpy as np

from kgviz.embedding import Embedder
from kgviz.offline.stem import stem
from kgviz.offline.stopwords import STOPWORDS as _STOP
from kgviz.task_results import KgInfusedSelection
from kgviz.text import split_sentences

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)
# sentences the offline passage note embeds at most (bounds latency with a model embedder)
_MAX_NOTE_SENTENCES = 400



def stems(text: str) -> set[str]:
    """Stemmed content words (kgviz.offline.stem), so "director"/"directed" and "births"/"birth" meet."""
    return set(_stems(text))


# the same triples and passage sentences are scored in every activation round, run and session
@lru_cache(maxsize=1 << 15)
def _stems(text: str) -> frozenset[str]:
    return frozenset(stem(w) for w in (m.lower() for m in _WORD.findall(text)) if w not in _STOP and len(w) > 1)


# Question words -> the KG relation words they ask about (ours, offline only). Embeddings of a
# question ("where was X born?") and of a triple ("X place of birth Y") share few words; these cues
# bridge the commonest gaps between question phrasing and Wikidata-style relation names.
# Values are relation words, stemmed once below like every word they are compared with.
_RELATION_CUE_WORDS: dict[str, tuple[str, ...]] = {
    "where": ("place", "location", "country", "city"),
    "when": ("date", "year", "time", "inception", "publication"),
    "born": ("birth",), "birth": ("born",),
    "died": ("death",), "die": ("death",), "dies": ("death",), "death": ("died",),
    "older": ("birth",), "younger": ("birth",), "age": ("birth",), "old": ("birth",), "lived": ("birth", "death"),
    "later": ("date",), "earlier": ("date",), "first": ("date",), "recent": ("date",),
    "nationality": ("citizenship", "country"), "from": ("country", "citizenship", "origin"),
    "country": ("citizenship", "origin"), "same": ("country", "citizenship"),
    "wife": ("spouse",), "husband": ("spouse",), "married": ("spouse",),
    "son": ("child",), "daughter": ("child",), "grandfather": ("father", "mother"),
    "grandmother": ("father", "mother"), "parent": ("father", "mother"),
    "directed": ("director",), "wrote": ("author", "writer"), "sang": ("performer",), "sung": ("performer",),
    "studied": ("education",), "school": ("education",), "university": ("education",),
}
RELATION_CUES: dict[str, tuple[str, ...]] = {
    w: tuple(dict.fromkeys(stem(v) for v in vs)) for w, vs in _RELATION_CUE_WORDS.items()
}



def cue_stems(question: str) -> set[str]:
    """The relation stems the question's words point at."""
    out: set[str] = set()
    for w in (m.lower() for m in _WORD.findall(question)):
        out.update(RELATION_CUES.get(w, ()))
    return out



def fact_sentence(c: dict[str, Any]) -> str:
    """A triple as a plain sentence: its stored text when it has one, else subject relation object."""
    text = str(c.get("text") or "").strip() or f"{c['subject']} {c['relation']} {c['object']}"
    return text if text.endswith((".", "!", "?")) else text + "."



def _cosines(embedder: Embedder, query: str, texts: list[str], vectors: Any = None) -> np.ndarray:
    if not texts:
        return np.zeros(0, dtype=np.float32)
    qv = np.asarray(embedder.embed([query]), dtype=np.float32)[0]
    mat = np.asarray(vectors, dtype=np.float32) if vectors is not None else np.asarray(embedder.embed(texts), dtype=np.float32)
    return mat @ qv


# weights of the offline selector (ours): the question decides, the memory (Table 13's "builds on
# the selected triples") and shared content words break ties
MEMORY_WEIGHT = 0.3
LEXICAL_WEIGHT = 0.3
CUE_WEIGHT = 0.15
DEFAULT_TOP_M = 5
DEFAULT_MIN_SCORE = 0.1



def offline_select(inputs: dict[str, Any], embedder: Embedder) -> KgInfusedSelection:
    cands: list[dict[str, Any]] = list(inputs["candidates"])
    if not cands:
        return KgInfusedSelection((), said_none=True)
    question = str(inputs["question"])
    texts = [fact_sentence(c) for c in cands]
    vectors = inputs.get("vectors")
    question_cos = _cosines(embedder, question, texts, vectors)
    score = question_cos
    previous = list(inputs.get("previous") or [])
    memory = np.zeros_like(question_cos)
    if previous:
        memory = MEMORY_WEIGHT * _cosines(embedder, " ".join(previous), texts, vectors)
        score = score + memory
    want, cues = stems(question), cue_stems(question)
    lexical = np.array([len(want & stems(t)) / max(1, len(want)) for t in texts], dtype=np.float32)
    cue_hit = np.array([bool(cues & stems(t)) for t in texts], dtype=np.float32)
    score = score + LEXICAL_WEIGHT * lexical + CUE_WEIGHT * cue_hit
    top_m = int(inputs.get("top_m", DEFAULT_TOP_M))
    floor = float(inputs.get("min_score", DEFAULT_MIN_SCORE))
    order = [int(i) for i in np.argsort(-score, kind="stable")]
    selected = [str(cands[i]["id"]) for i in order[:top_m] if score[i] >= floor]
    parts = {str(cands[i]["id"]): {"question": round(float(question_cos[i]), 4), "memory": round(float(memory[i]), 4),
                                   "question words": round(float(LEXICAL_WEIGHT * lexical[i]), 4),
                                   "relation cue": round(float(CUE_WEIGHT * cue_hit[i]), 4)} for i in order}
    return KgInfusedSelection(tuple(selected), said_none=not selected,
                              offline_scores={str(cands[i]["id"]): round(float(score[i]), 4) for i in order},
                              offline_parts=parts)



def offline_summary(triples: list[dict[str, Any]]) -> str:
    """The selected triples as sentences, in activation-round order, each once."""
    ordered = sorted(enumerate(triples), key=lambda it: (int(it[1].get("round", 0)), it[0]))
    seen: list[str] = []
    for _, t in ordered:
        s = fact_sentence(t)
        if s not in seen:
            seen.append(s)
    return " ".join(seen)


MAX_EXPANSION_NAMES = 5  # ours: enough to name the bridge entities without drowning the question



def offline_expand(question: str, summary: str, entities: list[str]) -> str:
    q_low = question.lower()
    q_stems = stems(question)
    s_low = summary.lower()
    extra: list[str] = []
    for name in entities:
        name = name.strip()
        if not name or name.lower() in q_low or name.lower() not in s_low:
            continue
        if stems(name) and stems(name) <= q_stems:
            continue
        if name not in extra:
            extra.append(name)
        if len(extra) == MAX_EXPANSION_NAMES:
            break
    return " ".join([question.strip()] + extra)


DEFAULT_NOTE_SENTENCES = 6



def offline_passage_note(inputs: dict[str, Any], embedder: Embedder) -> str:
    sents: list[tuple[int, str]] = []
    for i, p in enumerate(inputs["passages"]):
        sents.extend((i, s.strip()) for s in split_sentences(str(p["text"])) if s.strip())
    sents = sents[:_MAX_NOTE_SENTENCES]
    if not sents:
        return ""
    texts = [s for _, s in sents]
    vecs = np.asarray(embedder.embed(texts), dtype=np.float32)
    question = str(inputs["question"])
    queries = [question] + [q for q in [str(inputs.get("expanded_query") or "")] if q and q != question]
    qv = np.asarray(embedder.embed(queries), dtype=np.float32)
    cos = (vecs @ qv.T).max(axis=1)
    want = stems(question)
    overlap = np.array([len(want & stems(s)) / max(1, len(want)) for s in texts], dtype=np.float32)
    score = cos + LEXICAL_WEIGHT * overlap
    k = int(inputs.get("max_sentences", DEFAULT_NOTE_SENTENCES))
    keep = sorted(int(i) for i in np.argsort(-score, kind="stable")[:k])  # back in passage order
    out: list[str] = []
    for i in keep:
        if texts[i] not in out:
            out.append(texts[i])
    return " ".join(out)



def offline_kg_note(note: str, facts: list[str]) -> tuple[str, int]:
    """The note plus every fact it does not already state (a fact is stated when all its content
    words occur in the note). Returns the text and how many facts were added."""
    have = stems(note)
    added: list[str] = []
    for f in facts:
        words = stems(f)
        if words and words <= have:
            continue
        if f not in added:
            added.append(f)
            have |= words
    return " ".join([t for t in [note.strip()] if t] + added), len(added)
