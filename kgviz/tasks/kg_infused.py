"""Reasoning tasks of the `kg-infused` method (KG-Infused RAG, paper 003).

| task                  | paper (prompt)            | value                                             |
|-----------------------|---------------------------|---------------------------------------------------|
| kginf_select_triples  | §3.4 step 1 (Tables 12/13)| {"selected": [ids], "ignored": [...], "said_none"} |
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
reply raises LLMOutputError. The offline heuristics are ours (the paper always uses an LLM).
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np

from kgviz.errors import LLMOutputError
from kgviz.prompts import kg_infused as P
from kgviz.providers.base import Embedder
from kgviz.reasoning import Task, register
from kgviz.text import split_sentences

# ------------------------------------------------------------------------------------------------
# shared helpers
_STOP = frozenset(
    """a an the of in on at to for from by with and or but as is are was were be been being do does
    did has have had what which who whom whose when where why how that this these those it its his
    her their there than then into about after before during between both either not no yes can
    could would should will may might also same other""".split()
)
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)
# sentences the offline passage note embeds at most (bounds latency with a model embedder)
_MAX_NOTE_SENTENCES = 400


def stems(text: str) -> set[str]:
    """Content words cut to five letters, so "director"/"directed" and "births"/"birth" meet."""
    return {w[:5] for w in (m.lower() for m in _WORD.findall(text)) if w not in _STOP and len(w) > 1}


# Question words -> the KG relation words they ask about (ours, offline only). Embeddings of a
# question ("where was X born?") and of a triple ("X place of birth Y") share few words; these cues
# bridge the commonest gaps between question phrasing and Wikidata-style relation names.
RELATION_CUES: dict[str, tuple[str, ...]] = {
    "where": ("place", "locat", "country", "city"),
    "when": ("date", "year", "time", "incep", "publi"),
    "born": ("birth",), "birth": ("born",),
    "died": ("death",), "die": ("death",), "dies": ("death",), "death": ("died",),
    "older": ("birth",), "younger": ("birth",), "age": ("birth",), "old": ("birth",), "lived": ("birth", "death"),
    "later": ("date",), "earlier": ("date",), "first": ("date",), "recent": ("date",),
    "nationality": ("citiz", "count"), "from": ("count", "citiz", "origi"),
    "country": ("citiz", "origi"), "same": ("count", "citiz"),
    "wife": ("spous",), "husband": ("spous",), "married": ("spous",),
    "son": ("child",), "daughter": ("child",), "grandfather": ("fathe", "mothe"),
    "grandmother": ("fathe", "mothe"), "parent": ("fathe", "mothe"),
    "directed": ("direc",), "wrote": ("autho", "write"), "sang": ("perfo",), "sung": ("perfo",),
    "studied": ("educa",), "school": ("educa",), "university": ("educa",),
}


def cue_stems(question: str) -> set[str]:
    """The relation stems the question's words point at."""
    out: set[str] = set()
    for w in (m.lower() for m in _WORD.findall(question)):
        out.update(RELATION_CUES.get(w, ()))
    return out


def triple_display(c: dict[str, Any]) -> str:
    return f"<{c['subject']} | {c['relation']} | {c['object']}>"


def fact_sentence(c: dict[str, Any]) -> str:
    """A triple as a plain sentence: its stored text when it has one, else subject relation object."""
    text = str(c.get("text") or "").strip() or f"{c['subject']} {c['relation']} {c['object']}"
    return text if text.endswith((".", "!", "?")) else text + "."


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
    return "\n".join(lines).strip()


def _require(text: str, what: str, raw: str) -> str:
    if not text:
        raise LLMOutputError(f"the model returned no {what}: {raw[:200]!r}", hint="retry, or try another model")
    return text


def _cosines(embedder: Embedder, query: str, texts: list[str], vectors: Any = None) -> np.ndarray:
    if not texts:
        return np.zeros(0, dtype=np.float32)
    qv = np.asarray(embedder.embed([query]), dtype=np.float32)[0]
    mat = np.asarray(vectors, dtype=np.float32) if vectors is not None else np.asarray(embedder.embed(texts), dtype=np.float32)
    return mat @ qv


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


def parse_selection(raw: str, inputs: dict[str, Any]) -> dict[str, Any]:
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
    return {"selected": selected, "ignored": ignored, "said_none": said_none}


def _render_select(inputs: dict[str, Any]) -> str:
    triples = "\n".join(f"[{c['n']}] {triple_display(c)}" for c in inputs["candidates"]) or "(none)"
    previous = list(inputs.get("previous") or [])
    if previous:
        return P.UPDATE_TRIPLES.format(question=inputs["question"], previous="\n".join(previous), triples=triples)
    return P.SELECT_TRIPLES.format(question=inputs["question"], triples=triples)


# weights of the offline selector (ours): the question decides, the memory (Table 13's "builds on
# the selected triples") and shared content words break ties
MEMORY_WEIGHT = 0.3
LEXICAL_WEIGHT = 0.3
CUE_WEIGHT = 0.15
DEFAULT_TOP_M = 5
DEFAULT_MIN_SCORE = 0.1


def offline_select(inputs: dict[str, Any], embedder: Embedder) -> dict[str, Any]:
    cands: list[dict[str, Any]] = list(inputs["candidates"])
    if not cands:
        return {"selected": [], "ignored": [], "said_none": True, "offline_scores": {}}
    question = str(inputs["question"])
    texts = [fact_sentence(c) for c in cands]
    vectors = inputs.get("vectors")
    score = _cosines(embedder, question, texts, vectors)
    previous = list(inputs.get("previous") or [])
    if previous:
        score = score + MEMORY_WEIGHT * _cosines(embedder, " ".join(previous), texts, vectors)
    want, cues = stems(question), cue_stems(question)
    lexical = np.array([len(want & stems(t)) / max(1, len(want)) for t in texts], dtype=np.float32)
    cue_hit = np.array([bool(cues & stems(t)) for t in texts], dtype=np.float32)
    score = score + LEXICAL_WEIGHT * lexical + CUE_WEIGHT * cue_hit
    top_m = int(inputs.get("top_m", DEFAULT_TOP_M))
    floor = float(inputs.get("min_score", DEFAULT_MIN_SCORE))
    order = [int(i) for i in np.argsort(-score, kind="stable")]
    selected = [str(cands[i]["id"]) for i in order[:top_m] if score[i] >= floor]
    return {"selected": selected, "ignored": [], "said_none": not selected,
            "offline_scores": {str(cands[i]["id"]): round(float(score[i]), 4) for i in order}}


def _offline_select(inputs: dict[str, Any], embedder: Embedder) -> tuple[dict[str, Any], str]:
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
    triples = sorted(enumerate(inputs["triples"]), key=lambda it: (int(it[1].get("round", 0)), it[0]))
    seen: list[str] = []
    for _, t in triples:
        s = fact_sentence(t)
        if s not in seen:
            seen.append(s)
    return " ".join(seen), "summary: the selected triples as sentences, in activation-round order"


register(Task("kginf_summarize", "kg_infused.SUMMARIZE", _render_summarize, _parse_summary, _offline_summarize,
              system=P.SYSTEM, max_tokens=1000))


# ------------------------------------------------------------------------------------------------
# kginf_expand_query (Table 15)
MAX_EXPANSION_NAMES = 5  # ours: enough to name the bridge entities without drowning the question


def _render_expand(inputs: dict[str, Any]) -> str:
    return P.EXPAND_QUERY.format(question=inputs["question"], summary=inputs.get("summary") or "(none)")


def _parse_expand(raw: str, inputs: dict[str, Any]) -> str:
    text = clean_reply(raw, ("new query", "new short query", "query", "expanded query"), after_label=True)
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    line = line.strip("*`").strip().strip("\"'“”").strip()
    return _require(line, "query", raw)


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


def _offline_expand(inputs: dict[str, Any], embedder: Embedder) -> tuple[str, str]:
    q = offline_expand(str(inputs["question"]), str(inputs.get("summary") or ""), list(inputs.get("entities") or []))
    return q, (f"expand: the question plus up to {MAX_EXPANSION_NAMES} activated entity names the summary "
               "mentions and the question does not")


register(Task("kginf_expand_query", "kg_infused.EXPAND_QUERY", _render_expand, _parse_expand, _offline_expand,
              system=P.SYSTEM, max_tokens=200))


# ------------------------------------------------------------------------------------------------
# kginf_passage_note (Table 11)
DEFAULT_NOTE_SENTENCES = 6


def _render_passage_note(inputs: dict[str, Any]) -> str:
    passages = "\n".join(f"[{i}] {p.get('title') or ''}\n{p['text']}" for i, p in enumerate(inputs["passages"], 1))
    return P.PASSAGE_NOTE.format(question=inputs["question"], passages=passages or "(none)")


def _parse_note(raw: str, inputs: dict[str, Any]) -> str:
    return _require(clean_reply(raw, ("note", "passage note")), "note", raw)


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


def _offline_kg_note(inputs: dict[str, Any], embedder: Embedder) -> tuple[str, str]:
    facts = [str(f) for f in inputs.get("facts") or []]
    text, n = offline_kg_note(str(inputs.get("note") or ""), facts)
    return text, f"kg note: the passage note plus the {n} of {len(facts)} KG facts it does not already state"


register(Task("kginf_kg_note", "kg_infused.KG_NOTE", _render_kg_note, _parse_kg_note, _offline_kg_note,
              system=P.SYSTEM, max_tokens=1200))
