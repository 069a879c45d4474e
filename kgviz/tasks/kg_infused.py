"""Reasoning tasks of the `kg-infused` method (KG-Infused RAG, paper 003).

| task                  | paper (prompt)            | value                                             |
|-----------------------|---------------------------|---------------------------------------------------|
| kginf_select_triples  | §3.4 step 1 (Tables 12/13)| KgInfusedSelection (kgviz.task_results)            |
| kginf_summarize       | §3.4 summary (Table 14)   | summary text                                      |
| kginf_expand_query    | §3.5 (Table 15)           | expanded query text                               |
| kginf_passage_note    | §3.6 (Table 11)           | passage note text                                 |
| kginf_kg_note         | §3.6 KG-guided KA (T. 16) | fact-enhanced note text                           |

Inputs
------
kginf_select_triples: question; candidates (list of dicts: n, id, subject, relation, object, text);
    previous (list of "<s | r | o>" strings already in the activation memory; non-empty means a
    later round, rendered with UPDATE_TRIPLES, Table 13); offline only: vectors (optional array of
    candidate embeddings aligned with candidates), top_m, min_score.
kginf_summarize: question; triples (list of dicts: subject, relation, object, text, round).
kginf_expand_query: question; summary; offline only: entities (names of the activated entities).
kginf_passage_note: question; passages (list of dicts: id, title, text); offline only:
    expanded_query, max_sentences.
kginf_kg_note: question; note; summary; offline only: facts (fact sentences, activation order).

Parsers never trust a reply beyond what was offered: selection keeps only shown triples (matched
by their text, bracket number or id) and records everything else under ``ignored``. Text replies
lose chatty preambles ("Sure, here is the summary:") and echoed labels ("New query:"); an empty
reply raises LLMOutputError. The offline heuristics (``kgviz.offline.kg_infused``) are ours (the
paper always uses an LLM).
"""
from __future__ import annotations

import re
from typing import Any

from kgviz.errors import LLMOutputError
from kgviz.facts.parse import MAX_LINE_REPEATS  # one loop rule for every free-text reply
from kgviz.offline.kg_infused import (
    CUE_WEIGHT,
    DEFAULT_MIN_SCORE,
    DEFAULT_NOTE_SENTENCES,
    DEFAULT_TOP_M,
    LEXICAL_WEIGHT,
    MAX_EXPANSION_NAMES,
    MEMORY_WEIGHT,
    offline_expand,
    offline_kg_note,
    offline_passage_note,
    offline_select,
    offline_summary,
)
from kgviz.prompts import kg_infused as P
from kgviz.providers.base import Embedder
from kgviz.task_results import KgInfusedSelection
from kgviz.tasks.base import Task, register

# ------------------------------------------------------------------------------------------------
# shared helpers


def triple_display(c: dict[str, Any]) -> str:
    return f"<{c['subject']} | {c['relation']} | {c['object']}>"


_LABEL_LINE = re.compile(r"^\W*(?:#+\s*)?(?:\*\*)?\s*({labels})\s*(?:\*\*)?\s*[:\-–]\s*(?:\*\*)?\s*(.*)$", re.I)
_THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.I | re.S)
_PREAMBLE = re.compile(r"^(?:sure|certainly|okay|ok|of course|here(?:'s| is| are)|below is|i (?:have|'ve))\b", re.I)


def clean_reply(raw: str, labels: tuple[str, ...], *, after_label: bool = False) -> str:
    """The substance of a free-text reply: code fences and <think> blocks dropped, a chatty first
    line ("Here is the note:") dropped, and an echoed label ("Summary:") removed from the *first*
    line only. Everything else is kept: a real note ending in "Note: the facts did not mention ..."
    once lost all but that last sentence when text before any labelled line was dropped (issue 15),
    and the KG-augmented note is kg-infused's only context. ``after_label`` (one-line answers such
    as the expanded query) instead keeps what follows the first labelled line anywhere."""
    text = _THINK.sub("\n", raw).strip()
    if text.startswith("```"):
        text = re.sub(r"^```[a-zA-Z]*\s*|\s*```$", "", text).strip()
    lines = text.splitlines()
    pattern = re.compile(_LABEL_LINE.pattern.format(labels="|".join(re.escape(lb) for lb in labels)), re.I)
    if after_label:
        for i, line in enumerate(lines):
            m = pattern.match(line)
            if m:
                lines = ([m.group(2)] if m.group(2).strip() else []) + lines[i + 1 :]
                break
    while lines and (not lines[0].strip() or (_PREAMBLE.match(lines[0].strip()) and lines[0].rstrip().endswith(":"))):
        lines = lines[1:]
    if lines:
        m = pattern.match(lines[0])
        if m:
            lines = ([m.group(2)] if m.group(2).strip() else []) + lines[1:]
    return "\n".join(_until_looping(lines)).strip()


def _until_looping(lines: list[str]) -> list[str]:
    """The lines before a line's ``MAX_LINE_REPEATS + 1``-th copy: a small model looping one
    sentence until max_tokens would otherwise fill the note (and the answer's context) with it."""
    seen: dict[str, int] = {}
    for i, line in enumerate(lines):
        key = " ".join(line.split()).lower()
        if key:
            seen[key] = seen.get(key, 0) + 1
            if seen[key] > MAX_LINE_REPEATS:
                return lines[:i]
    return lines


def _require(text: str, what: str, raw: str) -> str:
    if not text:
        raise LLMOutputError(f"the model returned no {what}: {raw[:200]!r}", hint="retry, or try another model")
    return text


# ------------------------------------------------------------------------------------------------
# kginf_select_triples (Tables 12 and 13)
_ANGLE = re.compile(r"<([^<>\n]{3,600})>")
_BRACKET_NUM = re.compile(r"\[\s*(\d{1,4})\s*\]")
_NUM_BEFORE = re.compile(r"\[\s*(\d{1,4})\s*\]\s*$")
_ID_LIKE = re.compile(r"\b(?:tri|rel):[^\s,;<>()\[\]]+")
_NUMBERS_ONLY = re.compile(r"^[\s\d,;.#&]*(?:and[\s\d,;.#&]*)*$", re.I)
_SELECT_LABEL = re.compile(r"^\W*(?:selected|chosen|relevant)?\s*triples?\s*:\s*", re.I | re.M)


def _norm_key(text: str) -> str:
    text = text.lower().strip().strip("\"'“”`*")
    text = re.sub(r"\s*\|\s*", "|", text)
    text = re.sub(r"\s*,\s*", ", ", text)
    return re.sub(r"\s+", " ", text)


def parse_selection(raw: str, inputs: dict[str, Any]) -> KgInfusedSelection:
    """Map a reply to shown candidates. An angle-bracket triple counts when its text matches a
    candidate (either ``|`` or comma separated); when it does not, the ``[n]`` right before it
    decides. Outside brackets, candidate ids and ``[n]`` numbers count; a reply of bare numbers
    ("1, 4") is read as numbers. Everything else that looks like a pick is recorded as ignored."""
    cands: list[dict[str, Any]] = list(inputs["candidates"])
    by_key: dict[str, str] = {}
    for c in cands:
        by_key.setdefault(_norm_key(f"{c['subject']}|{c['relation']}|{c['object']}"), str(c["id"]))
        by_key.setdefault(_norm_key(f"{c['subject']}, {c['relation']}, {c['object']}"), str(c["id"]))
    by_n = {int(c["n"]): str(c["id"]) for c in cands}
    by_id = {str(c["id"]) for c in cands}
    picks: list[tuple[int, str]] = []
    ignored: list[str] = []
    masked = list(raw)

    def mask(a: int, b: int) -> None:
        masked[a:b] = " " * (b - a)

    for m in _ANGLE.finditer(raw):
        cid = by_key.get(_norm_key(m.group(1)))
        line_start = raw.rfind("\n", 0, m.start()) + 1
        num = _NUM_BEFORE.search(raw[line_start : m.start()])
        if cid is None and num and int(num.group(1)) in by_n:
            cid = by_n[int(num.group(1))]
        if cid is not None:
            picks.append((m.start(), cid))
        else:
            ignored.append(m.group(0))
        mask(line_start + num.start() if num else m.start(), m.end())
    rest = "".join(masked)
    for cid in sorted(by_id, key=len, reverse=True):
        for m in re.finditer(re.escape(cid), rest):
            picks.append((m.start(), cid))
        rest = rest.replace(cid, " " * len(cid))
    for m in _ID_LIKE.finditer(rest):
        ignored.append(m.group().rstrip(".:"))
    rest = _ID_LIKE.sub(lambda m: " " * len(m.group()), rest)
    numbers = [(m.start(), m.group(1)) for m in _BRACKET_NUM.finditer(rest)]
    if not numbers and not picks:
        body = _SELECT_LABEL.sub("", rest).strip()
        if body and _NUMBERS_ONLY.match(body):
            numbers = [(m.start(), m.group()) for m in re.finditer(r"\d+", rest)]
    for pos, n in numbers:
        if int(n) in by_n:
            picks.append((pos, by_n[int(n)]))
        else:
            ignored.append(f"[{n}]")
    selected: list[str] = []
    for _, cid in sorted(picks):
        if cid not in selected:
            selected.append(cid)
    said_none = not selected and bool(re.search(r"\bnone\b", raw, re.I))
    return KgInfusedSelection(tuple(selected), tuple(ignored), said_none=said_none)


def _render_select(inputs: dict[str, Any]) -> str:
    triples = "\n".join(f"[{c['n']}] {triple_display(c)}" for c in inputs["candidates"]) or "(none)"
    previous = list(inputs.get("previous") or [])
    if previous:
        return P.UPDATE_TRIPLES.format(question=inputs["question"], previous="\n".join(previous), triples=triples)
    return P.SELECT_TRIPLES.format(question=inputs["question"], triples=triples)


def _offline_select(inputs: dict[str, Any], embedder: Embedder) -> tuple[KgInfusedSelection, str]:
    top_m = int(inputs.get("top_m", DEFAULT_TOP_M))
    floor = float(inputs.get("min_score", DEFAULT_MIN_SCORE))
    return offline_select(inputs, embedder), (
        f"select: cosine(triple, question) + {MEMORY_WEIGHT} x cosine(triple, selected triples) "
        f"+ {LEXICAL_WEIGHT} x share of the question's content words + {CUE_WEIGHT} if the triple has a "
        f"relation the question cues ('born' -> birth, 'where' -> place, ...); top {top_m} scoring >= {floor}"
    )


register(Task("kginf_select_triples", "kg_infused.SELECT_TRIPLES", _render_select, parse_selection,
              _offline_select, system=P.SYSTEM, max_tokens=1000))


# ------------------------------------------------------------------------------------------------
# kginf_summarize (Table 14)
def _render_summarize(inputs: dict[str, Any]) -> str:
    triples = "\n".join(triple_display(t) for t in inputs["triples"]) or "(none)"
    return P.SUMMARIZE.format(question=inputs["question"], triples=triples)


def _parse_summary(raw: str, inputs: dict[str, Any]) -> str:
    return _require(clean_reply(raw, ("summary",)), "summary", raw)


def _offline_summarize(inputs: dict[str, Any], embedder: Embedder) -> tuple[str, str]:
    return offline_summary(inputs["triples"]), "summary: the selected triples as sentences, in activation-round order"


register(Task("kginf_summarize", "kg_infused.SUMMARIZE", _render_summarize, _parse_summary, _offline_summarize,
              system=P.SYSTEM, max_tokens=1000))


# ------------------------------------------------------------------------------------------------
# kginf_expand_query (Table 15)
def _render_expand(inputs: dict[str, Any]) -> str:
    return P.EXPAND_QUERY.format(question=inputs["question"], summary=inputs.get("summary") or "(none)")


def _parse_expand(raw: str, inputs: dict[str, Any]) -> str:
    text = clean_reply(raw, ("new query", "new short query", "query", "expanded query"), after_label=True)
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    line = line.strip("*`").strip().strip("\"'“”").strip()
    return _require(line, "query", raw)


def _offline_expand(inputs: dict[str, Any], embedder: Embedder) -> tuple[str, str]:
    q = offline_expand(str(inputs["question"]), str(inputs.get("summary") or ""), list(inputs.get("entities") or []))
    return q, (f"expand: the question plus up to {MAX_EXPANSION_NAMES} activated entity names the summary "
               "mentions and the question does not")


register(Task("kginf_expand_query", "kg_infused.EXPAND_QUERY", _render_expand, _parse_expand, _offline_expand,
              system=P.SYSTEM, max_tokens=200))


# ------------------------------------------------------------------------------------------------
# kginf_passage_note (Table 11)
def _render_passage_note(inputs: dict[str, Any]) -> str:
    passages = "\n".join(f"[{i}] {p.get('title') or ''}\n{p['text']}" for i, p in enumerate(inputs["passages"], 1))
    return P.PASSAGE_NOTE.format(question=inputs["question"], passages=passages or "(none)")


def _parse_note(raw: str, inputs: dict[str, Any]) -> str:
    return _require(clean_reply(raw, ("note", "passage note")), "note", raw)


def _offline_passage_note(inputs: dict[str, Any], embedder: Embedder) -> tuple[str, str]:
    k = int(inputs.get("max_sentences", DEFAULT_NOTE_SENTENCES))
    return offline_passage_note(inputs, embedder), (
        f"passage note: the {k} passage sentences closest to the question or the expanded query "
        f"(cosine + {LEXICAL_WEIGHT} x shared content words), in passage order"
    )


register(Task("kginf_passage_note", "kg_infused.PASSAGE_NOTE", _render_passage_note, _parse_note,
              _offline_passage_note, system=P.SYSTEM, max_tokens=1000))


# ------------------------------------------------------------------------------------------------
# kginf_kg_note (Table 16)
def _render_kg_note(inputs: dict[str, Any]) -> str:
    return P.KG_NOTE.format(question=inputs["question"], note=inputs.get("note") or "(none)",
                            summary=inputs.get("summary") or "(none)")


def _parse_kg_note(raw: str, inputs: dict[str, Any]) -> str:
    return _require(clean_reply(raw, ("enhanced passage", "improved passage", "passage", "note")), "enhanced passage", raw)


def _offline_kg_note(inputs: dict[str, Any], embedder: Embedder) -> tuple[str, str]:
    facts = [str(f) for f in inputs.get("facts") or []]
    text, n = offline_kg_note(str(inputs.get("note") or ""), facts)
    return text, f"kg note: the passage note plus the {n} of {len(facts)} KG facts it does not already state"


register(Task("kginf_kg_note", "kg_infused.KG_NOTE", _render_kg_note, _parse_kg_note, _offline_kg_note,
              system=P.SYSTEM, max_tokens=1200))
