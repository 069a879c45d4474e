"""Reading a model's own words against its label (issue 15).

Small models write a label and a reason that disagree: kg-rag's evaluate said "DECISION: STOP"
with "REASON: the facts do not say when he was born"; a judge said "supported" because "the
context does not mention Cape May". These patterns find a reason that says the evidence falls
short, or that it conflicts with the claim. Phrases that deny a shortfall ("nothing is missing")
do not count. Ours: no paper defines this.
"""
from __future__ import annotations

import re

_INSUFFICIENT = re.compile(
    r"\b(?:not enough|insufficient|not sufficient|(?:does|do|did)\s*(?:n't|not)\s+(?:contain|mention|include|"
    r"state|say|give|answer|provide|specify|tell|show|support|confirm)|no information|no mention|no evidence|"
    r"lacks?|lacking|cannot (?:be )?(?:answer(?:ed)?|verif(?:y|ied)|confirm(?:ed)?)|can't (?:be )?answer(?:ed)?|"
    r"unable to (?:answer|verify|confirm)|unknown|unclear|not (?:yet )?(?:known|found|present|given|stated|"
    r"mentioned|provided|specified|available|supported)|(?<!nothing )(?<!nothing is )(?<!not )missing|"
    r"need(?:s)? more)\b",
    re.I,
)
_CONFLICT = re.compile(r"\b(?:contradict(?:s|ed|ion)?|incompatible|conflicts? with|inconsistent with|"
                       r"is wrong|is incorrect|is false)\b", re.I)


def says_insufficient(text: str) -> bool:
    """The text says the evidence does not (fully) hold the answer or the claim."""
    return bool(_INSUFFICIENT.search(text or ""))


def says_conflict(text: str) -> bool:
    """The text says the evidence conflicts with the claim."""
    return bool(_CONFLICT.search(text or ""))
