"""Offline triple extraction: deterministic patterns over sentences (the extract_triples task's
offline heuristic). No model, no downloads; the same text always gives the same triples.

What it finds, sentence by sentence (``kgviz.text.split_sentences``):

* mentions: runs of capitalised words ("Mira Tesk", "Leonardo da Vinci"; "X of Y" after a head
  noun such as University/Bank/Duke, or after one capitalised word: "University of Aldport",
  "Journal of Physics"), quoted titles ("The Long
  Road"), dates and years ("June 5, 1921", "1921"), numbers with a unit ("400 crowns"), and the
  pronouns he/she/they (anywhere) and it (sentence-initial), which resolve to the last subject
  seen in the chunk;
* relations: the words between two consecutive mentions when they contain a verb and no clause
  break ("was born in", "founded", "is the capital of", "studied at", "works for"); a leading
  ", who"/", which" keeps the subject; "..., and founded Y" reuses the clause subject;
  coordinated mentions ("X and Y founded Z") share the relation;
* passives: "Y was designed by X" -> (X; designed; Y); "Y, written by X" -> (X; wrote; Y);
* modifiers as hypernodes (KG-RAG §4.1): "X founded Y in 1921" -> (X; founded; Y) and
  ((X; founded; Y); in year; 1921); a leading "In 1921, ..." attaches the same way;
* reported speech: "X said (that) S" / "According to X, S" -> (X; said; (triple of S));
* appositives: "X, a professor of History at Y," -> (X; was a; professor of history) and
  (X; professor of history at; Y); the appositive is then skipped so X stays the subject;
* copulas without a second name: "X was an engineer" -> (X; was a; engineer),
  "X was unsafe" -> (X; was; unsafe);
* possessives: "Y's sister X" -> (X; sister of; Y);
* sentence facts (``kgviz.offline.sentence_facts``, issue 12): every name, title, number and date
  of a sentence that no pattern fact holds is tied to the sentence's topic (or the passage title)
  by a fact of kind "sentence" (relation "in same sentence as" / "passage mentions"), with the
  sentence as its evidence. They come after the pattern facts, so every mention is reachable in
  the graph while the stated relations stay what the patterns read. Before them, the patterns
  alone left the gold answer of 39-72 % of HotpotQA / 2Wiki / MuSiQue questions out of the graph.

Why hand-written rules and not an NLP library (checked for issue 12): spaCy (3.8, a 35 MB wheel
plus thinc/blis/srsly/...) installs from PyPI, but its English models do not: ``en_core_web_sm``
is published on GitHub releases, not PyPI (``pip download en-core-web-sm`` finds nothing; the
PyPI names that look like it are third-party re-uploads or placeholders), and nothing may be
downloaded at run time. Its parser would also cost tens of seconds on the HotpotQA corpus on two
busy cores, against a 60 s budget for the whole offline build, where these rules take ~2 s of CPU.
NLTK's tagger and chunker need data downloads too. So the rules stay, and the fallback makes
their misses visible as typed facts instead of silent gaps.

Limits (by design; an LLM does much better):
* a subject must be capitalised or a pronoun: "the bridge collapsed" yields nothing;
* one relation per pair of neighbouring mentions; long-distance, negated or conditional
  statements are read literally ("X never met Y" -> (X; never met; Y));
* pronoun resolution is "last subject in the chunk" (no gender, no number agreement);
* sentence-initial common words that are not in the stop list can become entities ("Bridges");
* quoted text is a title only when it is short and does not end in punctuation (so dialogue in
  quotes is not taken as a name);
* only English; no coreference beyond pronouns; no negation or modality.
"""
from __future__ import annotations

import re
from dataclasses import replace

from kgviz.facts.triples import ExtractedTriple, ExtractionOutput, Mention, Term, only_function_words, render_triples
from kgviz.offline.lexicon import (
    AUXILIARIES,
    COPULAS,
    DETERMINERS,
    SPEECH_VERBS,
    is_verbish,
    participle_to_active,
)
from kgviz.offline.mentions import Context, Span, as_mention, find_mentions
from kgviz.offline.sentence_facts import is_noise, sentence_facts, title_mention
from kgviz.text import split_sentences

HEURISTIC_NAME = "pattern-extractor-v2"  # v2: typed sentence facts (issue 12)
HEURISTIC_DESCRIPTION = (
    f"{HEURISTIC_NAME}: capitalised-name mentions + verb phrases between them, passives, "
    "year/speech hypernodes, appositives, pronoun -> last subject; every other mention tied to "
    "its sentence's topic by a typed sentence fact"
)

_BREAK_WORDS = frozenset(
    "and but or nor while whereas although though because which who whom whose when where if than that unless".split()
)
_LEADING_ADVERBIAL = re.compile(
    r"^(In|On|At|During|By|From|Since|After|Before|Until|Throughout|Under)\s+([^,]{1,60}),\s+"
)
_SPEECH = re.compile(r"\b(" + "|".join(sorted(SPEECH_VERBS)) + r")\b(?:\s*,)?(?:\s+that\b)?\s*")
_ACCORDING = re.compile(r"^According to\s+")
_COPULA_NP = re.compile(
    r"^(?:,\s*(?:who|which)\s+)?\s+(?:(?:also|later|still|once|now)\s+)?"
    r"(is|was|are|were|became|becomes|remains|remained)\s+(?:(?:also|now|still|once|later|often|sometimes)\s+)?"
    r"(?:(a|an|the)\s+)?"
    r"([a-zA-Z][\w\-]*(?:\s+[a-z][\w\-]*){0,4})"
)
_ADVERBS = frozenset("also later then first once soon eventually never still often again briefly".split())
_NP_STOP = frozenset(
    """of in at from for with by on to who which that and but or when where while after before as
    than across over under near between along into through about off upon beside behind around
    within without during until since against toward towards among outside inside""".split()
) | DETERMINERS
# ", a professor of history at the University of Aldport," / ", designed by Mira Tesk,"
_APPOSITIVE = re.compile(r"^,\s+(?:(a|an|the)\s+)?([a-z][^,;:()]{0,80}?)\s*(?:,\s*|$)")
_PARENTHETICAL = re.compile(r"\s*\([^()]*\)")
_MODIFIER_PREP = re.compile(r"^\s*(in|on|at|during|by|since|until|from)\s+(?:the\s+)?$")
_MAX_SPEECH_DEPTH = 2
_PERSON_RELATION = re.compile(r"\b(?:born|died|married|studied|graduated|retired)\b")


def extract_offline(text: str, max_triples: int | None = None, title: str = "") -> ExtractionOutput:
    """Triples from one chunk of plain English; see the module docstring for the rules.
    ``title`` is the passage's title ("" for none): sentence facts hang the passage on it."""
    ctx = Context()
    triples: list[ExtractedTriple] = []
    fallback: list[ExtractedTriple] = []
    seen: set[str] = set()
    anchor = title_mention(title)
    linked: set[str] = set()
    for sent in split_sentences(text):
        spans = find_mentions(sent.rstrip(".!?;: "), ctx)  # before the patterns move the subject
        before = ctx.last_subject
        pattern = [t for t in _sentence(sent, ctx, 0) if not any(is_noise(m.text) for m in t.mentions())]
        for t in pattern:
            key = t.render().lower()
            if key not in seen:
                seen.add(key)
                triples.append(replace(t, sentence=sent))
        for t in sentence_facts(sent, spans, pattern, before, ctx, anchor, linked):
            key = t.render().lower()
            if key not in seen:
                seen.add(key)
                fallback.append(t)
    # pattern facts first: a max_triples cut drops sentence facts before stated relations
    triples = _type_people(triples + fallback)
    warnings: list[str] = []
    if max_triples is not None and len(triples) > max_triples:
        warnings.append(f"kept the first {max_triples} of {len(triples)} triples")
        triples = triples[:max_triples]
    return ExtractionOutput(triples, 0, warnings, render_triples(triples))


def _type_people(triples: list[ExtractedTriple]) -> list[ExtractedTriple]:
    """Mark as persons the untyped subjects of born/died/married/studied relations, everywhere
    they occur in the chunk."""
    people = {
        t.subject.text
        for top in triples
        for t in top.nested()
        if isinstance(t.subject, Mention) and not t.subject.type and _PERSON_RELATION.search(t.relation)
    }
    if not people:
        return triples

    def fix(term: Term) -> Term:
        if isinstance(term, ExtractedTriple):
            return replace(term, subject=fix(term.subject), object=fix(term.object))
        return Mention(term.text, "person") if term.text in people and not term.type else term

    return [fix(t) for t in triples]  # type: ignore[misc]


# --- one sentence ------------------------------------------------------------------------------
def _sentence(s: str, ctx: Context, depth: int) -> list[ExtractedTriple]:
    s = _PARENTHETICAL.sub("", s).strip().rstrip(".!?;:").strip()
    if not s:
        return []
    speech = _reported_speech(s, ctx, depth)
    if speech is not None:
        return speech
    out: list[ExtractedTriple] = []
    anchor: tuple[str, Span] | None = None
    m = _LEADING_ADVERBIAL.match(s)
    if m:
        inner = find_mentions(m.group(2), ctx)
        if inner and inner[0].kind in ("value", "name"):
            anchor = (m.group(1).lower(), inner[0])
        s = s[m.end() :]
    s = _appositives(s, ctx, out)
    spans = find_mentions(s, ctx)
    main = _relations(s, spans, ctx)
    if anchor is not None and main:
        prep, span = anchor
        out.append(ExtractedTriple(main[0], _modifier_relation(prep, span), as_mention(span, ctx)))
    copulas = _copulas(s, spans, ctx)
    # "X was an American drummer": keep (X; was a; American drummer), drop (X; was; American)
    adjectival = {(c.subject, c.object.text.split()[0]) for c in copulas if isinstance(c.object, Mention)}
    main = [t for t in main if not (t.relation in COPULAS and isinstance(t.object, Mention) and (t.subject, t.object.text) in adjectival)]
    out[:0] = main
    out.extend(copulas)
    _update_subject(ctx, out, spans)
    return [t for t in out if t is not None]


def _reported_speech(s: str, ctx: Context, depth: int) -> list[ExtractedTriple] | None:
    if depth >= _MAX_SPEECH_DEPTH:
        return None
    acc = _ACCORDING.match(s)
    if acc:
        rest = s[acc.end() :]
        comma = rest.find(",")
        if comma <= 0:
            return None
        spans = find_mentions(rest[:comma], ctx)
        if not spans:
            return None
        speaker, verb, clause = as_mention(spans[0], ctx), "stated", rest[comma + 1 :]
    else:
        m = _SPEECH.search(s)
        if m is None:
            return None
        spans = find_mentions(s[: m.start()], ctx)
        if not spans:
            return None
        between = s[spans[-1].end : m.start()].lower().split()
        if any(w not in AUXILIARIES and not w.endswith("ly") and w not in ("also", "later", "then") for w in between):
            return None
        speaker, verb, clause = as_mention(spans[-1], ctx), m.group(1).lower(), s[m.end() :]
    clause = clause.strip(" ,\"'“”")
    if len(clause.split()) < 2:
        return None
    ctx.set_subject(speaker)
    inner = _sentence(clause, ctx, depth + 1)
    ctx.set_subject(speaker)
    if not inner:
        return None
    return [ExtractedTriple(speaker, verb, t) for t in inner[:3]]


def _appositives(s: str, ctx: Context, out: list[ExtractedTriple]) -> str:
    """Read "X, a Y of Z," and "X, designed by Z," into triples, then cut them out of the
    sentence so X stays the subject of the main clause."""
    spans = find_mentions(s, ctx)
    for sp in spans:
        if sp.kind != "name" or sp.possessive:
            continue
        m = _APPOSITIVE.match(s[sp.end :])
        if not m:
            continue
        seg_start, seg_end = sp.end + m.start(2), sp.end + m.end(2)
        inside = [x for x in spans if seg_start <= x.start < seg_end]
        subject = as_mention(sp, ctx)
        article = m.group(1)
        if article is None:  # ", designed by Z,"
            if len(inside) != 1 or inside[0].end != seg_end:
                continue
            words = s[seg_start : inside[0].start].split()
            active = participle_to_active(words[0]) if len(words) == 2 and words[1] == "by" else None
            if active is None:
                continue
            out.append(ExtractedTriple(as_mention(inside[0], ctx), active, subject))
        else:
            facts = _appositive_facts(s, subject, article, seg_start, seg_end, inside, ctx)
            if facts is None:
                continue
            out.extend(facts)
        cut = sp.end + m.end()
        return _appositives(s[: sp.end] + " " + s[cut:].lstrip(" ,"), ctx, out)
    return s


def _appositive_facts(
    s: str, subject: Mention, article: str, start: int, end: int, inside: list[Span], ctx: Context
) -> list[ExtractedTriple] | None:
    np_end = inside[0].start if inside else end
    if inside and (len(inside) != 1 or inside[0].end != end):
        return None
    words = s[start:np_end].split()
    prep = ""
    if inside:
        if words and words[-1] == "the":
            words.pop()
        if not words or words[-1] not in ("of", "at", "in", "for", "from", "with", "to"):
            return None
        prep = words.pop()
    if not 1 <= len(words) <= 7 or not all(w.isalpha() or "-" in w for w in words):
        return None
    if any(w.lower() in _BREAK_WORDS or (is_verbish(w) and not w.endswith("ed")) for w in words):
        return None
    np_text = " ".join(w.lower() for w in words)
    facts = [] if inside and article == "the" else [ExtractedTriple(subject, "is a" if article in ("a", "an") else "is", Mention(np_text))]
    if inside:
        facts.append(ExtractedTriple(subject, f"{np_text} {prep}", as_mention(inside[0], ctx)))
    return facts


def _relations(s: str, spans: list[Span], ctx: Context) -> list[ExtractedTriple]:
    units = _coordinate(s, spans)
    out: list[ExtractedTriple] = []
    clause_subject: list[Mention] = []
    for i in range(len(units) - 1):
        a, b = units[i], units[i + 1]
        gap = s[a[-1].end : b[0].start]
        subjects = [as_mention(x, ctx) for x in a]
        rel = _possessive(gap, a, b)
        if rel is None:
            cont = re.match(r"^,?\s*and\s+", gap)
            if cont and clause_subject:
                found = _relation(gap[cont.end() :])
                if found is not None:
                    subjects, rel = clause_subject, found
            if rel is None and not a[-1].possessive:
                rel = _relation(gap)
        if rel is None:
            continue
        relation, reverse = rel
        pp = re.search(r"\b(?:the\s+)?(\w+(?:\s+[a-z]+)?)\s+of\s+(?:the\s+)?$", s[: a[0].start])
        if pp and pp.group(1).split()[-1] not in _NP_STOP and not clause_subject:
            if relation not in COPULAS or not pp.group(1).islower():
                continue  # "Her map of the Merrow Sea appeared in 1930": the map appeared, not the sea
            relation, reverse = f"{relation} the {pp.group(1)} of", True  # "The capital of X is Y"
        elif relation in COPULAS and b[0].kind == "value":
            continue  # "X is a 1995 film": the year modifies a noun, it is not X
        if b[-1].possessive and not reverse:
            # "X is Y's largest port" -> (X; is largest port of; Y)
            pm = re.match(r"^\s+((?:[a-z][\w\-]*\s*?){1,3})(?=\s*(?:[,.;]|$)|\s+(?:in|at|for|from|on|and|but)\b)", s[b[-1].end :])
            if pm is None or any(is_verbish(w) for w in pm.group(1).split()):
                continue
            relation = f"{relation} {pm.group(1).strip()} of"
        objects = [as_mention(x, ctx) for x in b]
        made: list[ExtractedTriple] = []
        for x in subjects[:4]:
            for y in objects[:4]:
                sub, obj = (y, x) if reverse else (x, y)
                if sub.text.lower() != obj.text.lower():
                    made.append(ExtractedTriple(sub, relation, obj))
        if made and not clause_subject:
            clause_subject = subjects  # the grammatical subject, also of a passive
        out.extend(made)
        if i + 2 < len(units) and len(units[i + 2]) == 1:
            mod = units[i + 2][0]
            pm = _MODIFIER_PREP.match(s[b[-1].end : mod.start])
            if pm and (mod.kind == "value" or pm.group(1) in ("in", "at")):
                label = _modifier_relation(pm.group(1), mod)
                out.extend(ExtractedTriple(t, label, as_mention(mod, ctx)) for t in made[:2])
    return out


def _coordinate(s: str, spans: list[Span]) -> list[list[Span]]:
    """Group "X, Y and Z" / "X and Y" mentions of the same kind into one unit."""
    units: list[list[Span]] = []
    i = 0
    while i < len(spans):
        j = i
        while j + 1 < len(spans) and spans[j + 1].kind == spans[i].kind and not spans[j].possessive:
            gap = s[spans[j].end : spans[j + 1].start].strip()
            if gap in ("and", ",", ", and", "or"):
                j += 1
            else:
                break
        # a comma-only run ("In Aldport, Mira Tesk") is not a list: require a final "and"/"or"
        while j > i and s[spans[j - 1].end : spans[j].start].strip() == ",":
            j -= 1
        units.append(spans[i : j + 1])
        i = j + 1
    return units


def _relation(gap: str) -> tuple[str, bool] | None:
    """(relation, reversed) for the words between two mentions, or None."""
    g = " ".join(gap.split())
    rel = re.match(r"^,\s*(?:who|which|that)\s+", g)
    if rel:
        g = g[rel.end() :]
    words = g.strip(" ,").split()
    if len(words) >= 2 and words[-1].lower() == "by":
        active = participle_to_active(words[-2])
        lead = [w.lower() for w in words[:-2]]
        if active and all(w in AUXILIARIES or w.endswith("ly") or w in ("also", "later", "first", "then") for w in lead):
            return active, True
    if not g or any(c in g for c in ",;:()\"“”"):
        return None
    tokens = g.lower().split()
    if len(tokens) > 8 or any(t in _BREAK_WORDS for t in tokens) or tokens[0] in ("'s", "’s"):
        return None
    if not any(is_verbish(t) for t in tokens):
        return None
    first = tokens[0]
    if not (is_verbish(first) or first in AUXILIARIES or first in _ADVERBS or first.endswith("ly")):
        return None  # "American film directed by": the left mention modifies a noun
    while tokens and (tokens[-1] in DETERMINERS or not tokens[-1].strip(".")):
        tokens.pop()  # a stray "." token ends no relation (the parser drops it when it reads the raw line)
    return (" ".join(tokens), False) if tokens else None


def _possessive(gap: str, a: list[Span], b: list[Span]) -> tuple[str, bool] | None:
    """ "Y's sister X" -> (X; sister of; Y)."""
    if not a[-1].possessive:
        return None
    words = gap.strip(" ,").split()
    if 1 <= len(words) <= 2 and all(w.isalpha() and w.islower() and not is_verbish(w) and w not in _NP_STOP for w in words):
        return " ".join(words) + " of", True
    return None


def _copulas(s: str, spans: list[Span], ctx: Context) -> list[ExtractedTriple]:
    out: list[ExtractedTriple] = []
    for sp in spans:
        if sp.kind not in ("name", "pron", "title") or sp.possessive:
            continue
        m = _COPULA_NP.match(s[sp.end :])
        if not m:
            continue
        if re.search(r"\bof\s+(?:the\s+)?$", s[: sp.start]):
            continue  # "the coast north of X is rocky": X is not the subject
        words: list[str] = []
        for w in m.group(3).split():
            if w in _NP_STOP or (words and participle_to_active(w) is not None):
                break  # "a public university located in": the participle starts a new phrase
            words.append(w)
        verb, article = m.group(1), m.group(2)
        stopped_by = m.group(3).split()[len(words) : len(words) + 1]
        if article is None and stopped_by and participle_to_active(stopped_by[0]) is not None:
            continue  # "X was best known for": an adverb before a passive, not an attribute
        if words and (words[0].endswith("ly") or words[0] in ("one", "more", "most", "less", "not", "no")):
            continue
        if words and words[0][:1].isupper() and (article is None or len(words) == 1):
            continue  # a capitalised word right after the copula is a name, handled as a relation
        if not words or words[0] in DETERMINERS or (article is None and is_verbish(words[0])):
            continue
        if only_function_words(" ".join(words)):
            continue  # "Mira is a It is": no attribute (the parser would drop the object when reading the raw line)
        rest = s[sp.end + m.start(3) :].split(None, len(words))[len(words) :]
        if article not in ("a", "an") and rest and re.match(r"^(?:of|to|in|at|for|from|on|with|by)\s+(?:the\s+)?[A-Z]", rest[0]):
            continue  # "is the capital of Y", "is home to Y": the relation between names says it
        relation = f"{verb} a" if article in ("a", "an") else verb
        out.append(ExtractedTriple(as_mention(sp, ctx), relation, Mention(" ".join(words))))
    return out


def _update_subject(ctx: Context, triples: list[ExtractedTriple], spans: list[Span]) -> None:
    for top in triples:
        for t in top.nested():
            if isinstance(t.subject, Mention) and _PERSON_RELATION.search(t.relation):
                ctx.people.add(t.subject.text)
    for sp in reversed(spans):
        if sp.kind == "name" and sp.text not in ctx.people and sp.type != "person":
            ctx.last_thing = Mention(sp.text, sp.type)
            break
    for t in triples:
        if isinstance(t.subject, Mention) and t.subject.type not in ("date", "number", "work"):
            ctx.set_subject(t.subject)
            return
    if spans and spans[0].kind == "name" and spans[0].start == 0 and not spans[0].possessive:
        ctx.set_subject(as_mention(spans[0], ctx))


def _modifier_relation(prep: str, span: Span) -> str:
    if span.type == "date":
        return f"{prep} year" if re.fullmatch(r"\d{4}s?", span.text) else f"{prep} date"
    return prep
