"""Prompts of the shared answer step (kgviz.answer). Every method's context goes through ANSWER,
so methods differ only in what they retrieve; NO_CONTEXT is the no-retrieval baseline, which
exposes what the model answers from its own memory."""
from __future__ import annotations

ANSWER_SYSTEM = (
    "You are a careful question-answering assistant. Reply with the short answer only: a name, "
    "date, number, place, yes/no or a short phrase. No explanation, no full sentence."
)

ANSWER = """Answer the question using only the numbered context below. Do not use outside knowledge.
The numbers [1], [2], ... only label the context items: never answer with an item number.
If the context does not contain the answer, reply exactly: insufficient information

Context:
{context}

Question: {question}
Answer:"""

NO_CONTEXT = """Answer the question from your own knowledge.
If you do not know the answer, reply exactly: insufficient information

Question: {question}
Answer:"""

INSUFFICIENT = "insufficient information"
