"""The failure explorer's data: one row per (question, method) of an evaluation's results file,
each with the stage where its answer was lost, the per-method taxonomy of those stages (counts,
shares with 95 % CIs), the "A right / B wrong" pairs between methods, filters, and CSV / JSONL
exports that read back to the same rows. The CLI (`kgviz failures`) and the Evaluate page both
read this module; neither decides a stage itself.

A row's stage, the first that applies:

* ``run failed``           the run ended with an error (no answer, in no mean)
* ``correct``              right (EM, or the gold answer contained: kgviz.verify.outcome) and not
                           judged unsupported
* ``judge disagreement``   right but a claim judged unsupported, or wrong but every claim judged
                           supported: the answer metric and the claim judge disagree
* ``abstained``            the answer step said it cannot answer
* the gold funnel's stage  (kgviz.verify.funnel) for the other wrong answers: not in corpus,
                           extraction miss, entry-point miss, retrieval/traversal miss, budget cut
                           (the funnel's "context truncation"), generation error, no retrieval
* ``unclassified``         wrong, yet the funnel saw a gold answer in it (its substring test is
                           looser than EM/Acc) or recorded no stage
* ``no gold``              the question has no gold answer: right or wrong cannot be decided

A *failure* is every row whose stage is not ``correct``; per method the stage counts sum to its
failures. "Right" and "wrong" below mean the correctness mark (None for a failed run or no gold).
"""
from __future__ import annotations

import csv
import io
import json
import re
from collections import Counter
from dataclasses import asdict, dataclass, field, fields
from itertools import permutations
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from kgviz.errors import EvaluationError
from kgviz.evaluate.labels import Agreement, Labels, agreement, label_key
from kgviz.evaluate.runner import EvalRecord
from kgviz.evaluate.stats import DEFAULT_N_BOOT, DEFAULT_SEED, bootstrap_shares
from kgviz.verify.outcome import correctness, groundedness, of_record

CORRECT, RUN_FAILED, JUDGE, ABSTAINED, UNCLASSIFIED, NO_GOLD = (
    "correct", "run failed", "judge disagreement", "abstained", "unclassified", "no gold")
BUDGET_CUT = "budget cut"
# funnel label -> stage (the funnel's own names, except its "context truncation")
_FROM_FUNNEL = {"not in corpus": "not in corpus", "extraction miss": "extraction miss",
                "entry-point miss": "entry-point miss", "retrieval/traversal miss": "retrieval/traversal miss",
                "context truncation": BUDGET_CUT, "generation error": "generation error",
                "abstained": ABSTAINED, "no retrieval": "no retrieval", "method failed": RUN_FAILED}
# display order: along the pipeline, then the answer, then the rest
STAGES = (RUN_FAILED, "not in corpus", "extraction miss", "entry-point miss", "retrieval/traversal miss", BUDGET_CUT,
          "generation error", ABSTAINED, "no retrieval", JUDGE, UNCLASSIFIED, NO_GOLD, CORRECT)
FAILURE_STAGES = STAGES[:-1]
# kgviz.verify.outcome kinds, for the outcome filter (with gold answers, then without)
OUTCOME_KINDS = ("failed", "abstained", "right_grounded", "right_unsupported", "right_unverified", "grounded_wrong",
                 "wrong_unsupported", "wrong_unverified", "grounded", "hallucinated", "unverified")
FILTERS_FILE = "failure_filters.json"  # saved filters, in the workspace folder beside graph.kuzu


@dataclass
class FailureRow:
    """One run of the results file as the explorer shows it. ``correct`` / ``grounded`` are None
    when undecidable (failed run, no gold, abstention for ``grounded``)."""

    qid: str
    method: str
    question: str
    gold: str  # the gold answers joined with " | "
    answer: str
    error: str
    outcome: str  # kgviz.verify.outcome kind, e.g. "grounded_wrong"
    correct: bool | None
    grounded: bool | None
    abstained: bool
    failed: bool
    stage: str
    funnel: str  # the gold funnel's own label, as recorded
    gold_in_context: bool  # a gold answer was in the context the answer step kept
    em: float | None
    f1: float | None
    tokens: int
    context_tokens: int
    cost_usd: float
    latency_s: float
    human_right: bool | None = None  # a person's verdict on this answer (kgviz.evaluate.labels)
    human_note: str = ""
    human_claims_right: int = 0  # claims whose judge verdict a person called right
    human_claims_wrong: int = 0  # ... and wrong
    human_items_relevant: int = 0  # context items a person called relevant to the question
    human_items_irrelevant: int = 0

    def to_dict(self) -> dict[str, Any]:
        # flat fields: a shallow copy (asdict deep-copies, 10x slower on a 10,000-row export)
        return {name: getattr(self, name) for name in COLUMNS}


COLUMNS = tuple(f.name for f in fields(FailureRow))


def stage_of(rec: EvalRecord, correct: bool | None, grounded: bool | None) -> str:
    if rec.error:
        return RUN_FAILED
    if correct is None:
        return NO_GOLD
    if correct:
        return JUDGE if grounded is False else CORRECT
    if rec.abstained:
        return ABSTAINED
    if grounded is True:
        return JUDGE
    return _FROM_FUNNEL.get(str(rec.funnel.get("label", "")), UNCLASSIFIED)


def row_of(rec: EvalRecord) -> FailureRow:
    failed = bool(rec.error)
    m = rec.metrics or {}
    correct = None if failed or not rec.answers else bool(
        correctness(float(m.get("em", 0.0)), float(m.get("f1", 0.0)), float(m.get("acc", 0.0))).ok)
    v = rec.verdict or {}
    labels = v.get("labels") or [c.get("label", "") for c in v.get("claims", [])]
    grounded = None if failed or rec.abstained else groundedness(labels).ok
    return FailureRow(
        qid=rec.qid, method=rec.method, question=rec.question, gold=" | ".join(rec.answers),
        answer="" if failed else rec.answer, error=rec.error, outcome=of_record(rec).kind, correct=correct,
        grounded=grounded, abstained=bool(rec.abstained), failed=failed, stage=stage_of(rec, correct, grounded),
        funnel=str(rec.funnel.get("label", "")), gold_in_context=bool(rec.funnel.get("in_kept_context", False)),
        em=None if failed else float(m.get("em", 0.0)), f1=None if failed else float(m.get("f1", 0.0)),
        tokens=int(rec.tokens), context_tokens=int(rec.context_tokens), cost_usd=float(rec.cost_usd),
        latency_s=float(rec.latency_s))


def rows_of(records: Iterable[EvalRecord], labels: Labels | None = None) -> list[FailureRow]:
    """Rows of ``records``, with the human labels of ``labels`` (kgviz.evaluate.labels) filled in:
    the run's own, and how many of its claims and context items were labelled which way."""
    records = list(records)
    rows = [row_of(r) for r in records]
    if not labels:
        return rows
    for rec, r in zip(records, rows):
        lab = labels.run(r.question, r.method, r.answer, r.qid)
        if lab is not None:
            r.human_right, r.human_note = lab.right, lab.note
        if r.failed:
            continue
        key = label_key(r.question, r.method, r.answer)
        for c in (rec.verdict or {}).get("claims", []):
            cl = labels.claim(key, str(c.get("text", "")))
            if cl is not None and cl.right is not None:
                r.human_claims_right += cl.right
                r.human_claims_wrong += not cl.right
        for il in labels.items_of(key).values():
            if il.relevant is not None:
                r.human_items_relevant += il.relevant
                r.human_items_irrelevant += not il.relevant
    return rows


# --- taxonomy and disagreements ------------------------------------------------------------------
@dataclass(frozen=True)
class StageShare:
    stage: str
    count: int
    share: float  # of the method's runs
    lo: float
    hi: float

    def to_dict(self) -> dict[str, Any]:
        return {"count": self.count, "share": round(self.share, 6), "lo": round(self.lo, 6),
                "hi": round(self.hi, 6)}


@dataclass
class MethodTaxonomy:
    method: str
    runs: int
    failures: int  # runs whose stage is not "correct"
    stages: dict[str, int]  # failure stage -> count (only stages that occur), in STAGES order
    shares: list[StageShare] = field(default_factory=list)  # every failure stage, with its CI
    examples: dict[str, str] = field(default_factory=dict)  # stage -> the first question id with it

    def to_dict(self) -> dict[str, Any]:
        return {"runs": self.runs, "failures": self.failures, "stages": self.stages,
                "shares": {s.stage: s.to_dict() for s in self.shares if s.count}, "examples": self.examples}


def taxonomy(rows: Sequence[FailureRow], *, n_boot: int = DEFAULT_N_BOOT,
             seed: int = DEFAULT_SEED) -> dict[str, MethodTaxonomy]:
    """Per method (first-seen order): stage counts and each stage's share of the method's runs with
    a 95 % percentile-bootstrap CI over runs (kgviz.evaluate.stats)."""
    out: dict[str, MethodTaxonomy] = {}
    for method in dict.fromkeys(r.method for r in rows):
        mine = [r for r in rows if r.method == method]
        counts = Counter(r.stage for r in mine)
        stages = {s: counts[s] for s in FAILURE_STAGES if counts[s]}
        est = bootstrap_shares([r.stage for r in mine], FAILURE_STAGES, n_boot=n_boot, seed=seed)
        shares = [StageShare(s, counts[s], est[s].mean, est[s].lo, est[s].hi) for s in FAILURE_STAGES]
        examples = {s: next(r.qid for r in mine if r.stage == s) for s in stages}
        out[method] = MethodTaxonomy(method, len(mine), sum(stages.values()), stages, shares, examples)
    return out


@dataclass(frozen=True)
class Disagreement:
    """Questions on which method ``a`` was right and ``b`` wrong (both ran without failing)."""

    a: str
    b: str
    qids: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "n": len(self.qids), "qids": list(self.qids)}


def disagreements(rows: Sequence[FailureRow]) -> list[Disagreement]:
    """Every ordered pair (A, B) with at least one question where A is right and B wrong."""
    right: dict[tuple[str, str], bool] = {(r.qid, r.method): r.correct for r in rows if r.correct is not None}
    methods = list(dict.fromkeys(r.method for r in rows))
    qids = list(dict.fromkeys(r.qid for r in rows))
    out = []
    for a, b in permutations(methods, 2):
        hit = tuple(q for q in qids if right.get((q, a)) is True and right.get((q, b)) is False)
        if hit:
            out.append(Disagreement(a, b, hit))
    return out


def pair_rows(rows: Sequence[FailureRow], a: str, b: str) -> list[tuple[FailureRow, FailureRow]]:
    """(A's row, B's row) for each question where A is right and B wrong."""
    by = {(r.qid, r.method): r for r in rows}
    return [(by[(q, a)], by[(q, b)]) for d in disagreements(rows) if (d.a, d.b) == (a, b) for q in d.qids]


def report(rows: Sequence[FailureRow], *, results: str = "", n_boot: int = DEFAULT_N_BOOT,
           seed: int = DEFAULT_SEED, claim_agreement: Agreement | None = None) -> dict[str, Any]:
    """The `kgviz failures --json` document (``claim_agreement``: the judge's claim verdicts vs the
    human claim labels, kgviz.evaluate.labels.claim_pairs)."""
    return {"results": results, "n_rows": len(rows), "n_questions": len({r.qid for r in rows}),
            "stage_order": list(STAGES),
            "methods": {m: t.to_dict() for m, t in taxonomy(rows, n_boot=n_boot, seed=seed).items()},
            "disagreements": [d.to_dict() for d in disagreements(rows)],
            "human_agreement": agreement((bool(r.correct), r.human_right) for r in rows
                                         if r.correct is not None and r.human_right is not None).to_dict(),
            "human_claim_agreement": (claim_agreement or agreement([])).to_dict()}


# --- filtering -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class FailureFilter:
    """Which rows to show; an empty tuple means "any"."""

    methods: tuple[str, ...] = ()
    stages: tuple[str, ...] = ()
    outcomes: tuple[str, ...] = ()  # kgviz.verify.outcome kinds
    disagree: bool = False  # only questions where the methods disagree (right for some, wrong for others)
    gold_in_context_wrong: bool = False  # only wrong answers whose kept context held a gold answer
    text: str = ""  # case-insensitive, in question, gold, answer, error or question id

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "FailureFilter":
        try:
            return cls(methods=tuple(d.get("methods", ())), stages=tuple(d.get("stages", ())),
                       outcomes=tuple(d.get("outcomes", ())), disagree=bool(d.get("disagree", False)),
                       gold_in_context_wrong=bool(d.get("gold_in_context_wrong", False)), text=str(d.get("text", "")))
        except (AttributeError, TypeError) as exc:
            raise EvaluationError(f"a saved failure filter is malformed ({exc})") from exc


def disagreeing_qids(rows: Sequence[FailureRow]) -> set[str]:
    seen: dict[str, set[bool]] = {}
    for r in rows:
        if r.correct is not None:
            seen.setdefault(r.qid, set()).add(r.correct)
    return {q for q, v in seen.items() if len(v) == 2}


def apply_filter(rows: Sequence[FailureRow], f: FailureFilter) -> list[FailureRow]:
    split = disagreeing_qids(rows) if f.disagree else set()  # over all methods, before the method filter
    needle = f.text.strip().lower()
    out = []
    for r in rows:
        if (f.methods and r.method not in f.methods) or (f.stages and r.stage not in f.stages) \
                or (f.outcomes and r.outcome not in f.outcomes) or (f.disagree and r.qid not in split) \
                or (f.gold_in_context_wrong and not (r.gold_in_context and r.correct is False)):
            continue
        if needle and needle not in " ".join((r.qid, r.question, r.gold, r.answer, r.error)).lower():
            continue
        out.append(r)
    return out


def sort_rows(rows: Sequence[FailureRow], column: str, *, descending: bool = False) -> list[FailureRow]:
    """Rows sorted by one column (stable; an empty value, None, sorts last either way)."""
    if column not in COLUMNS:
        raise EvaluationError(f"no column {column!r} to sort by", hint=f"one of {', '.join(COLUMNS)}")
    present = [r for r in rows if getattr(r, column) is not None]
    missing = [r for r in rows if getattr(r, column) is None]
    return sorted(present, key=lambda r: getattr(r, column), reverse=descending) + missing


@dataclass(frozen=True)
class Page:
    rows: list[FailureRow]
    number: int  # 1-based, after clamping into range
    pages: int
    first: int  # 1-based index of the first row shown (0 when none)
    last: int


def page_of(rows: Sequence[FailureRow], number: int, size: int) -> Page:
    """Page ``number`` (1-based, clamped into 1..pages) of ``size`` rows: the table draws one page,
    so a big evaluation never sends every row to the browser."""
    if size < 1:
        raise EvaluationError(f"page size must be at least 1 (got {size})")
    pages = max(1, -(-len(rows) // size))
    number = min(max(1, int(number)), pages)
    start = (number - 1) * size
    shown = list(rows[start: start + size])
    return Page(shown, number, pages, start + 1 if shown else 0, start + len(shown))


_NAME = re.compile(r"^[\w .\-]{1,60}$")


def load_filters(folder: str | Path) -> dict[str, FailureFilter]:
    """Saved filters of a workspace (none when the file does not exist)."""
    path = Path(folder) / FILTERS_FILE
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {str(k): FailureFilter.from_dict(v) for k, v in dict(data).items()}
    except (ValueError, TypeError) as exc:
        raise EvaluationError(f"{path} is not a file of saved filters ({exc})",
                              hint="delete it to start over (it holds only saved filters)") from exc


def save_filter(folder: str | Path, name: str, f: FailureFilter) -> Path:
    """Save (or replace) ``f`` under ``name``; atomic rewrite."""
    name = name.strip()
    if not _NAME.match(name):
        raise EvaluationError(f"bad filter name {name!r}",
                              hint="use 1 to 60 letters, digits, spaces, dots, dashes or underscores")
    saved = load_filters(folder)
    saved[name] = f
    path = Path(folder) / FILTERS_FILE
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({k: v.to_dict() for k, v in saved.items()}, indent=2), encoding="utf-8")
    tmp.replace(path)
    return path


# --- exports -------------------------------------------------------------------------------------


def to_jsonl(rows: Sequence[FailureRow]) -> str:
    return "".join(json.dumps(r.to_dict(), ensure_ascii=False) + "\n" for r in rows)


def to_csv(rows: Sequence[FailureRow]) -> str:
    """CSV with a header; booleans as true/false, None as an empty cell."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: "" if v is None else ("true" if v is True else "false" if v is False else v)
                    for k, v in r.to_dict().items()})
    return buf.getvalue()


def _cell(name: str, text: str) -> Any:
    kind = FailureRow.__dataclass_fields__[name].type
    if "bool" in kind:
        if text == "" and "None" in kind:
            return None
        return {"true": True, "false": False}[text]
    if "float" in kind:
        return None if text == "" and "None" in kind else float(text)
    if "int" in kind:
        return int(text)
    return text


def read_csv(path: str | Path) -> list[FailureRow]:
    try:
        with Path(path).open(encoding="utf-8", newline="") as fh:
            return [FailureRow(**{k: _cell(k, v) for k, v in row.items()}) for row in csv.DictReader(fh)]
    except (KeyError, ValueError, TypeError) as exc:
        raise EvaluationError(f"{path} is not a failure-table CSV ({exc})") from exc


def read_jsonl(path: str | Path) -> list[FailureRow]:
    try:
        return [FailureRow(**json.loads(line)) for line in Path(path).read_text(encoding="utf-8").splitlines()
                if line.strip()]
    except (ValueError, TypeError) as exc:
        raise EvaluationError(f"{path} is not a failure-table JSONL ({exc})") from exc
