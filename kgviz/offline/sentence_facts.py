"""Sentence facts: the offline extractor's typed fallback for what its relation patterns miss.

The patterns (``kgviz.offline.extract``) read only simple declarative clauses, so most named
mentions, numbers and dates of real text (lists, parentheses, subordinate clauses, long
sentences) were never reachable in the graph. The fallback makes every mention reachable without
pretending to know the relation:

* the sentence's *topic* is the subject of its first pattern fact, else a name (or a pronoun's
  antecedent) that opens the sentence, else the passage's title, else the chunk's running
  subject (what "he"/"it" would refer to), else the sentence's first name;
* every other mention of the sentence (names, quoted titles, dates, years, numbers) that no
  pattern fact of the sentence holds gets the fact (topic; ``SENTENCE_RELATION``; mention), kind
  ``SENTENCE_KIND``, with the sentence as its evidence;
* with a passage title (corpus rows carry one) and a topic other than the title, the title
  entity gets (title; ``PASSAGE_RELATION``; topic) once per chunk, so a passage's topics hang
  together as the passage does; without a title, a topic that nothing else links gets the same
  fact from the chunk's running subject.

Noise control: function words (``kgviz.offline.stopwords.STOPWORDS``), pronouns and question words
are never mentions here, even capitalised at the start of a sentence, and an unresolved pronoun is
dropped. The order is the sentence's, so the output is deterministic.
"""
from __future__ import annotations

import re
from functools import lru_cache

from kgviz.facts.triples import SENTENCE_KIND, SENTENCE_RELATION, ExtractedTriple, Mention
from kgviz.offline.lexicon import STOP_CAPS
from kgviz.offline.mentions import Context, Span, as_mention
from kgviz.offline.stopwords import STOPWORDS

PASSAGE_RELATION = "passage mentions"
# words that are never an entity on their own (noise control; ours)
NOISE_WORDS = STOPWORDS | STOP_CAPS | frozenset(
    "what which who whom whose why how when where whatever whoever however it its he she they them "
    "him her his hers their theirs this that these those i me my we us our you your".split()
)
_RECORD_ID = re.compile(r"^[\w.\-:#]*\d[\w.\-:#]*$")  # "musique-hr-00012": a loader's id, not a title
_PARENS = re.compile(r"\s*\([^()]*\)")
_WORDS = re.compile(r"\w+")


@lru_cache(maxsize=1 << 16)  # pure, and asked again for every mention of a name (issue 29)
def normalise_key(text: str) -> str:
    """A light comparison key (case and punctuation folded, a leading article dropped); entity
    resolution (kgviz.index.resolve) applies the full rules later."""
    words = _WORDS.findall(text.casefold().replace("'s", ""))
    if len(words) > 1 and words[0] in ("the", "a", "an"):
        words = words[1:]
    return " ".join(words)


def is_noise(text: str) -> bool:
    """A mention that must not become an entity: empty after normalisation, or one function
    word, pronoun or question word ("What", "It", "Those")."""
    key = normalise_key(text)
    return not key or key in NOISE_WORDS


def title_mention(title: str) -> Mention | None:
    """The passage title as a mention, without a disambiguator ("Hello Love (song)" ->
    "Hello Love"); None for no title, a record id or noise."""
    t = " ".join(_PARENS.sub("", title or "").split())
    if not t or _RECORD_ID.match(t) or is_noise(t) or not any(c.isalpha() for c in t):
        return None
    return Mention(t)


def sentence_facts(
    sentence: str,
    spans: list[Span],
    pattern: list[ExtractedTriple],
    ctx_subject: Mention | None,
    ctx: Context,
    title: Mention | None,
    linked_topics: set[str],
) -> list[ExtractedTriple]:
    """Sentence facts for one sentence (see the module docstring).

    ``spans`` are the sentence's mentions found before its patterns ran (so pronouns resolve
    to what they meant then), ``pattern`` the facts the patterns read from it, ``ctx_subject``
    the chunk's running subject before the sentence, ``linked_topics`` the topic keys this chunk
    already tied to the title (updated here)."""
    mentions = [(sp, as_mention(sp, ctx)) for sp in spans]
    mentions = [(sp, m) for sp, m in mentions if not (sp.kind == "pron" and m.text == sp.text) and not is_noise(m.text)]
    mentions += compounds(sentence.rstrip(".!?;: "), spans)
    topic = _topic(mentions, pattern, ctx_subject, title)
    if topic is None:
        return []
    covered = {normalise_key(m.text) for t in pattern for m in t.mentions()}
    topic_key = normalise_key(topic.text)
    out: list[ExtractedTriple] = []
    seen = {topic_key} | covered
    for sp, m in mentions:
        key = normalise_key(m.text)
        if key in seen:
            continue
        seen.add(key)
        out.append(ExtractedTriple(topic, SENTENCE_RELATION, m, sentence=sentence, kind=SENTENCE_KIND))
        if title is not None and topic_key == normalise_key(title.text):
            linked_topics.add(key)  # already tied to the title: no passage fact for it later
    # the topic itself must be reachable too: tie it to the passage's title, else (when the
    # sentence alone would leave it unlinked) to the chunk's running subject
    anchor = title if title is not None else (ctx_subject if not out and topic_key not in covered else None)
    if anchor is not None and topic_key != normalise_key(anchor.text) and topic_key not in linked_topics:
        linked_topics.add(topic_key)
        out.append(ExtractedTriple(anchor, PASSAGE_RELATION, topic, sentence=sentence, kind=SENTENCE_KIND))
    return out


_LIST_BEFORE = re.compile(r"(?:,|\band|\bor)\s*$")
# what may follow the second name: the end, punctuation, or a lowercase word (also after
# "and"/"or": "Hastings, Minnesota and graduated"), never "and Kell" (a list goes on)
_COMPOUND_END = re.compile(r"^(?:\s*$|\s*[.;:)\]]|,?\s+(?:and|or)\s+[a-z]|,?\s+(?!(?:and|or)\b)[a-z(\d])")
_PREP_BEFORE = re.compile(r"\b(?:in|at|from|near|of|to)\s+$")  # "born in Columbiana, Alabama, Bentley ..."


def compounds(s: str, spans: list[Span]) -> list[tuple[Span, Mention]]:
    """"Montreal, Quebec" / "Albert I, Duke of Bavaria": two names joined by a comma, the second
    closing the phrase (end, punctuation, a lowercase word; after a preposition also a comma), the
    first not inside a list ("Aldport, Dunmore and Kell" is three places). The parts stay
    mentions too."""
    out: list[tuple[Span, Mention]] = []
    for a, b in zip(spans, spans[1:]):
        if a.kind != "name" or b.kind != "name" or a.possessive or b.possessive or s[a.end : b.start] != ", ":
            continue
        after = s[b.end :]
        if _LIST_BEFORE.search(s[: a.start]) or not (
            _COMPOUND_END.match(after) or (_PREP_BEFORE.search(s[: a.start]) and after.startswith(", "))
        ):
            continue
        text = s[a.start : b.end]
        out.append((Span(a.start, b.end, text, "name", a.type or b.type), Mention(text, a.type or b.type)))
    return out


def _topic(
    mentions: list[tuple[Span, Mention]],
    pattern: list[ExtractedTriple],
    ctx_subject: Mention | None,
    title: Mention | None,
) -> Mention | None:
    for t in pattern:
        if isinstance(t.subject, Mention) and t.subject.type not in ("date", "number") and not is_noise(t.subject.text):
            return t.subject
    if mentions and mentions[0][0].start == 0 and mentions[0][0].kind in ("name", "title", "pron"):
        return mentions[0][1]
    if title is not None:
        return title
    if ctx_subject is not None and not is_noise(ctx_subject.text):
        return ctx_subject
    names = [m for sp, m in mentions if sp.kind in ("name", "title")]
    return names[0] if names else None
