"""Read triples out of an LLM reply. Pure, tolerant, never raises on garbage.

Accepted shapes (anything else is skipped, and counted as malformed when it looked like a try):

* the house format, one or many per line: ``(s; r; o)``, ``(s; r; o), (s; r; o)``;
* hypernodes as nested parentheses: ``((s; r; o); in year; 1921)``, ``(X; said; (s; r; o))``;
* bullets / numbering / code fences / prose around the triples: ``- 1. (s; r; o)``;
* commas or pipes instead of semicolons when the split is unambiguous (exactly three parts);
* bare ``s; r; o`` lines (small real models drop the brackets), also when a name carries its own
  parentheses: ``Thomas Aldrick (1889–1966); was born in; Ventholm``, or sits in a group of its
  own: ``(Thomas Aldrick (1889–1966)); was a; keeper``; a parenthetical holding a digit (a
  lifespan, a date) is dropped from the name so it links to the same entity;
* two-part hypernodes that qualify a fact with a date: ``((s; r; o); 1957)`` reads as
  ``((s; r; o); in year; 1957)``;
* two-part groups of a name and a predicate phrase, ``(Edda Lunn; designed Orrin Bridge)`` (the
  relation and object run together, what a 1.5B model writes most), when the caller passes
  ``split_predicate``: a function that cuts the phrase into (relation, object) or says it cannot
  (the offline toolkit's ``kgviz.offline.lexicon.split_predicate``: a verb group first). Without
  it, or when it cannot, the group stays malformed. With a splitter also: such a fact inside a
  hypernode (``((Tarrow; holds the Fair); began in 1887)``), the same split nested
  (``(((s; designed X); was built at); Tarrow)``), a flattened date qualifier (``(s; worked for
  the office; until year; 1889)``), and a whole sentence in one group that opens with a name
  (``(Ivo Harn was the rector ...)`` -> ``(Ivo Harn; was; the rector ...)``);
* bold markers, ``<think>...</think>`` blocks and the ``(s)-[r]->(o)`` arrow form;
* JSON: a list of ``[s, r, o]`` lists or of ``{"subject", "relation", "object"}`` objects
  (``head``/``tail`` and ``source``/``target`` work too), whole-reply or one per line;
* unbalanced parentheses: missing ``)`` at the end of a line are added, stray ``)`` dropped
  (both with a warning); a line that opens and closes with a parenthesis but has too many ``)``
  gets the missing ``(`` at its start (``((s; r o); r2); value)``).

An optional ``[type]`` after a name becomes ``Mention.type``. ``NONE`` on a line means "no facts".

Rejected, each counted as malformed with a shown reason: more than three parts (``a; r; 1885; r;
2023`` is two facts run together, not an object with semicolons), a subject or object that is
only a stopword or pronoun (``and``, ``it``) or holds a ``;`` (a group that could not be read
is never kept whole as a name), and everything after a line the reply has already
written ``MAX_LINE_REPEATS`` times, or a line that counts on for the ``MAX_LINE_REPEATS + 1``-th
time (the same fact with a running number: ``kgviz.facts.loops``; a small model looping until
max_tokens). An empty reply is a
failure, not "no facts": only an explicit NONE (or an empty JSON list) says "no facts".
"""
from __future__ import annotations

import contextvars
import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from kgviz.facts.loops import MAX_LINE_REPEATS, LoopCounter
from kgviz.facts.triples import ExtractedTriple, ExtractionOutput, Mention, Term, only_function_words

QUALIFIER_RELATION = "qualified by"  # ours: a qualifier with no preposition, kept whole as the object
MAX_DEPTH = 4  # deeper nesting is almost surely a broken reply, not a fact
MAX_PART_CHARS = 300  # a subject/object longer than this is a sentence, not an entity

_FENCE = re.compile(r"^\s*(```|~~~)")
_BULLET = re.compile(r"^\s*(?:[-*•·+>]+|\d{1,3}[.)]|\(\d{1,3}\)|[a-zA-Z][.)](?=\s))\s*")
_NONE = re.compile(r"^\W*(none|no triples?|no facts?|n/a)\W*$", re.IGNORECASE)
_ARROW = re.compile(r"\(([^()]+)\)\s*-+\s*\[([^\]]+)\]\s*-*\s*(?:->|→|>)\s*\(([^()]+)\)")
_TYPE = re.compile(r"^(.*?\S)\s*\[([A-Za-z][\w \-/]{0,30})\]$")
_QUOTES = "\"'“”‘’`"
_THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.IGNORECASE | re.DOTALL)
_BOLD = re.compile(r"\*\*|__")
_DIGIT_PAREN = re.compile(r"\s*\([^()]*\d[^()]*\)\s*$")
_YEAR = re.compile(r"^(?:c\.\s*)?\d{3,4}(?:s)?$")
_DATE = re.compile(r"^(?:\d{1,2}\s+)?[A-Z][a-z]+\.?\s+(?:\d{1,2},?\s+)?\d{3,4}$|^\d{4}-\d{2}(?:-\d{2})?$")
# (relation, object) of a predicate phrase, or None; set for one parse_triples call
PredicateSplit = Callable[[str], Optional[tuple[str, str]]]
_SPLIT: contextvars.ContextVar[PredicateSplit | None] = contextvars.ContextVar("split_predicate", default=None)
_TRANSLATE = str.maketrans({"（": "(", "）": ")", "；": ";", "｜": "|", "\u00a0": " "})
_SUBJ_KEYS = ("subject", "head", "source", "s", "h", "subj")
_REL_KEYS = ("relation", "predicate", "relationship", "rel", "r", "p")
_OBJ_KEYS = ("object", "tail", "target", "o", "t", "obj")


@dataclass
class _Acc:
    triples: list[ExtractedTriple] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    malformed: int = 0
    warnings: list[str] = field(default_factory=list)
    said_none: bool = False

    def add(self, t: ExtractedTriple) -> None:
        key = t.render().lower()
        if key not in self.seen:
            self.seen.add(key)
            self.triples.append(t)

    def warn(self, msg: str) -> None:
        if len(self.warnings) < 50:  # a garbage reply must not produce a garbage-sized report
            self.warnings.append(msg)


def parse_triples(raw: object, max_triples: int | None = None, *,
                  split_predicate: PredicateSplit | None = None) -> ExtractionOutput:
    """Parse an LLM reply into triples. Returns an ExtractionOutput (triples, n_malformed,
    warnings, raw); ``empty_reply_ok`` is False when a non-empty reply held neither a triple nor
    an explicit NONE. ``split_predicate`` reads two-part (name; predicate phrase) groups (module doc)."""
    token = _SPLIT.set(split_predicate)
    try:
        return _parse_reply(raw, max_triples)
    finally:
        _SPLIT.reset(token)


def _parse_reply(raw: object, max_triples: int | None) -> ExtractionOutput:
    text = raw if isinstance(raw, str) else ("" if raw is None else str(raw))
    acc = _Acc()
    body = _THINK.sub("\n", text.translate(_TRANSLATE))
    if not _parse_json_whole(body, acc):
        loops = LoopCounter(MAX_LINE_REPEATS)
        lines = body.splitlines()
        for n, line in enumerate(lines, 1):
            loop = loops.see(line)
            if loop:
                acc.malformed += 1
                what = "repeats" if loop == "repeats" else "counts on with"
                acc.warn(f"line {n}: the reply {what} {line.strip()[:60]!r} again; stopped reading "
                         f"{len(lines) - n + 1} looping line(s)")
                break
            _parse_line(line, n, acc)
    triples = acc.triples
    if max_triples is not None and len(triples) > max_triples:
        acc.warn(f"kept the first {max_triples} of {len(triples)} triples")
        triples = triples[:max_triples]
    ok = bool(triples) or acc.said_none
    if not text.strip():
        acc.warn("the reply was empty")
    elif not ok:
        acc.warn("the reply contained no triple in the (subject; relation; object) form")
    return ExtractionOutput(triples, acc.malformed, acc.warnings, text, empty_reply_ok=ok)


# --- JSON --------------------------------------------------------------------------------------
def _parse_json_whole(body: str, acc: _Acc) -> bool:
    stripped = "\n".join(ln for ln in body.splitlines() if not _FENCE.match(ln)).strip()
    if not stripped or stripped[0] not in "[{":
        return False
    try:
        data = json.loads(stripped)
    except (ValueError, RecursionError):
        return False
    items = data if isinstance(data, list) else [data]
    if isinstance(data, dict):  # {"triples": [...]} wrappers
        for v in data.values():
            if isinstance(v, list):
                items = v
                break
    if not items:
        acc.said_none = True
        return True
    for i, item in enumerate(items, 1):
        t = _json_triple(item, 1)
        if t is None:
            acc.malformed += 1
            acc.warn(f"JSON item {i}: not a (subject, relation, object) triple")
        else:
            acc.add(t)
    return True


def _json_term(value: Any, depth: int) -> Term | None:
    if isinstance(value, (list, dict)):
        return _json_triple(value, depth + 1)
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return _mention(str(value))
    return None


def _json_triple(item: Any, depth: int) -> ExtractedTriple | None:
    if depth > MAX_DEPTH:
        return None
    if isinstance(item, dict):
        lower = {str(k).lower(): v for k, v in item.items()}
        parts = [next((lower[k] for k in keys if k in lower), None) for keys in (_SUBJ_KEYS, _REL_KEYS, _OBJ_KEYS)]
    elif isinstance(item, list) and len(item) == 3:
        parts = list(item)
    else:
        return None
    s, o = _json_term(parts[0], depth), _json_term(parts[2], depth)
    rel = parts[1]
    if s is None or o is None or not isinstance(rel, (str, int, float)) or isinstance(rel, bool):
        return None
    return _make(s, _clean(str(rel)), o)


# --- lines -------------------------------------------------------------------------------------
def _keep_or_count(acc: _Acc, t: ExtractedTriple | None, why: list[str], n: int, line: str) -> None:
    """Keep a read fact, or count line ``n`` as malformed with the first reason it could not be read."""
    if t is not None:
        acc.add(t)
        return
    acc.malformed += 1
    acc.warn(f"line {n}: {why[0] if why else 'could not read'}: {line[:80]!r}")


def _parse_line(line: str, n: int, acc: _Acc) -> None:
    if _FENCE.match(line):
        return
    line = _BOLD.sub("", line)
    for _ in range(3):  # "* 2) (a; b; c)": a bullet and a number
        line = _BULLET.sub("", line, count=1)
    line = line.strip()
    if not line:
        return
    if _NONE.match(line):
        acc.said_none = True
        return
    if line[0] in "[{":
        t = _parse_json_line(line)
        if t is not None:
            acc.add(t)
            return
    found = 0
    for m in _ARROW.finditer(line):
        t = _make(_mention(m.group(1)), _clean(m.group(2)), _mention(m.group(3)))
        if t is not None:
            acc.add(t)
            found += 1
    if found:
        return
    if len(_split_top(line, ";")) >= 3 and (not line.startswith("(") or _name_group_first(line)):
        # bare "s; r; o", possibly with parentheses inside a name ("(Thomas Aldrick (1889–1966));
        # was a; keeper" closes its first group after the name): semicolons outside every group
        # decide the shape, not the first "(" (which made whole replies of such lines vanish)
        why: list[str] = []
        _keep_or_count(acc, _split_triple(line, 1, why), why, n, line)
        return
    if _fact_then_tail(line):
        # "(s; r; o); r2; o2" / "(s; r; o); in 1900": the hypernode without its outer parentheses;
        # reading the groups alone kept the fact and silently dropped what qualified it
        why = []
        _keep_or_count(acc, _parse_group(line, 1, why), why, n, line)
        return
    extra = line.count(")") - line.count("(")
    if extra > 0 and line.startswith("(") and line.endswith(")"):
        # "((s; r o); r2); value)": the reply left out an opening "(", not a closing one too many
        line = "(" * extra + line
        acc.warn(f"line {n}: unbalanced parentheses (added {extra} '(' at the start)")
    groups, repaired = _top_level_groups(line)
    if repaired:
        acc.warn(f"line {n}: unbalanced parentheses ({repaired})")
    bad: list[str] = []
    for g in _joined_split_groups(groups):
        why = []
        t = _parse_group(g, 1, why)
        if t is not None:
            acc.add(t)
        elif line.startswith("(") or any(c in g for c in ";|"):
            bad.append(why[0] if why else "not a (subject; relation; object) triple")
        # else: a parenthetical inside prose ("Here they are (as asked):"), not a failed triple
    if not groups and ";" in line:
        bad.append("not a (subject; relation; object) triple")
    if bad:
        acc.malformed += 1
        acc.warn(f"line {n}: could not read {len(bad)} group(s) ({bad[0]}): {line[:80]!r}")


def _fact_then_tail(line: str) -> bool:
    """A line that is a bracketed fact followed by ``; qualifier`` or ``; relation; object``."""
    parts = _split_top(line, ";")
    if len(parts) not in (2, 3) or not parts[-1].strip() or line.count("(") != line.count(")"):
        return False
    head = parts[0].strip()
    groups, _ = _top_level_groups(head)
    return (head.startswith("(") and head.endswith(")") and len(groups) == 1
            and len(_split_top(groups[0], ";")) >= 2 and not any(p.strip().startswith("(") for p in parts[1:]))


def _name_group_first(line: str) -> bool:
    """The line opens with a parenthesised name, not a triple: its first group holds no ';'."""
    groups, _ = _top_level_groups(line)
    return bool(groups) and len(_split_top(groups[0], ";")) == 1


def _joined_split_groups(groups: list[str]) -> list[str]:
    """``(s; r) (o)``: a triple split over two groups (the object in a group of its own), joined
    back into ``s; r; o``. Only a two-part group followed by a one-part group is joined."""
    out: list[str] = []
    i = 0
    while i < len(groups):
        g = groups[i]
        if (i + 1 < len(groups) and len(_split_top(g, ";")) == 2 and len(_split_top(groups[i + 1], ";")) == 1
                and not g.strip().startswith("(") and not groups[i + 1].strip().startswith("(")):
            out.append(f"{g}; {groups[i + 1]}")
            i += 2
            continue
        out.append(g)
        i += 1
    return out


def _parse_json_line(line: str) -> ExtractedTriple | None:
    candidate = line.rstrip(",")
    try:
        data = json.loads(candidate)
    except (ValueError, RecursionError):
        return None
    return _json_triple(data, 1)


def _top_level_groups(line: str) -> tuple[list[str], str]:
    """Contents of the top-level (...) groups of a line, repairing unbalanced parentheses."""
    groups: list[str] = []
    depth = 0
    start = -1
    stray = 0
    for i, ch in enumerate(line):
        if ch == "(":
            if depth == 0:
                start = i
            depth += 1
        elif ch == ")":
            if depth == 0:
                stray += 1
                continue
            depth -= 1
            if depth == 0:
                groups.append(line[start + 1 : i])
    notes = []
    if depth > 0:
        groups.append(line[start + 1 :] + ")" * (depth - 1))
        notes.append(f"added {depth} ')'")
    if stray:
        notes.append(f"ignored {stray} stray ')'")
    return groups, ", ".join(notes)


def _split_top(text: str, sep: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    cur: list[str] = []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        if ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def _parse_group(inner: str, depth: int, why: list[str] | None = None) -> ExtractedTriple | None:
    if depth > MAX_DEPTH:
        _say(why, f"nested deeper than {MAX_DEPTH}")
        return None
    return _split_triple(inner, depth, why)


def _say(why: list[str] | None, reason: str) -> None:
    if why is not None and not why:
        why.append(reason)


def _split_triple(inner: str, depth: int, why: list[str] | None = None) -> ExtractedTriple | None:
    parts = _split_top(inner, ";")
    stripped = inner.strip()
    if len(parts) == 1 and stripped.startswith("(") and stripped.endswith(")"):
        return _parse_group(stripped[1:-1], depth + 1, why)  # redundant parentheses: ((s; r; o))
    if len(parts) == 4:
        qualified = _qualified_phrase(parts, depth, why)
        if qualified is not None:
            return qualified
    if len(parts) > 3:
        # "X; in year; 1885; in year; 2023": two facts run together; folding the rest into the
        # object made junk entities, so the line is rejected instead
        _say(why, f"{len(parts)} parts, a triple has 3")
        return None
    if len(parts) == 2:
        return _two_part(parts, depth, why)
    if len(parts) != 3:
        for sep in ("|", ","):
            alt = _split_top(inner, sep)
            if len(alt) == 3:
                parts = alt
                break
        else:
            sentence = _sentence_group(inner, depth, why) if len(parts) == 1 else None
            if sentence is None:
                _say(why, "not a (subject; relation; object) triple")
            return sentence
    if only_function_words(_clean(parts[2])) and _SPLIT.get() is not None:
        # "(s; is 54 metres long; and)": the object is a dangling word, the relation a whole predicate
        return _two_part(parts[:2], depth, why)
    s = _term(parts[0], depth, why)
    o = _term(parts[2], depth, why)
    if s is None or o is None:
        _say(why, "empty or unreadable subject/object")
        return None
    return _make(s, _clean(parts[1]), o)


_NAME_WORD = re.compile(r"^[A-Z][\w'’.-]*$")


def _sentence_group(inner: str, depth: int, why: list[str] | None) -> ExtractedTriple | None:
    """``(Ivo Harn was the rector of the university from 1919 to 1938)``: a whole sentence in one
    group. Read only when it opens with a name (one to four capitalised words) and the splitter
    cuts the rest as a predicate phrase: ``(Ivo Harn; was; the rector of ...)``."""
    split = _SPLIT.get()
    words = _clean(inner).split()
    if split is None:
        return None
    for n in range(1, min(4, len(words) - 2) + 1):
        if not _NAME_WORD.match(words[n - 1]):
            return None
        cut = split(" ".join(words[n:]))
        if cut is not None:
            return _make(_mention(" ".join(words[:n])), _clean(cut[0]), _mention(cut[1]))
    return None


def _qualified_phrase(parts: list[str], depth: int, why: list[str] | None) -> ExtractedTriple | None:
    """``(s; worked for the roads office; until year; 1889)``: a (name; predicate phrase) fact with
    its date qualifier flattened into one group. Read as ``((s; worked for; the roads office);
    until year; 1889)`` only when a splitter cuts the phrase, the third part is a short relation
    and the fourth a year or date; anything else stays a rejected four-part line."""
    split = _SPLIT.get()
    value, qualifier = _clean(parts[3]), _clean(parts[2])
    if split is None or not (_YEAR.match(value) or _DATE.match(value)) or not 0 < len(qualifier.split()) <= 3:
        return None
    cut = split(_clean(parts[1])) if not parts[1].strip().startswith("(") else None
    fact = _make(_term(parts[0], depth, why), _clean(cut[0]), _mention(cut[1])) if cut else None
    return ExtractedTriple(fact, qualifier, Mention(value)) if fact is not None else None


def _two_part(parts: list[str], depth: int, why: list[str] | None) -> ExtractedTriple | None:
    """``((s; r; o); 1957)``: a fact and a date with the relation left out. Meaningful only when
    one part is a nested triple and the other a year or date; anything else is malformed."""
    first, second = (p.strip() for p in parts)
    if first.startswith("(") and first.endswith(")"):
        value = _clean(second)
        relation = "in year" if _YEAR.match(value) else "on date" if _DATE.match(value) else ""
        if relation:
            inner = _parse_group(first[1:-1], depth + 1, why)
            if inner is not None:
                return ExtractedTriple(inner, relation, Mention(value))
        if only_function_words(value):  # "((s; r; o); for)": a qualifier the model never finished; the fact stands
            return _parse_group(first[1:-1], depth + 1, why)
        joined = _nested_split(first[1:-1], second, depth, why)
        if joined is not None:
            return joined
    split = _SPLIT.get()
    cut = split(_clean(second)) if split is not None and not second.startswith("(") else None
    if cut is not None:
        made = _make(_term(first, depth, why), _clean(cut[0]), _mention(cut[1]))
        if made is not None:
            return made
    if first.startswith("(") and first.endswith(")") and not second.startswith("("):
        qualified = _qualifier(first[1:-1], _clean(second), depth, why)
        if qualified is not None:
            return qualified
    _say(why, "2 parts, a triple has 3" + (" (the second is no predicate phrase)" if split is not None else ""))
    return None


_PREPOSITION = re.compile(
    r"^(in|on|at|during|after|before|until|till|since|from|for|with|without|by|near|under|over|through|"
    r"across|along|between|among|about|around|outside|inside|within|against|via|per|according to)\s+(\S.*)$",
    re.IGNORECASE,
)


def _qualifier(inner: str, value: str, depth: int, why: list[str] | None) -> ExtractedTriple | None:
    """``((Charles Bridge; crosses; the Vltava); in Prague)``: a fact and a qualifier with no
    relation of its own (issue 23: the whole line was lost). A qualifier that opens with a
    preposition becomes the relation, as in the prompt's hypernodes: ``((s; r; o); in; Prague)``
    (``in year`` / ``until year`` before a year, the prompt's own form); any other qualifier is
    kept whole: ``((s; r; o); QUALIFIER_RELATION; value)``."""
    fact = _parse_group(inner, depth + 1, why)
    if fact is None or not value:
        return None
    m = _PREPOSITION.match(value)
    if m is None:
        obj = _mention(value)
        return ExtractedTriple(fact, QUALIFIER_RELATION, obj) if obj is not None else None
    prep, rest = m.group(1).lower(), _clean(m.group(2))
    obj = _mention(rest)
    if obj is None:
        return None
    relation = f"{prep} year" if _YEAR.match(rest) else f"{prep} date" if _DATE.match(rest) else prep
    return ExtractedTriple(fact, relation, obj)


def _nested_split(inner: str, value: str, depth: int, why: list[str] | None) -> ExtractedTriple | None:
    """``(((s; designed X); was built at); Tarrow)``: the ``(s; r) (o)`` split written as one nested
    group. Joined only when the inner second part is a bare relation (the splitter finds no object
    in it, but does once the value follows): ``((s; designed; X); was built at; Tarrow)``."""
    split = _SPLIT.get()
    parts = _split_top(inner, ";")
    if split is None or len(parts) != 2 or value.startswith("("):
        return None
    relation = _clean(parts[1])
    if split(relation) is not None or split(f"{relation} {_clean(value)}") is None:
        return None
    return _make(_term(parts[0], depth + 1, why), relation, _mention(value))


def _term(part: str, depth: int, why: list[str] | None = None) -> Term | None:
    p = part.strip()
    if p.startswith("(") and p.endswith(")"):
        inner = p[1:-1]
        parts = _split_top(inner, ";")
        if len(parts) >= 3 or len(_split_top(inner, ",")) == 3:
            return _parse_group(inner, depth + 1, why)
        if len(parts) == 2:  # "((s; r o); ...)": a (name; predicate phrase) fact inside
            return _two_part(parts, depth + 1, why)
        p = inner  # "(Los Angeles)": parentheses around a plain name
    m = _mention(p)
    if m is None and why is not None and p.strip() and only_function_words(_clean(p)):
        _say(why, f"{_clean(p)!r} is not a name")
    return m


def _mention(text: str) -> Mention | None:
    t = text.strip()
    typ = ""
    m = _TYPE.match(t)
    if m:
        t, typ = m.group(1), m.group(2).strip().lower()
    t = _clean(t)
    stripped = _DIGIT_PAREN.sub("", t).strip()
    if stripped and not only_function_words(stripped):
        t = stripped  # "Thomas Aldrick (1889–1966)" is the entity "Thomas Aldrick"
    if not t or len(t) > MAX_PART_CHARS or ";" in t or only_function_words(t):
        return None
    return Mention(t, typ)


# a part that ends in an abbreviation keeps its full stop ("Tottenham Hotspur L.F.C.", "Washington,
# D.C.", "B."): the offline extractor writes such names, and its raw text must read back as it was
_ABBREVIATION_END = re.compile(r"(?:^|\s)(?:(?:[A-Za-z]\.)+|Jr\.|Sr\.|Inc\.|Co\.|Ltd\.|Corp\.|Bros\.|St\.|Mt\.)$")


def _clean(text: str) -> str:
    t = " ".join(text.split())
    while len(t) >= 2 and t[0] in _QUOTES and t[-1] in _QUOTES:
        t = t[1:-1].strip()
    t = t.lstrip(" ,.")
    kept = t.rstrip(" ,.")
    if t[len(kept):].startswith(".") and _ABBREVIATION_END.search(kept + "."):
        kept += "."
    return kept.strip()


def _make(s: Term | None, rel: str, o: Term | None) -> ExtractedTriple | None:
    if s is None or o is None or not rel or len(rel) > MAX_PART_CHARS:
        return None
    return ExtractedTriple(s, rel, o)
