"""Prompts of the claim-level hallucination check (kgviz.verify): split an answer into atomic
claims, then judge each claim against the retrieved context of the method that produced it."""
from __future__ import annotations

SPLIT_CLAIMS_SYSTEM = (
    "You split answers into atomic factual claims. Each claim is one self-contained sentence that "
    "states one fact, with pronouns replaced by the names they refer to. Do not add facts."
)

SPLIT_CLAIMS = """Split the answer below into atomic factual claims.

Question: {question}
Answer: {answer}

Reply with JSON: {{"claims": ["claim 1", "claim 2", ...]}}"""

SPLIT_CLAIMS_SCHEMA = {
    "type": "object",
    "properties": {"claims": {"type": "array", "items": {"type": "string"}}},
    "required": ["claims"],
    "additionalProperties": False,
}

JUDGE_CLAIM_SYSTEM = (
    "You are a strict fact checker. You judge one claim against numbered context passages only, "
    "never against your own knowledge."
)

JUDGE_CLAIM = """Judge the claim against the context.

- "supported": the context states the claim (or it follows directly from the context).
- "contradicted": the context states something incompatible with the claim.
- "not_found": the context neither states nor contradicts the claim.

Cite the numbers of the passages you used in "evidence" (an empty list for not_found). A
"supported" verdict must cite at least one passage, and your reason must agree with your verdict:
if the context does not mention the claim, the verdict is "not_found".

Context:
{context}

Question that was asked: {question}
Claim: {claim}

Reply with JSON: {{"verdict": "supported" | "contradicted" | "not_found", "evidence": [1, 2], "reason": "one short sentence"}}"""

# the values the reply-format line of JUDGE_CLAIM offers: a "reason" that only repeats one of them
# (a 0.5B model wrote "One short sentence") says nothing about the claim (kgviz.tasks.verify)
JUDGE_CLAIM_FORMAT_VALUES = ("supported", "contradicted", "not_found", "one short sentence")

JUDGE_CLAIM_SCHEMA = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": ["supported", "contradicted", "not_found"]},
        "evidence": {"type": "array", "items": {"type": "integer"}},
        "reason": {"type": "string"},
    },
    "required": ["verdict", "evidence", "reason"],
    "additionalProperties": False,
}
