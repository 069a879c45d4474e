"""Claim-level verification of one run: split its answer into claims and judge each claim against
*that run's* retrieved context, through the app's Reasoner (an LLM judge with JSON output, or the
offline check, labelled weaker).

Hallucination (as KG-RAG reports it): a non-abstaining answer with at least one unsupported claim,
i.e. a claim judged ``not_found`` or ``contradicted``. Abstentions are counted separately. A claim
whose judge reply could not be parsed is labelled ``unparsed`` (shown, not counted either way).

Evidence is source text only (issue 23): chunks, sub-chunks, sentences, extracted triples and
entity descriptions (built from their source sentences), each with its provenance. A method's own
generated text (kg-infused's KG-augmented note, kind ``note``) is its *reasoning*: listed on the
verdict (``reasoning_ids``), never shown to the judge, never cited. A run whose context holds no
source text at all has nothing that could support a claim: every claim is ``not_found`` and no
judge is asked.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kgviz.claims import Claim, is_abstention, is_short, locate, short_claim
from kgviz.errors import LLMOutputError
from kgviz.reasoning import Reasoner
from kgviz.run import Run
from kgviz.types import Usage
from kgviz.offline.judge import OFFLINE_JUDGE_LABEL

HALLUCINATION_DEFINITION = (
    "Hallucination = an answer that does not abstain and has at least one claim the method's own "
    "retrieved context does not support (judged not_found or contradicted). Abstentions "
    "(\"insufficient information\", \"I don't know\", ...) are counted separately."
)
UNSUPPORTED = ("not_found", "contradicted")
# context item kinds that are source text (kgviz.methods.base.ContextItem.kind); anything else,
# such as a method's "note", is the method's own words
SOURCE_KINDS = frozenset({"chunk", "subchunk", "sentence", "triple", "entity"})
LABELS = ("supported", "contradicted", "not_found", "unparsed")


@dataclass
class ClaimVerdict:
    text: str
    label: str  # supported | contradicted | not_found | unparsed
    evidence: list[str] = field(default_factory=list)  # context item ids
    reason: str = ""
    start: int = -1  # span in the answer; -1 when the claim is a rephrasing
    end: int = -1
    raw_output: str = ""  # the judge's reply when it could not be parsed
    judge_label: str = ""  # the LLM judge's own label when kgviz overruled it (else empty)
    adjustment: str = ""  # why it was overruled (kgviz.tasks.verify.consistent)
    quote: str = ""  # offline check: the deciding sentence, verbatim from the evidence
    matched: list[str] = field(default_factory=list)  # offline check: the words of ``quote`` that decided

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Verdict:
    method: str
    answer: str
    judge: str  # OFFLINE_JUDGE_LABEL or "LLM judge (provider:model)"
    claims: list[ClaimVerdict] = field(default_factory=list)
    abstained: bool = False
    failed: bool = False  # the run itself failed: nothing to verify
    split: str = ""  # how the claims were obtained
    errors: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    reasoning_ids: list[str] = field(default_factory=list)  # the method's own text: shown, never evidence

    @property
    def unsupported(self) -> int:
        return sum(c.label in UNSUPPORTED for c in self.claims)

    @property
    def disagreements(self) -> int:
        """Claims whose judge label disagreed with its own reason or evidence (and was downgraded)."""
        return sum(bool(c.adjustment) for c in self.claims)

    @property
    def hallucinated(self) -> bool:
        return not self.abstained and not self.failed and self.unsupported > 0

    def counts(self) -> dict[str, int]:
        return {label: sum(c.label == label for c in self.claims) for label in LABELS}

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "judge": self.judge, "abstained": self.abstained,
                "hallucinated": self.hallucinated, "failed": self.failed, "split": self.split,
                "claims": [c.to_dict() for c in self.claims],
                "labels": [c.label for c in self.claims],
                "evidence_ids": sorted({e for c in self.claims for e in c.evidence}),
                "counts": self.counts(), "judge_disagreements": self.disagreements,
                "reasoning_ids": list(self.reasoning_ids),
                "errors": list(self.errors), "usage": self.usage.to_dict()}


def judge_label(reasoner: Reasoner) -> str:
    return OFFLINE_JUDGE_LABEL if reasoner.is_offline else f"LLM judge ({reasoner.mode})"


def context_items(run: Run) -> list[tuple[str, str]]:
    """The (id, text) evidence the judge may read and cite: the run's source-text items, then the
    source text its notes were written from (``RetrievedContext.sources``: kg-infused's passages
    and triples when the answer step saw only the note)."""
    held = [i for i in run.context.items if i.kind in SOURCE_KINDS]
    ids = {i.id for i in held}
    held += [i for i in run.context.sources if i.kind in SOURCE_KINDS and i.id not in ids]
    return [(i.id, i.text) for i in held]


def reasoning_ids(run: Run) -> list[str]:
    """Ids of the context items the method wrote itself (notes): its reasoning, not evidence."""
    return [i.id for i in run.context.items if i.kind not in SOURCE_KINDS]


def no_source_reason(run: Run) -> str:
    own = reasoning_ids(run)
    if not own:
        return "the method retrieved no context: nothing can support the claim"
    return (f"the method's context holds no source text, only its own words ({', '.join(own)}): that is its "
            "reasoning, not evidence")


def _claims(run: Run, reasoner: Reasoner, verdict: Verdict) -> list[Claim]:
    if is_short(run.answer):  # one claim, no model call needed
        verdict.split = "short answer: one claim"
        return [short_claim(run.question, run.answer)]
    try:
        res = reasoner.run("split_claims", step="verify: split claims", question=run.question, answer=run.answer)
    except LLMOutputError as exc:
        call = getattr(exc, "call", None)
        if call is not None:  # the failed call still cost tokens
            verdict.usage = verdict.usage + call.usage
        # visible, not silent: the whole answer is judged as one claim and the error is listed
        verdict.errors.append(f"claim split failed, judging the whole answer as one claim: {exc.user_message()}")
        verdict.split = "whole answer (split failed)"
        text = run.answer.strip()
        return [Claim(text, 0, len(run.answer))]
    verdict.usage = verdict.usage + res.call.usage
    verdict.split = res.call.heuristic or f"SPLIT_CLAIMS ({res.call.mode})"
    return [Claim(c, *locate(run.answer, c)) for c in res.value]


def verify_run(run: Run, reasoner: Reasoner) -> Verdict:
    """Split ``run.answer`` into claims and judge each against ``run.context``."""
    verdict = Verdict(run.method, run.answer, judge_label(reasoner))
    if run.error:
        verdict.failed = True
        verdict.split = "run failed: nothing to verify"
        return verdict
    if is_abstention(run.answer):
        verdict.abstained = True
        verdict.split = "abstention: no claims"
        return verdict
    items = context_items(run)
    verdict.reasoning_ids = reasoning_ids(run)
    for claim in _claims(run, reasoner, verdict):
        cv = ClaimVerdict(claim.text, "unparsed", start=claim.start, end=claim.end)
        if not items:  # no judge call: with no source text nothing can be supported
            cv.label, cv.reason = "not_found", no_source_reason(run)
            verdict.claims.append(cv)
            continue
        try:
            res = reasoner.run("judge_claim", step="verify: judge claim", claim=claim.text, focus=claim.focus,
                               question=run.question, items=items)
        except LLMOutputError as exc:
            call = getattr(exc, "call", None)
            cv.reason = exc.user_message()
            cv.raw_output = call.raw_output if call is not None else ""
            if call is not None:
                verdict.usage = verdict.usage + call.usage
            verdict.errors.append(f"judge reply for claim {len(verdict.claims) + 1} could not be parsed")
        else:
            verdict.usage = verdict.usage + res.call.usage
            cv.label, cv.evidence, cv.reason = res.value.label, list(res.value.evidence), res.value.reason
            cv.quote, cv.matched = res.value.quote, list(res.value.matched)
            cv.adjustment = getattr(res.value, "adjustment", "")
            if cv.adjustment:  # shown, not silent: the claim's row and the verdict's count say so
                cv.judge_label = res.value.judge_said
                verdict.errors.append(f"claim {len(verdict.claims) + 1}: {cv.adjustment}")
        verdict.claims.append(cv)
    return verdict
