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

Offline heuristics (deterministic): ``kgviz.offline.kg_rag`` (plan, choose, evaluate).

Inputs
------
kgrag_plan:     question, max_hops
kgrag_choose:   question, plan (KgRagPlan or None), path_facts (list[str]), candidates (list of dicts with n, id, fact,
                score, target_visited), width
kgrag_evaluate: question, plan (KgRagPlan or None), facts (list[str]), new_facts (list[str]), hops_done, max_hops,
                allow_backtrack, seed_facts (list[str], optional: the seed triples' facts)
"""
from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

from kgviz.offline.kg_rag import (
    ENTITY_WEIGHT,
    LEXICAL_WEIGHT,
    NOVELTY_BONUS,
    RELATION_WEIGHT,
    clamp,
    offline_choose,
    offline_evaluate,
    offline_plan,
)
from kgviz.prompts import kg_rag as P
from kgviz.providers.base import Embedder
from kgviz.task_results import Decision, KgRagChoice, KgRagDecision, KgRagPlan
from kgviz.tasks.base import Task, register
from kgviz.tasks.rules import says_insufficient, strip_think

_FENCE = re.compile(r"<\s*/?\s*graph-data\s*>", re.I)


def fenced(text: object) -> str:
    """Document text placed inside <graph-data> fences, unable to close the fence itself."""
    return _FENCE.sub("[graph-data]", str(text))


# ------------------------------------------------------------------------------------------------
# kgrag_plan
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


def parse_plan(raw: str, inputs: dict[str, Any]) -> KgRagPlan:
    raw = strip_think(raw)
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
        ents = list(fallback.entities)
        notes.append("reply named no entities: used capitalised spans of the question (offline heuristic)")
    if rels is None:
        rels = list(fallback.relations)
        notes.append("reply had no RELATIONS line: used the question's content words (offline heuristic)")
    if hops is None:
        hops = fallback.hops
        notes.append(f"reply had no HOPS number: used the offline estimate {hops}")
    return KgRagPlan(tuple(ents), tuple(rels), clamp(hops, 1, max_hops), tuple(notes))


def _render_plan(inputs: dict[str, Any]) -> str:
    return P.PLAN.format(question=inputs["question"], max_hops=inputs.get("max_hops", 5))


def _offline_plan(inputs: dict[str, Any], embedder: Embedder) -> tuple[KgRagPlan, str]:
    return (
        offline_plan(str(inputs["question"]), int(inputs.get("max_hops", 5))),
        "plan: capitalised spans of the question as entities, other content words as relations, "
        "hops = number of non-type relation words (1..3)",
    )


def _plan_usable(plan: KgRagPlan) -> str:
    # a reply from which every part of the plan had to be guessed is not worth replaying
    return "the reply held no plan (all three parts guessed offline)" if len(plan.notes) >= 3 else ""


register(Task("kgrag_plan", "kg_rag.PLAN", _render_plan, parse_plan, _offline_plan,
              system=P.SYSTEM, max_tokens=300, usable=_plan_usable))


# ------------------------------------------------------------------------------------------------
# kgrag_choose
_CHOICE_LINE = re.compile(r"\bCHOICE\**\s*[:=]\**\s*([^\n]*)", re.I)
_ID_LIKE = re.compile(r"\b[a-z]{2,8}:[^\s,;()\[\]]+", re.I)
_INT = re.compile(r"(?<![\w.:])\d+(?![\w:])")


def parse_choice(raw: str, inputs: dict[str, Any]) -> KgRagChoice:
    """Map a reply to ids of shown candidates. Only a CHOICE line counts when there is one (so
    numbers in a chatty explanation are not taken as choices); otherwise the whole reply."""
    raw = strip_think(raw)
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
    return KgRagChoice(tuple(chosen), tuple(ignored), said_none=none, from_choice_line=bool(lines))


def _fmt_candidates(cands: list[dict[str, Any]]) -> str:
    return "\n".join(f"{c['n']}. {fenced(str(c['fact'])[:300])}  (similarity {float(c['score']):.2f})"
                     for c in cands)


def _render_choose(inputs: dict[str, Any]) -> str:
    plan: KgRagPlan | None = inputs["plan"]
    facts = inputs.get("path_facts") or []
    return P.CHOOSE.format(
        question=inputs["question"],
        plan_entities=", ".join(plan.entities if plan is not None else ()) or "(none named)",
        plan_relations=", ".join(plan.relations if plan is not None else ()) or "(none named)",
        path_facts="\n".join(f"- {fenced(f)}" for f in facts) or "(none yet)",
        candidates=_fmt_candidates(list(inputs["candidates"])),
        width=inputs.get("width", 1),
    )


def _offline_choose(inputs: dict[str, Any], embedder: Embedder) -> tuple[KgRagChoice, str]:
    return offline_choose(inputs), (
        f"choose: similarity + {RELATION_WEIGHT} x share of planned relations not yet on the path "
        f"+ {ENTITY_WEIGHT} x share of planned entities not yet on the path + {LEXICAL_WEIGHT} x share "
        f"of question words + {NOVELTY_BONUS} if the fact reaches an unvisited node; top `width`"
    )


def _choice_usable(choice: KgRagChoice) -> str:
    if choice.chosen or choice.said_none or choice.from_choice_line:
        return ""
    return "the reply named no candidate and no NONE"


register(Task("kgrag_choose", "kg_rag.CHOOSE", _render_choose, parse_choice, _offline_choose,
              system=P.SYSTEM, max_tokens=200, usable=_choice_usable))


# ------------------------------------------------------------------------------------------------
# kgrag_evaluate
_DECISION_LINE = re.compile(r"\bDECISION\**\s*[:=]\**\s*([^\n]*)", re.I)
_REASON_LINE = re.compile(r"\bREASON\**\s*[:=]\**\s*([^\n]*)", re.I)
_DECISION_WORDS: dict[str, Decision] = {"stop": "stop", "continue": "continue", "backtrack": "backtrack"}


# The stop rule (ours, issue 15): a 1.5B model wrote "DECISION: STOP" with "REASON: the facts do
# not say when he was born". A STOP whose own reason says the facts fall short
# (kgviz.tasks.rules.says_insufficient) is overruled to CONTINUE; the hop limit still ends a walk.
def reason_says_insufficient(reason: str) -> bool:
    return says_insufficient(reason)


def parse_decision(raw: str, inputs: dict[str, Any]) -> KgRagDecision:
    out = _read_decision(raw)
    if out.decision == "stop" and out.parsed and reason_says_insufficient(out.reason):
        out = replace(out, decision="continue", overruled="stop",
                      reason=f"{out.reason} [STOP overruled to CONTINUE: the reason says the facts are "
                      "insufficient (kgviz rule)]")
    return out


def _read_decision(raw: str) -> KgRagDecision:
    raw = strip_think(raw)
    lines = _DECISION_LINE.findall(raw)
    text = lines[-1] if lines else raw
    found = [m.group(1).lower() for m in re.finditer(r"\b(stop|continue|backtrack)\b", text, re.I)]
    reason_m = _REASON_LINE.findall(raw)
    reason = reason_m[-1].strip() if reason_m else raw.strip()[:300]
    kinds = set(found)
    if lines and found:
        return KgRagDecision(_DECISION_WORDS[found[0]], reason)
    if len(kinds) == 1:
        return KgRagDecision(_DECISION_WORDS[found[0]], reason)
    return KgRagDecision("continue", "reply named no single decision (STOP/CONTINUE/BACKTRACK); "
                         "treated as CONTINUE", parsed=False)


def _render_evaluate(inputs: dict[str, Any]) -> str:
    new = set(inputs.get("new_facts") or [])
    facts = [f"{'*' if f in new else '-'} {fenced(f)}" for f in inputs.get("facts") or []]
    allow = bool(inputs.get("allow_backtrack", True))
    plan: KgRagPlan | None = inputs.get("plan")
    return P.EVALUATE.format(
        question=inputs["question"],
        planned_hops=plan.hops if plan is not None else "?",
        hops_done=inputs.get("hops_done", 0),
        max_hops=inputs.get("max_hops", "?"),
        facts="\n".join(facts) or "(none)",
        backtrack_option=P.BACKTRACK_OPTION if allow else "",
        decisions="STOP | CONTINUE | BACKTRACK" if allow else "STOP | CONTINUE",
    )


def _offline_evaluate(inputs: dict[str, Any], embedder: Embedder) -> tuple[KgRagDecision, str]:
    return offline_evaluate(inputs), (
        "evaluate: stop when the last hop's facts or the seed facts contain an answer of the "
        "question's type (year for when, name for who/where, number for how many), the facts mention "
        "every planned entity and relation (relations are waived one hop past the plan), and the "
        "planned hops are done; else continue (offline never backtracks)"
    )


register(Task("kgrag_evaluate", "kg_rag.EVALUATE", _render_evaluate, parse_decision, _offline_evaluate,
              system=P.SYSTEM, max_tokens=200,
              usable=lambda d: "" if d.parsed else "the reply named no single decision"))
