"""The offline toolkit: every deterministic text heuristic kgviz runs when no LLM is used.

One place for the small language facts the offline mode relies on, so extraction, the reasoning
tasks and the offline judge share them instead of keeping drifting copies:

- ``stopwords``: stopword lists
- ``stem``: word stemming for content-word overlap
- ``qtype``: what kind of answer a question asks for (number, date, person, place, title, ...)
- ``answer_types``: what kind of thing a span names, from cheap cues (answer and judge)
- ``lexicon``, ``mentions``, ``extract``: the pattern-based triple extractor (task extract_triples)
- ``answer``: the extractive answer (task answer)
- ``kg_rag``: kg-rag's plan, choose and evaluate
- ``kg_infused``: kg-infused's triple selection, summary, query expansion and notes
- ``claims``: the claim split (task split_claims)
- ``judge``: the offline claim check (task judge_claim)

The reasoning tasks (``kgviz.tasks``) hold the prompts and reply parsers and call these when the
provider is offline.

Nothing here calls an LLM, touches the network or imports the graph store. Import the submodules
directly.
"""
