"""Prompt of the KET-RAG skeleton's descriptions (task "describe_skeleton", paper 004 Alg. 1 line 3).

Ours, modelled on the paper. KG-Index (Algorithm 1, §2.3) has the LLM extract entities and
relationships from each chunk and, "for each extracted entity or relationship x, the LLM generates
a textual description t_x along with its embedding φ(t_x)"; the paper prints no prompt (it follows
Microsoft Graph-RAG, whose extraction prompt asks for an entity's "attributes and activities" and
for why two related entities are related). kgviz extracts triples with its own prompt
(kgviz.prompts.extraction), so a description is one more call per extracted entity or
relationship: the chunk, then the item, then one sentence.

The chunk comes first so that the calls for one chunk share their prefix (llama.cpp and most
servers then process only the item's few tokens again). No few-shot example: a first version
listed every item of a chunk with an example, and qwen2.5-coder-0.5b copied the list and the
example instead of describing (sample_recorded/README.md). Written for kgviz.
"""
from __future__ import annotations

DESCRIBE_SKELETON_TASK_NAME = "describe_skeleton"
DESCRIBE_SKELETON_PROMPT_NAME = "DESCRIBE_SKELETON"
DESCRIBE_SKELETON_MAX_OUTPUT_TOKENS = 96  # ours: one or two sentences
DESCRIBE_SKELETON_ORIGIN = "ours, modelled on KET-RAG Alg. 1 line 3 (Graph-RAG's entity and relationship descriptions)"

DESCRIBE_SKELETON_SYSTEM = (
    "You describe an entity or a relationship of a knowledge graph from the text it was read from. "
    "You answer with the description only, in one or two sentences, with no commentary."
)

# what the model is asked to say about each kind of item (Graph-RAG: an entity's attributes and
# activities; why the two ends of a relationship are related)
ITEM_ASKS = {
    "entity": ("the entity", "what it is and what the text says it did or has"),
    "relationship": ("the relationship", "how its two ends are related, with the dates, places and numbers the "
                                          "text gives for it"),
}

# {text}, {what}, {item} and {say} are the only placeholders; values are inserted as they are, so
# braces in the chunk are harmless
DESCRIBE_SKELETON = """Text:
{text}

Using only the text above, describe {what} "{item}" in one or two sentences: {say}.
Write only the description.
Description:"""


def render_describe_skeleton(text: str, kind: str, item: str) -> str:
    """The prompt for one item of a chunk: ``kind`` 'entity' (``item`` its name) or 'relationship'
    (``item`` "subject | relation | object")."""
    from kgviz.prompts.extraction import chunk_text_for_prompt

    what, say = ITEM_ASKS[kind]
    return DESCRIBE_SKELETON.format(text=chunk_text_for_prompt(text), what=what, item=item, say=say)
