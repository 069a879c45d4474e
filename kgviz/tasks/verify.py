"""The verification tasks: "split_claims" and "judge_claim".

split_claims inputs: ``question``, ``answer``. Value: list[str] of claims.
judge_claim inputs: ``claim``, ``question``, ``items`` (list of (id, text) context items of the
method being judged), optional ``focus`` (the asserted part of a short-answer claim). Value:
kgviz.offline.judge.CheckResult (label, evidence ids, reason).

With an LLM the reply must be JSON (json_schema is sent); a reply that is not valid JSON, or names
an unknown verdict, raises LLMOutputError (the caller labels the claim "unparsed" and keeps the
raw reply). Offline, the heuristics of kgviz.offline.claims / kgviz.offline.judge run instead.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from kgviz.errors import LLMOutputError
from kgviz.offline.claims import split_offline
from kgviz.offline.judge import CheckResult, check_claim
from kgviz.prompts.verify import (
    JUDGE_CLAIM,
    JUDGE_CLAIM_FORMAT_VALUES,
    JUDGE_CLAIM_SCHEMA,
    JUDGE_CLAIM_SYSTEM,
    SPLIT_CLAIMS,
    SPLIT_CLAIMS_SCHEMA,
    SPLIT_CLAIMS_SYSTEM,
)
from kgviz.providers.base import Embedder, extract_json_text
from kgviz.tasks.base import Task, register
from kgviz.tasks.rules import says_conflict, says_insufficient, strip_think

VERDICTS = ("supported", "contradicted", "not_found")
MAX_JUDGE_CONTEXT_CHARS = 24_000  # ours: keeps a judge prompt within small models' context windows


def _json(raw: str, what: str) -> Any:
    text = extract_json_text(strip_think(raw))
    if text is None:
        raise LLMOutputError(f"the {what} reply is not JSON: {raw[:200]!r}",
                             hint="the model ignored the JSON format; retry or pick a model with structured output")
    return json.loads(text)


# --- split_claims --------------------------------------------------------------------------------
def _render_split(inputs: dict[str, Any]) -> str:
    return SPLIT_CLAIMS.format(question=inputs["question"], answer=inputs["answer"])


def _parse_split(raw: str, inputs: dict[str, Any]) -> list[str]:
    data = _json(raw, "claim split")
    claims = data.get("claims") if isinstance(data, dict) else data
    if not isinstance(claims, list) or not all(isinstance(c, str) for c in claims):
        raise LLMOutputError(f"the claim split has no list of strings under \"claims\": {raw[:200]!r}")
    return [c.strip() for c in claims if c.strip()]


def _offline_split(inputs: dict[str, Any], embedder: Embedder) -> tuple[list[str], str]:
    claims = split_offline(inputs["question"], inputs["answer"])
    return [c.text for c in claims], "sentence split + conjunction split (offline heuristic)"


# --- judge_claim ---------------------------------------------------------------------------------
def render_context(items: list[tuple[str, str]]) -> str:
    lines, used = [], 0
    for n, (item_id, text) in enumerate(items, 1):
        line = f"[{n}] ({item_id}) {' '.join(text.split())}"
        if used + len(line) > MAX_JUDGE_CONTEXT_CHARS:
            lines.append(f"... ({len(items) - n + 1} more passages not shown)")
            break
        lines.append(line)
        used += len(line)
    return "\n".join(lines) or "(no context was retrieved)"


def _render_judge(inputs: dict[str, Any]) -> str:
    return JUDGE_CLAIM.format(context=render_context(list(inputs.get("items") or [])),
                              question=inputs.get("question", ""), claim=inputs["claim"])


def _parse_judge(raw: str, inputs: dict[str, Any]) -> CheckResult:
    data = _json(raw, "judge")
    if not isinstance(data, dict):
        raise LLMOutputError(f"the judge reply is not a JSON object: {raw[:200]!r}")
    verdict = str(data.get("verdict", "")).strip().lower().replace(" ", "_").replace("-", "_")
    if verdict not in VERDICTS:
        raise LLMOutputError(f"the judge returned an unknown verdict {data.get('verdict')!r}; "
                             f"expected one of {', '.join(VERDICTS)}")
    reason = str(data.get("reason", "")).strip()
    if echoes_prompt(reason):
        raise LLMOutputError(f"the judge's reason is not about the claim (it repeats the prompt's reply format: "
                             f"{reason!r}), so its verdict {verdict!r} is not counted",
                             hint="a model this small does not judge reliably; try a larger one")
    items = list(inputs.get("items") or [])
    ids: list[str] = []
    for ref in data.get("evidence") or []:
        # the prompt numbers passages; accept a number, "3", "[3]" or the item id itself
        key = str(ref).strip().strip("[]")
        if key.isdigit() and 1 <= int(key) <= len(items):
            ids.append(items[int(key) - 1][0])
        elif any(key == i for i, _ in items):
            ids.append(key)
    return consistent(JudgeResult(verdict, tuple(dict.fromkeys(ids)), reason, judge_said=verdict))


_COUNT_WORDS = frozenset("a an one two three four five 1 2 3 4 5".split())


def _format_words(text: str) -> tuple[str, ...]:
    """Lower-case words with underscores split, count words dropped and plurals folded, so that
    "1 short sentence", "Two short sentences" and "not_found." all read as the format's values."""
    words = re.sub(r"[^a-z0-9 ]", " ", text.lower().replace("_", " ")).split()
    return tuple(w[:-1] if w.endswith("s") and len(w) > 3 else w for w in words if w not in _COUNT_WORDS)


def echoes_prompt(reason: str) -> bool:
    """True when ``reason`` is empty or only repeats a value of the prompt's reply format (a verdict
    name, "one short sentence"): the judge gave no reason about the claim (issue 23)."""
    words = _format_words(reason)
    return not words or words in {_format_words(v) for v in JUDGE_CLAIM_FORMAT_VALUES}


@dataclass(frozen=True)
class JudgeResult(CheckResult):
    """A parsed judge reply; ``judge_said`` is the model's own label, ``adjustment`` says why
    kgviz changed it (empty when the label stands)."""

    judge_said: str = ""
    adjustment: str = ""


def consistent(res: JudgeResult) -> JudgeResult:
    """The label must agree with the judge's own reason and cited evidence (issue 15: a 1.5B judge
    called "1" and an answer given over an empty context "supported"). Rules (ours):

    * "supported" citing no shown passage -> "not_found" (support needs a passage);
    * "supported" whose reason says the context falls short or conflicts -> "not_found";
    * "contradicted" citing no shown passage -> "not_found" (a contradiction needs one too).
    Downgrades only: a rule never makes a claim look better than the judge said."""
    why = ""
    if res.label == "supported" and not res.evidence:
        why = "the judge said supported but cited no passage"
    elif res.label == "supported" and (says_insufficient(res.reason) or says_conflict(res.reason)):
        why = "the judge said supported but its reason says the context does not support the claim"
    elif res.label == "contradicted" and not res.evidence:
        why = "the judge said contradicted but cited no passage"
    if not why:
        return res
    return JudgeResult("not_found", res.evidence, res.reason, judge_said=res.label,
                       adjustment=f"{why}: counted as not_found")


def _offline_judge(inputs: dict[str, Any], embedder: Embedder) -> tuple[CheckResult, str]:
    res = check_claim(inputs["claim"], list(inputs.get("items") or []), embedder,
                      focus=inputs.get("focus", ""), question=inputs.get("question", ""))
    return res, ("offline check (weaker): the answer must be of the asked type, its names/numbers/dates must occur in "
                 "the context, and one sentence must tie it to the question's relation and subject (quoted)")


SPLIT_CLAIMS_TASK = register(Task(name="split_claims", prompt_name="SPLIT_CLAIMS", render=_render_split,
                                  parse=_parse_split, offline=_offline_split, system=SPLIT_CLAIMS_SYSTEM,
                                  max_tokens=512, json_schema=SPLIT_CLAIMS_SCHEMA))
JUDGE_CLAIM_TASK = register(Task(name="judge_claim", prompt_name="JUDGE_CLAIM", render=_render_judge,
                                 parse=_parse_judge, offline=_offline_judge, system=JUDGE_CLAIM_SYSTEM,
                                 max_tokens=256, json_schema=JUDGE_CLAIM_SCHEMA))
