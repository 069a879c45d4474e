"""kg-rag's offline heuristics (Chain of Explorations without an LLM): plan, choose, evaluate.

All rules are ours (the paper gives no offline variant); ``kgviz.tasks.kg_rag`` holds the prompts
and parsers they stand in for:

- plan: capitalised spans and quoted strings of the question are the entities (a sentence-initial
  function word is skipped), its other content words the relations; hops = the number of relation
  words that are not type nouns ("film", "town", ...), clamped to 1..3.
- choose: similarity + RELATION_WEIGHT x share of planned relations the path lacks that the fact
  names + ENTITY_WEIGHT x share of planned entities the path lacks that it names + LEXICAL_WEIGHT
  x share of question words + NOVELTY_BONUS when it reaches an unvisited node; best ``width``.
- evaluate: STOP when the last hop's facts or the seed facts hold an answer of the question's type
  (``kgviz.offline.qtype``), the facts mention every planned entity, the planned hops are done and
  the planned relations appear (waived one hop past the plan); else CONTINUE.
"""
from __future__ import annotations

import re
from typing import Any

from kgviz.offline.qtype import question_type
from kgviz.offline.stem import stem
from kgviz.offline.stopwords import PLAN_STOPWORDS as _STOP
from kgviz.task_results import KgRagChoice, KgRagDecision, KgRagPlan

_QUESTION_WORDS = frozenset("what which who whom whose when where why how is are was were do does did can in".split())
# generic type nouns: useful search words, but they name what the answer is, not a hop to walk
_TYPE_NOUNS = frozenset(
    "film movie book novel song album band company person city country place team group year date "
    "university school river state county town village country's people".split()
)
_CONNECTORS = frozenset("of the de da di von van la le du del and &".split())
_WORD = re.compile(r"[A-Za-z0-9][\w'’\-]*")
_YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b")
_MONTH = re.compile(r"\b(January|February|March|April|May|June|July|August|September|October|November|December)\b")
_NUMBER = re.compile(r"\b\d+(?:[.,]\d+)?\b")


def content_words(text: str) -> set[str]:
    return {stem(w) for w in _WORD.findall(text) if w.lower() not in _STOP and len(w) > 1}


def capitalised_spans(text: str) -> list[str]:
    """Runs of capitalised words (allowing "of", "the", ... inside), plus quoted strings."""
    spans: list[str] = [m.strip() for m in re.findall(r"[\"“]([^\"”]{2,80})[\"”]", text)]
    words = list(_WORD.finditer(text))
    cur: list[str] = []

    def flush() -> None:
        while cur and cur[-1].lower() in _CONNECTORS:
            cur.pop()
        if cur:
            span = " ".join(cur)
            if span not in spans:
                spans.append(span)
        cur.clear()

    for i, m in enumerate(words):
        w = m.group()
        gap = text[words[i - 1].end() : m.start()] if i else ""
        if cur and any(ch in gap for ch in ",;:?!()\"“”"):
            flush()
        if w[0].isupper():
            if i == 0 and (w.lower() in _QUESTION_WORDS or w.lower() in _STOP):
                continue  # sentence-initial capital, not a name
            cur.append(w)
        elif cur and w.lower() in _CONNECTORS:
            cur.append(w)
        else:
            flush()
    flush()
    return spans


def clamp(n: int, lo: int, hi: int) -> int:
    return max(lo, min(hi, n))


def offline_plan(question: str, max_hops: int) -> KgRagPlan:
    entities = capitalised_spans(question)
    ent_words = {stem(w) for e in entities for w in _WORD.findall(e)}
    relations: list[str] = []  # surface words, deduplicated by stem
    stems: list[str] = []
    for w in _WORD.findall(question):
        n = stem(w)
        if w[0].isupper() or n in ent_words or w.lower() in _STOP or len(n) < 3 or n.isdigit() or n in stems:
            continue
        relations.append(w.lower())
        stems.append(n)
    walk = [r for r in relations if r not in _TYPE_NOUNS]
    hops = clamp(len(walk), 1, min(3, max_hops))
    return KgRagPlan(tuple(entities), tuple(relations), hops)


# weights of the offline chooser (ours): similarity to the question/plan is the base; a fact that
# names a planned relation the path has not covered yet gets the largest bonus (that relation is
# the next link of the chain), question words a smaller one, and reaching an unvisited node a mild
# one (so the walk moves on rather than circling)
RELATION_WEIGHT = 0.3
ENTITY_WEIGHT = 0.2  # a fact naming a planned entity the path has not mentioned yet
LEXICAL_WEIGHT = 0.1
NOVELTY_BONUS = 0.05


_TYPE_STEMS = frozenset(stem(t) for t in _TYPE_NOUNS)


def walk_relation_words(plan: KgRagPlan | None) -> dict[str, str]:
    """stem -> surface word of the planned relations that name a link to walk (not the answer's
    type noun)."""
    out: dict[str, str] = {}
    for r in plan.relations if plan is not None else ():
        for w in _WORD.findall(str(r)):
            n = stem(w)
            if w.lower() not in _STOP and len(w) > 1 and n not in _TYPE_STEMS:
                out.setdefault(n, w.lower())
    return out


def walk_relations(plan: KgRagPlan | None) -> set[str]:
    return set(walk_relation_words(plan))


def offline_choose(inputs: dict[str, Any]) -> KgRagChoice:
    plan: KgRagPlan | None = inputs.get("plan")
    q_words = content_words(str(inputs["question"]))
    covered = content_words(" ".join(str(f) for f in inputs.get("path_facts") or []))
    open_rel = walk_relations(plan) - covered
    open_ents = [e for e in (plan.entities if plan is not None else ()) if not _covered(str(e), covered)]
    scored = []
    parts: dict[str, dict[str, float]] = {}
    for rank, c in enumerate(inputs["candidates"]):
        have = content_words(str(c["fact"]))
        rel = len(open_rel & have) / len(open_rel) if open_rel else 0.0
        ent = sum(_covered(str(e), have) for e in open_ents) / len(open_ents) if open_ents else 0.0
        lex = len(q_words & have) / max(1, len(q_words))
        terms = {"similarity": float(c["score"]), "planned relation": RELATION_WEIGHT * rel,
                 "planned entity": ENTITY_WEIGHT * ent, "question words": LEXICAL_WEIGHT * lex,
                 "new node": 0.0 if c.get("target_visited") else NOVELTY_BONUS}
        s = sum(terms.values())
        parts[str(c["id"])] = {k: round(v, 4) for k, v in terms.items()}
        scored.append((-s, rank, str(c["id"]), s))
    scored.sort()
    width = int(inputs.get("width", 1))
    chosen = [cid for _, _, cid, _ in scored[:width]]
    return KgRagChoice(tuple(chosen), offline_scores={cid: round(s, 4) for _, _, cid, s in scored},
                       offline_parts={cid: parts[cid] for _, _, cid, _ in scored})


def _has_answer_type(kind: str, question: str, facts_text: str, plan_entities: list[str]) -> bool:
    if kind == "date":
        q_years = set(_YEAR.findall(question))
        return any(y not in q_years for y in _YEAR.findall(facts_text)) or bool(_MONTH.search(facts_text))
    if kind == "number":
        q_nums = set(_NUMBER.findall(question))
        return any(n not in q_nums for n in _NUMBER.findall(facts_text))
    if kind in ("person", "place"):
        known = {s.lower() for s in plan_entities} | {s.lower() for s in capitalised_spans(question)}
        return any(s.lower() not in known for s in capitalised_spans(facts_text))
    if kind == "yesno":
        return True
    return bool(content_words(facts_text) - content_words(question))


def _covered(entity: str, fact_words: set[str]) -> bool:
    words = content_words(entity) or {stem(entity)}
    return len(words & fact_words) * 2 >= len(words)


def offline_evaluate(inputs: dict[str, Any]) -> KgRagDecision:
    """Stop when the last hop's facts hold an answer of the question's type (the answer sits at
    the end of the chain), every planned entity is mentioned, the planned hops are done and the
    planned relations appear on the path (or one more hop than planned is done)."""
    question = str(inputs["question"])
    plan: KgRagPlan | None = inputs.get("plan")
    facts = [str(f) for f in inputs.get("facts") or []]
    new = [str(f) for f in inputs.get("new_facts") or facts]
    # A seed triple sits at the start of the chain and can already hold the answer (vector search
    # may seed "X born in 1954"); it is never a hop's new fact, so it is counted here explicitly.
    seeds = [str(f) for f in inputs.get("seed_facts") or []]
    kind = question_type(question)
    ents = [str(e) for e in (plan.entities if plan is not None else ())]
    fact_words = content_words("\n".join(facts))
    missing = [e for e in ents if not _covered(e, fact_words)]
    has_type = _has_answer_type(kind, question, "\n".join(new + seeds), ents)
    rels = walk_relation_words(plan)
    rel_missing = [w for stem, w in rels.items() if stem not in fact_words]
    hops_done = int(inputs.get("hops_done", 0))
    planned = int(plan.hops or 1) if plan is not None else 1
    # question words often differ from the graph's relation words ("tall" vs "high"): one hop past
    # the plan, missing relations no longer hold the walk back
    rel_ok = not rel_missing or hops_done > planned
    if has_type and not missing and rel_ok and hops_done >= planned:
        return KgRagDecision("stop", f"the last hop holds a {kind} answer candidate and the facts mention "
                             "the planned entities and relations")
    why = []
    if not has_type:
        why.append(f"no {kind} answer candidate in the last hop")
    if missing:
        why.append("entities not covered: " + ", ".join(missing))
    if not rel_ok:
        why.append("relations not covered: " + ", ".join(rel_missing))
    if hops_done < planned:
        why.append(f"{hops_done} of {planned} planned hops done")
    return KgRagDecision("continue", "; ".join(why))
