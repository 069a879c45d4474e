"""The offline toolkit's stopword list, and the few documented extensions a caller needs.

``STOPWORDS`` is the one list: English function words (articles, pronouns, prepositions,
auxiliaries, conjunctions, question words) whose presence says nothing about what a text is
about. Content-word overlap (the extractive answer, kg-rag's and kg-infused's offline ranking,
the offline judge), KET's keyword layer and its lexical KNN all read it.

Extensions, each for a reason its caller cannot avoid (ours):

- ``PLAN_STOPWORDS``: kg-rag's offline heuristics (plan, choose, evaluate) turn a question's
  content words into relations to walk; "called", "named", "name", "first", "last" qualify an
  entity ("the first film", "a town called X") rather than naming a relation.
- ``CLAIM_STOPWORDS``: the offline judge reads claims written as "The answer to Q is A"; the
  word "answer" is the template's, not the claim's.

Not stopword lists, though they look alike: the extractor's ``_NP_STOP`` (words that end a noun
phrase, ``extract.py``) and ``lexicon.STOP_CAPS`` (capitalised words that are not names) are
grammar rules of the pattern extractor; the reply parser's word list (``kgviz.facts.parse``)
names what can never be an entity in an LLM's reply.

``ENGLISH`` is the general English list the union starts from, and the list the hashing
embedder down-weights. The embedder keeps it on purpose: its vectors are stored in every database
built with ``hashing-<dim>``, and a query must be embedded exactly as those were, so its word list
changes only together with a new embedder id.
"""
from __future__ import annotations

ENGLISH = frozenset(
    """a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    s t d ll m re ve""".split()
)

# function words the task heuristics' own lists had beyond ENGLISH (quantifiers, modals, "whose")
STOPWORDS = ENGLISH | frozenset("either neither many much may might shall one ones onto whose yes".split())

PLAN_STOPWORDS = STOPWORDS | frozenset("called named name first last".split())

CLAIM_STOPWORDS = STOPWORDS | frozenset(["answer"])
