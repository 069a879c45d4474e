"""The offline judge's reader for yes/no questions that compare two entities' country (issue 22.3;
all rules ours): "Are X and Y from the same country?", "Are X and Y of the same nationality?",
"Do both films X and Y have the directors that share the same nationality?".

Each entity's countries are read from its definition sentence, "X is a 1926 German silent film",
"Y (1892 – 1959) was an American film producer", "Z is a village in ..., Isfahan Province, Iran":
the country names and adjectives (``kgviz.offline.countries``) between the copula and the first
"directed / written / starring / by / who ..." of that sentence, leaving out "Vietnamese-born" and
"English-language". With a holder ("the directors of films X and Y") the holder is the name after
"directed by" in a sentence about the film, and the holder's definition sentence is read.

"yes" is supported when both entities' countries are read and share one, "no" when both are read
and share none; the other answer is contradicted. A missing or ambiguous country (two sentences
about the same entity naming different countries) leaves the claim not_found: nothing is guessed.
Any other yes/no question is not checked (not_found, saying so).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from kgviz.answer_norm import normalize_answer
from kgviz.offline.compare import HOLDER_VERBS, about, holders, locate
from kgviz.offline.countries import MAX_FORM_WORDS, country_of
from kgviz.offline.support import Sentence, Support

_QUESTION_RE = re.compile(
    r"^(?i:are|were|is|was|do|does|did)\s+(?i:both\s+)?(?i:the\s+)?"
    r"(?P<holder>(?i:directors?|composers?|authors?|writers?|producers?|creators?|founders?)\s+(?i:of)\s+)?"
    r"(?i:(?:films?|songs?|albums?|books?|novels?)\s+)?(?P<a>.+?)\s+and\s+"
    r"(?i:(?:directors?|composers?|authors?|writers?|producers?|creators?|founders?)\s+of\s+)?"
    r"(?i:(?:films?|songs?|albums?|books?|novels?)\s+)?(?P<b>.+?)\s+(?i:both\s+)?(?i:(?:films?|songs?|albums?)\s+)?"
    # lowercase on purpose: "Of" and "Come" are words of a title ("Bank Of England", "I Come With The Rain")
    r"(?:have|share|from|located|of|are|were|both|the\s+same)\b")
_ATTRIBUTE_RE = re.compile(r"\bsame\s+(country|nationality|citizenship)\b", re.IGNORECASE)
_HOLDER_WORD_RE = re.compile(r"\b(director|composer|author|writer|producer|creator|founder)s?\b", re.IGNORECASE)
_COPULA_RE = re.compile(r"\.?\s*(?:\([^()]*\)\s*)?,?\s*(?:is|was|are|were)\b")
# where the definition's noun phrase ends ("... film directed by", "... who"); "Vietnamese-born" goes on
_CLAUSE_END_RE = re.compile(r"\b(?:directed|written|produced|starring|featuring|by|who|whose|which|that|based|"
                            r"known|best|and\s+starring)\b|(?<!-)(?<!- )\bborn\b")
_WORD_RE = re.compile(r"[A-Za-z][\w\.]*")
_NOT_NATIONALITY = re.compile(r"^\s*-?\s*(?:born|language|based|speaking|descent)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Countries:
    entity: str
    countries: frozenset[str]
    sent: Sentence
    words: tuple[str, ...]  # the entity's words and the country words, as written in ``sent``
    exact: int


def parse(question: str) -> tuple[str, str, str] | None:
    """(entity A, entity B, holder noun or "") of a same-country question, else None."""
    if not _ATTRIBUTE_RE.search(question):
        return None
    m = _QUESTION_RE.match(" ".join(question.split()))
    if not m:
        return None
    h = _HOLDER_WORD_RE.search(question)
    holder = h.group(1).lower() if h else ""
    strip = (lambda x: re.sub(r"\s*\([^)]*\)\s*$", "", x).strip() or x)
    return strip(m.group("a")), strip(m.group("b")), holder


def countries_in(sent: Sentence, entity: str) -> list[Countries]:
    """The countries ``sent`` gives ``entity`` when it defines it (see the module docstring)."""
    out = []
    for a, b, exact in locate(sent.text, entity):
        cop = _COPULA_RE.match(sent.text, b)
        if not cop:
            continue
        end = _CLAUSE_END_RE.search(sent.text, cop.end())
        clause = sent.text[cop.end(): end.start() if end else len(sent.text)]
        tokens = list(_WORD_RE.finditer(clause))
        found: dict[str, list[str]] = {}
        k = 0
        while k < len(tokens):
            for n in range(min(MAX_FORM_WORDS, len(tokens) - k), 0, -1):
                words = [t.group() for t in tokens[k:k + n]]
                phrase = " ".join(w.rstrip(".") if w.count(".") == 1 else w for w in words)
                country = country_of(phrase)
                if not country or not words[0][0].isupper():
                    continue
                if _NOT_NATIONALITY.match(clause[tokens[k + n - 1].end():]):
                    break
                found.setdefault(country, []).extend(words)
                k += n - 1
                break
            k += 1
        if found:
            named = tuple(re.findall(r"[^\W_][\w'\u2019\-\.]*[^\W_]|[^\W_]", sent.text[a:b]))
            out.append(Countries(entity, frozenset(found), sent,
                                 named + tuple(w.rstrip(".") if w.endswith(".") and w.count(".") == 1 else w
                                               for ws in found.values() for w in ws), exact))
    return out


def _best(cands: Sequence[Countries]) -> tuple[Countries | None, str]:
    if not cands:
        return None, "missing"
    top = max(c.exact for c in cands)
    tops = [c for c in cands if c.exact == top]
    for c in tops[1:]:
        if c.countries != tops[0].countries:
            return None, (f"ambiguous: \"{tops[0].sent.text}\" ({tops[0].sent.item}) and \"{c.sent.text}\" "
                          f"({c.sent.item}) name different countries")
    return tops[0], ""


def _of(entity: str, other: str, holder: str, sents: Sequence[Sentence]) -> tuple[Countries | None, str, tuple]:
    """The countries of ``entity`` (or of its holder), why not, and the holder link (sentence, name)."""
    if not holder:
        got, why = _best([c for s in sents if not locate(s.text, other) for c in countries_in(s, entity)])
        return got, why, ()
    verb = HOLDER_VERBS.get(holder, "")
    links = [(s, h) for s, _ in about(sents, entity, other) for h in holders(s, entity, verb)]
    names = list(dict.fromkeys(h for _, h in links))
    if not names:
        return None, f"missing: no sentence says who the {holder} of '{entity}' is", ()
    if len(names) > 1:
        return None, f"ambiguous: '{entity}' has several {holder}s ({', '.join(names)})", ()
    got, why = _best([c for s in sents if not locate(s.text, entity) for c in countries_in(s, names[0])])
    return got, why, links[0]


def compare_same(answer: str, question: str, sents: Sequence[Sentence]) -> Support:
    """Judge a yes/no answer to a same-country question (the module docstring's rules)."""
    said = normalize_answer(answer)
    parsed = parse(question)
    if parsed is None:
        return Support("not_found", f"the offline check reads only yes/no questions that compare two entities' "
                                    f"country or nationality: '{answer}' is not checked")
    a, b, holder = parsed
    got = {}
    for x, y in ((a, b), (b, a)):
        c, why, link = _of(x, y, holder, sents)
        if c is None:
            of = f"the {holder} of '{x}'" if holder else f"'{x}'"
            detail = why[len("missing: "):] if why.startswith("missing: ") else why if why != "missing" else ""
            return Support("not_found", f"no sentence of the evidence gives the country of {of}"
                                        + (f" ({detail})" if detail else "") + ", so the answer cannot be checked")
        got[x] = (c, link)
    (ca, la), (cb, lb) = got[a], got[b]
    same = bool(ca.countries & cb.countries)
    label = "supported" if (said == "yes") == same else "contradicted"

    def told(c: Countries, link: tuple) -> str:
        via = f"\"{link[0].text}\" ({link[0].item}) names {link[1]}; " if link else ""
        return f"{via}\"{c.sent.text}\" ({c.sent.item}) gives {c.entity}: {', '.join(sorted(c.countries))}"

    verdict = "the same country" if same else "no country in common"
    reason = f"{told(ca, la)}; {told(cb, lb)}: {verdict}, so '{answer}' is {'right' if label == 'supported' else 'wrong'}"
    chain = tuple(dict.fromkeys([(l[0].item, l[0].text) for l in (la, lb) if l and l[0] is not ca.sent]
                                + [(cb.sent.item, cb.sent.text)]))
    return Support(label, reason, ca.sent.text, tuple(dict.fromkeys(ca.words)), ca.sent.item, chain)
