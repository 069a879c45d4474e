"""Reasoning tasks of the `kg-rag` method (Chain of Explorations): plan, choose, evaluate.

Each task renders a prompt from ``kgviz.prompts.kg_rag``, parses a (possibly chatty) reply, and
has a deterministic offline heuristic. All of it is ours: the paper summary only says that CoE
combines vector search, Cypher queries and LLM ranking; the plan and evaluate steps, the prompts,
the parsers and the heuristics are written for kgviz.

Parsers never trust the reply beyond what the method offered: ``kgrag_choose`` keeps only
numbers/ids of the candidates that were shown and records everything else under ``ignored``; when
a reply has a ``CHOICE:``/``DECISION:`` line only that line counts (numbers in the chatter around
it are not choices). Missing plan parts are filled from the offline plan and listed in ``notes``;
an evaluate reply naming no decision gives CONTINUE with ``parsed=False``; nothing is silent.

Offline heuristics (deterministic):
- plan: capitalised spans and quoted strings of the question are the entities (a sentence-initial
  function word is skipped), its other content words the relations; hops = the number of relation
  words that are not type nouns ("film", "town", ...), clamped to 1..3.
- choose: similarity + RELATION_WEIGHT x share of planned relations the path lacks that the fact
  names + ENTITY_WEIGHT x share of planned entities the path lacks that it names + LEXICAL_WEIGHT
  x share of question words + NOVELTY_BONUS when it reaches an unvisited node; best ``width``.
- evaluate: STOP when the last hop's facts hold an answer of the question's type (a year for
  "when", a name for "who"/"where"/"which town", a number for "how many"), the facts mention every
  planned entity, the planned hops are done, and the planned relations appear (waived one hop past
  the plan); else CONTINUE. Offline never backtracks (only a dead end does).

Inputs
------
kgrag_plan:     question, max_hops
kgrag_choose:   question, plan, path_facts (list[str]), candidates (list of dicts with n, id, fact,
                score, target_visited), width
kgrag_evaluate: question, plan, facts (list[str]), new_facts (list[str]), hops_done, max_hops,
                allow_backtrack
"""
from __future__ import annotations

import json
import re
from typing import Any

from kgviz.prompts import kg_rag as P
from kgviz.providers.base import Embedder
from kgviz.reasoning import Task, register
from kgviz.tasks.rules import says_insufficient

# ------------------------------------------------------------------------------------------------
# shared text helpers
_STOP = frozenset(
    """a an the of in on at to for from by with and or but as is are was were be been being do does
    did has have had what which who whom whose when where why how that this these those it its his
    her their there than then into onto about after before during between both either neither not
    no yes did can could would should will shall may might much many one ones also same other
    first last name named called""".split()
)
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


_SUFFIXES = ("ions", "ing", "ion", "ers", "ors", "ed", "er", "or", "es", "s", "e")


def _norm(word: str) -> str:
    """Lower-case and strip a common suffix, so "director" meets "directed" and "released" meets
    "release" (a crude stemmer, enough for word overlap)."""
    w = word.lower().strip("'’")
    if w.endswith("'s") or w.endswith("’s"):
        w = w[:-2]
    for suf in _SUFFIXES:
        if w.endswith(suf) and len(w) - len(suf) >= 4 and not w.endswith("ss"):
            return w[: -len(suf)]
    return w


def content_words(text: str) -> set[str]:
    return {_norm(w) for w in _WORD.findall(text) if w.lower() not in _STOP and len(w) > 1}


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


_FENCE = re.compile(r"<\s*/?\s*graph-data\s*>", re.I)


def fenced(text: object) -> str:
    """Document text placed inside <graph-data> fences, unable to close the fence itself."""
    return _FENCE.sub("[graph-data]", str(text))


def _clamp(n: int, lo: int, hi: int) -> int:
    return max(lo, min(hi, n))


# ------------------------------------------------------------------------------------------------
# kgrag_plan
def offline_plan(question: str, max_hops: int) -> dict[str, Any]:
    entities = capitalised_spans(question)
    ent_words = {_norm(w) for e in entities for w in _WORD.findall(e)}
    relations: list[str] = []  # surface words, deduplicated by stem
    stems: list[str] = []
    for w in _WORD.findall(question):
        n = _norm(w)
        if w[0].isupper() or n in ent_words or w.lower() in _STOP or len(n) < 3 or n.isdigit() or n in stems:
            continue
        relations.append(w.lower())
        stems.append(n)
    walk = [r for r in relations if r not in _TYPE_NOUNS]
    hops = _clamp(len(walk), 1, min(3, max_hops))
    return {"entities": entities, "relations": relations, "hops": hops, "notes": []}


def _split_items(text: str) -> list[str]:
    text = text.strip().strip("[]")
    parts = re.split(r";" if ";" in text else r",", text)
    out = []
    for p in parts:
        p = p.strip().strip("\"'“”*-•` ").strip()
        if p and p.lower() not in {"none", "n/a", "-"} and p not in out:
            out.append(p)
    return out


_PLAN_LABELS = re.compile(
    r"\b(ENTITIES|RELATIONS|HOPS)\**\s*[:=]\**\s*(.*?)\s*(?=\**\b(?:ENTITIES|RELATIONS|HOPS)\**\s*[:=]|\n|$)", re.I
)


def parse_plan(raw: str, inputs: dict[str, Any]) -> dict[str, Any]:
    max_hops = int(inputs.get("max_hops", 5))
    ents: list[str] | None = None
    rels: list[str] | None = None
    hops: int | None = None
    m = re.search(r"\{.*\}", raw, re.S)
    if m:
        try:
            obj = json.loads(m.group())
        except json.JSONDecodeError:
            obj = None
        if isinstance(obj, dict):
            if isinstance(obj.get("entities"), list):
                ents = [str(x).strip() for x in obj["entities"] if str(x).strip()]
            if isinstance(obj.get("relations"), list):
                rels = [str(x).strip() for x in obj["relations"] if str(x).strip()]
            if isinstance(obj.get("hops"), (int, float, str)) and re.fullmatch(r"\d+", str(obj["hops"]).strip()):
                hops = int(str(obj["hops"]).strip())
    # a label's body ends at the next label too: real models put all three on one line
    for label, body in _PLAN_LABELS.findall(raw):
        key = label.upper()
        if key == "ENTITIES" and ents is None:
            ents = _split_items(body)
        elif key == "RELATIONS" and rels is None:
            rels = _split_items(body)
        elif key == "HOPS" and hops is None:
            n = re.search(r"\d+", body)
            hops = int(n.group()) if n else None
    fallback = offline_plan(str(inputs["question"]), max_hops)
    notes: list[str] = []
    if not ents:
        ents = fallback["entities"]
        notes.append("reply named no entities: used capitalised spans of the question (offline heuristic)")
    if rels is None:
        rels = fallback["relations"]
        notes.append("reply had no RELATIONS line: used the question's content words (offline heuristic)")
    if hops is None:
        hops = fallback["hops"]
        notes.append(f"reply had no HOPS number: used the offline estimate {hops}")
    return {"entities": ents, "relations": rels, "hops": _clamp(hops, 1, max_hops), "notes": notes}


def _render_plan(inputs: dict[str, Any]) -> str:
    return P.PLAN.format(question=inputs["question"], max_hops=inputs.get("max_hops", 5))


def _offline_plan(inputs: dict[str, Any], embedder: Embedder) -> tuple[dict[str, Any], str]:
    return (
        offline_plan(str(inputs["question"]), int(inputs.get("max_hops", 5))),
        "plan: capitalised spans of the question as entities, other content words as relations, "
        "hops = number of non-type relation words (1..3)",
    )


def _plan_usable(plan: dict[str, Any]) -> str:
    # a reply from which every part of the plan had to be guessed is not worth replaying
    return "the reply held no plan (all three parts guessed offline)" if len(plan.get("notes") or []) >= 3 else ""


register(Task("kgrag_plan", "kg_rag.PLAN", _render_plan, parse_plan, _offline_plan,
              system=P.SYSTEM, max_tokens=300, usable=_plan_usable))


# ------------------------------------------------------------------------------------------------
# kgrag_choose
_CHOICE_LINE = re.compile(r"\bCHOICE\**\s*[:=]\**\s*([^\n]*)", re.I)
_ID_LIKE = re.compile(r"\b[a-z]{2,8}:[^\s,;()\[\]]+", re.I)
_INT = re.compile(r"(?<![\w.:])\d+(?![\w:])")


def parse_choice(raw: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """Map a reply to ids of shown candidates. Only a CHOICE line counts when there is one (so
    numbers in a chatty explanation are not taken as choices); otherwise the whole reply."""
    cands: list[dict[str, Any]] = list(inputs["candidates"])
    width = int(inputs.get("width", 1))
    lines = _CHOICE_LINE.findall(raw)
    text = lines[-1] if lines else raw
    picks: list[tuple[int, str]] = []  # (position in text, candidate id)
    masked = text
    for c in sorted(cands, key=lambda c: -len(str(c["id"]))):
        cid = str(c["id"])
        for m in re.finditer(re.escape(cid), masked):
            picks.append((m.start(), cid))
        masked = masked.replace(cid, " " * len(cid))
    ignored: list[str] = []
    for m in _ID_LIKE.finditer(masked):
        ignored.append(m.group().rstrip(".:"))
    masked = _ID_LIKE.sub(lambda m: " " * len(m.group()), masked)
    by_n = {int(c["n"]): str(c["id"]) for c in cands}
    for m in _INT.finditer(masked):
        n = int(m.group())
        if n in by_n:
            picks.append((m.start(), by_n[n]))
        else:
            ignored.append(m.group())
    chosen: list[str] = []
    for _, cid in sorted(picks):
        if cid not in chosen:
            chosen.append(cid)
    if len(chosen) > width:
        ignored.extend(f"{cid} (over width {width})" for cid in chosen[width:])
        chosen = chosen[:width]
    none = not chosen and bool(re.search(r"\bnone\b", text, re.I))
    return {"chosen": chosen, "ignored": ignored, "said_none": none, "from_choice_line": bool(lines)}


def _fmt_candidates(cands: list[dict[str, Any]]) -> str:
    return "\n".join(f"{c['n']}. {fenced(str(c['fact'])[:300])}  (similarity {float(c['score']):.2f})"
                     for c in cands)


def _render_choose(inputs: dict[str, Any]) -> str:
    plan = inputs["plan"]
    facts = inputs.get("path_facts") or []
    return P.CHOOSE.format(
        question=inputs["question"],
        plan_entities=", ".join(plan.get("entities") or []) or "(none named)",
        plan_relations=", ".join(plan.get("relations") or []) or "(none named)",
        path_facts="\n".join(f"- {fenced(f)}" for f in facts) or "(none yet)",
        candidates=_fmt_candidates(list(inputs["candidates"])),
        width=inputs.get("width", 1),
    )


# weights of the offline chooser (ours): similarity to the question/plan is the base; a fact that
# names a planned relation the path has not covered yet gets the largest bonus (that relation is
# the next link of the chain), question words a smaller one, and reaching an unvisited node a mild
# one (so the walk moves on rather than circling)
RELATION_WEIGHT = 0.3
ENTITY_WEIGHT = 0.2  # a fact naming a planned entity the path has not mentioned yet
LEXICAL_WEIGHT = 0.1
NOVELTY_BONUS = 0.05


_TYPE_STEMS = frozenset(_norm(t) for t in _TYPE_NOUNS)


def walk_relation_words(plan: dict[str, Any]) -> dict[str, str]:
    """stem -> surface word of the planned relations that name a link to walk (not the answer's
    type noun)."""
    out: dict[str, str] = {}
    for r in plan.get("relations") or []:
        for w in _WORD.findall(str(r)):
            n = _norm(w)
            if w.lower() not in _STOP and len(w) > 1 and n not in _TYPE_STEMS:
                out.setdefault(n, w.lower())
    return out


def walk_relations(plan: dict[str, Any]) -> set[str]:
    return set(walk_relation_words(plan))


def offline_choose(inputs: dict[str, Any]) -> dict[str, Any]:
    plan = inputs.get("plan") or {}
    q_words = content_words(str(inputs["question"]))
    covered = content_words(" ".join(str(f) for f in inputs.get("path_facts") or []))
    open_rel = walk_relations(plan) - covered
    open_ents = [e for e in plan.get("entities") or [] if not _covered(str(e), covered)]
    scored = []
    for rank, c in enumerate(inputs["candidates"]):
        have = content_words(str(c["fact"]))
        rel = len(open_rel & have) / len(open_rel) if open_rel else 0.0
        ent = sum(_covered(str(e), have) for e in open_ents) / len(open_ents) if open_ents else 0.0
        lex = len(q_words & have) / max(1, len(q_words))
        s = (float(c["score"]) + RELATION_WEIGHT * rel + ENTITY_WEIGHT * ent + LEXICAL_WEIGHT * lex
             + (0.0 if c.get("target_visited") else NOVELTY_BONUS))
        scored.append((-s, rank, str(c["id"]), s))
    scored.sort()
    width = int(inputs.get("width", 1))
    chosen = [cid for _, _, cid, _ in scored[:width]]
    return {"chosen": chosen, "ignored": [], "said_none": False, "from_choice_line": False,
            "offline_scores": {cid: round(s, 4) for _, _, cid, s in scored}}


def _offline_choose(inputs: dict[str, Any], embedder: Embedder) -> tuple[dict[str, Any], str]:
    return offline_choose(inputs), (
        f"choose: similarity + {RELATION_WEIGHT} x share of planned relations not yet on the path "
        f"+ {ENTITY_WEIGHT} x share of planned entities not yet on the path + {LEXICAL_WEIGHT} x share "
        f"of question words + {NOVELTY_BONUS} if the fact reaches an unvisited node; top `width`"
    )


def _choice_usable(choice: dict[str, Any]) -> str:
    if choice.get("chosen") or choice.get("said_none") or choice.get("from_choice_line"):
        return ""
    return "the reply named no candidate and no NONE"


register(Task("kgrag_choose", "kg_rag.CHOOSE", _render_choose, parse_choice, _offline_choose,
              system=P.SYSTEM, max_tokens=200, usable=_choice_usable))


# ------------------------------------------------------------------------------------------------
# kgrag_evaluate
_DECISION_LINE = re.compile(r"\bDECISION\**\s*[:=]\**\s*([^\n]*)", re.I)
_REASON_LINE = re.compile(r"\bREASON\**\s*[:=]\**\s*([^\n]*)", re.I)
_DECISION_WORDS = {"stop": "stop", "continue": "continue", "backtrack": "backtrack"}


# The stop rule (ours, issue 15): a 1.5B model wrote "DECISION: STOP" with "REASON: the facts do
# not say when he was born". A STOP whose own reason says the facts fall short
# (kgviz.tasks.rules.says_insufficient) is overruled to CONTINUE; the hop limit still ends a walk.
def reason_says_insufficient(reason: str) -> bool:
    return says_insufficient(reason)


def parse_decision(raw: str, inputs: dict[str, Any]) -> dict[str, Any]:
    out = _read_decision(raw)
    if out["decision"] == "stop" and out["parsed"] and reason_says_insufficient(out["reason"]):
        out["decision"] = "continue"
        out["overruled"] = "stop"
        out["reason"] = (f"{out['reason']} [STOP overruled to CONTINUE: the reason says the facts are "
                         "insufficient (kgviz rule)]")
    return out


def _read_decision(raw: str) -> dict[str, Any]:
    lines = _DECISION_LINE.findall(raw)
    text = lines[-1] if lines else raw
    found = [m.group(1).lower() for m in re.finditer(r"\b(stop|continue|backtrack)\b", text, re.I)]
    reason_m = _REASON_LINE.findall(raw)
    reason = reason_m[-1].strip() if reason_m else raw.strip()[:300]
    kinds = set(found)
    if lines and found:
        return {"decision": _DECISION_WORDS[found[0]], "reason": reason, "parsed": True}
    if len(kinds) == 1:
        return {"decision": found[0], "reason": reason, "parsed": True}
    return {"decision": "continue", "reason": "reply named no single decision (STOP/CONTINUE/BACKTRACK); "
            "treated as CONTINUE", "parsed": False}


def answer_type(question: str) -> str:
    q = question.strip().lower()
    if re.match(r"(when|(in |on )?(what|which) (year|date))\b", q) or " what year" in q:
        return "date"
    if re.match(r"how (many|much|old|long|far|tall|big)\b", q):
        return "number"
    if re.match(r"(who|whom|whose)\b", q):
        return "person"
    if re.match(r"where\b", q) or re.match(
            r"(in |at |from )?(which|what) (town|city|village|country|region|state|county|place|island)\b", q):
        return "place"
    if re.match(r"(is|are|was|were|do|does|did|can|has|have|had)\b", q):
        return "yesno"
    return "entity"


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
    words = content_words(entity) or {_norm(entity)}
    return len(words & fact_words) * 2 >= len(words)


def offline_evaluate(inputs: dict[str, Any]) -> dict[str, Any]:
    """Stop when the last hop's facts hold an answer of the question's type (the answer sits at
    the end of the chain), every planned entity is mentioned, the planned hops are done and the
    planned relations appear on the path (or one more hop than planned is done)."""
    question = str(inputs["question"])
    plan = inputs.get("plan") or {}
    facts = [str(f) for f in inputs.get("facts") or []]
    new = [str(f) for f in inputs.get("new_facts") or facts]
    kind = answer_type(question)
    ents = [str(e) for e in plan.get("entities") or []]
    fact_words = content_words("\n".join(facts))
    missing = [e for e in ents if not _covered(e, fact_words)]
    has_type = _has_answer_type(kind, question, "\n".join(new), ents)
    rels = walk_relation_words(plan)
    rel_missing = [w for stem, w in rels.items() if stem not in fact_words]
    hops_done, planned = int(inputs.get("hops_done", 0)), int(plan.get("hops", 1) or 1)
    # question words often differ from the graph's relation words ("tall" vs "high"): one hop past
    # the plan, missing relations no longer hold the walk back
    rel_ok = not rel_missing or hops_done > planned
    if has_type and not missing and rel_ok and hops_done >= planned:
        return {"decision": "stop", "reason": f"the last hop holds a {kind} answer candidate and the facts mention "
                "the planned entities and relations", "parsed": True}
    why = []
    if not has_type:
        why.append(f"no {kind} answer candidate in the last hop")
    if missing:
        why.append("entities not covered: " + ", ".join(missing))
    if not rel_ok:
        why.append("relations not covered: " + ", ".join(rel_missing))
    if hops_done < planned:
        why.append(f"{hops_done} of {planned} planned hops done")
    return {"decision": "continue", "reason": "; ".join(why), "parsed": True}


def _render_evaluate(inputs: dict[str, Any]) -> str:
    new = set(inputs.get("new_facts") or [])
    facts = [f"{'*' if f in new else '-'} {fenced(f)}" for f in inputs.get("facts") or []]
    allow = bool(inputs.get("allow_backtrack", True))
    plan = inputs.get("plan") or {}
    return P.EVALUATE.format(
        question=inputs["question"],
        planned_hops=plan.get("hops", "?"),
        hops_done=inputs.get("hops_done", 0),
        max_hops=inputs.get("max_hops", "?"),
        facts="\n".join(facts) or "(none)",
        backtrack_option=P.BACKTRACK_OPTION if allow else "",
        decisions="STOP | CONTINUE | BACKTRACK" if allow else "STOP | CONTINUE",
    )


def _offline_evaluate(inputs: dict[str, Any], embedder: Embedder) -> tuple[dict[str, Any], str]:
    return offline_evaluate(inputs), (
        "evaluate: stop when the last hop's facts contain an answer of the question's type (year "
        "for when, name for who/where, number for how many), the facts mention every planned "
        "entity and relation (relations are waived one hop past the plan), and the planned hops "
        "are done; else continue (offline never backtracks)"
    )


register(Task("kgrag_evaluate", "kg_rag.EVALUATE", _render_evaluate, parse_decision, _offline_evaluate,
              system=P.SYSTEM, max_tokens=200,
              usable=lambda d: "" if d.get("parsed") else "the reply named no single decision"))
