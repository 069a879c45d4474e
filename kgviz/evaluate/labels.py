"""Human labels: a person marks a run's answer right or wrong, a claim's verdict right or wrong,
and a context item relevant or irrelevant, each with an optional note.

Labels live in the workspace folder (``human_labels.json`` beside graph.kuzu), so they survive an
app restart and a rebuild (the file is not part of the graph). Keys are made of texts and ids that
do not depend on the rest of the graph, so adding an unrelated document changes none of them:

* a run      (question, method, answer): the question's text (whitespace folded) and a hash of
             the answer, so Evaluate, Compare and Trace find the same label for the same answer, a
             re-run that answers the same gets it back, and one that answers differently is
             unlabelled (the person judged the other answer);
* a claim    the run's key and a hash of the claim's text;
* an item    the run's key and the item's id: a chunk is ``<document id>#c<n>`` (the document id
             hashes its text), a triple ``tri:`` + a hash of its subject, relation and object.

Agreement (Cohen's κ) of the automatic marks with the human labels: for runs, the correctness mark
(kgviz.verify.outcome: EM, or the gold answer contained) against "right"; for claims, the judge's
"supported" against what the person says the claim is (the judge's verdict if they call it right,
its opposite if wrong; contradicted and not found are both "not supported", unparsed claims are
left out). κ is None when chance agreement is 1 (e.g. both said "right" every time).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable

from kgviz.errors import EvaluationError

LABELS_FILE = "human_labels.json"
FORMAT = 2  # 1 was a flat {run key: label} object keyed by question id (read, never written)
KINDS = ("runs", "claims", "items")


@dataclass(frozen=True)
class RunLabel:
    right: bool | None  # is the answer right? None: only a note
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ClaimLabel:
    right: bool | None  # is the judge's verdict on this claim right? None: only a note
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ItemLabel:
    relevant: bool | None  # is this context item relevant to the question? None: only a note
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _h(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def label_key(question: str, method: str, answer: str) -> str:
    """A run's key: the question's text (not its id: Compare and Trace have no id), the method, the answer."""
    return f"q:{_h(' '.join(question.split()))}|{method}|{_h(answer)}"


def legacy_key(qid: str, method: str, answer: str) -> str:
    """The key of format 1 (by question id), still read so an older label is not lost."""
    return f"{qid}|{method}|{_h(answer)}"


def claim_key(run_key: str, claim: str) -> str:
    return f"{run_key}|claim:{_h(' '.join(claim.split()))}"


def item_key(run_key: str, item_id: str) -> str:
    return f"{run_key}|item:{item_id}"


@dataclass
class Labels:
    """Every label of a workspace, by kind and key."""

    runs: dict[str, RunLabel] = field(default_factory=dict)
    claims: dict[str, ClaimLabel] = field(default_factory=dict)
    items: dict[str, ItemLabel] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.runs) + len(self.claims) + len(self.items)

    def run(self, question: str, method: str, answer: str, qid: str = "") -> RunLabel | None:
        found = self.runs.get(label_key(question, method, answer))
        return found if found is not None or not qid else self.runs.get(legacy_key(qid, method, answer))

    def claim(self, run_key: str, claim: str) -> ClaimLabel | None:
        return self.claims.get(claim_key(run_key, claim))

    def item(self, run_key: str, item_id: str) -> ItemLabel | None:
        return self.items.get(item_key(run_key, item_id))

    def claims_of(self, run_key: str) -> list[ClaimLabel]:
        """The claim labels of one run (its claims' texts are not needed to count them)."""
        prefix = f"{run_key}|claim:"
        return [v for k, v in self.claims.items() if k.startswith(prefix)]

    def items_of(self, run_key: str) -> dict[str, ItemLabel]:
        """item id -> label, for one run."""
        prefix = item_key(run_key, "")
        return {k[len(prefix):]: v for k, v in self.items.items() if k.startswith(prefix)}

    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, **{kind: {k: v.to_dict() for k, v in getattr(self, kind).items()} for kind in KINDS}}


def _opt_bool(v: Any) -> bool | None:
    return None if v is None else bool(v)


def load_labels(folder: str | Path) -> Labels:
    path = Path(folder) / LABELS_FILE
    if not path.is_file():
        return Labels()
    try:
        data = dict(json.loads(path.read_text(encoding="utf-8")))
        if "format" not in data:  # format 1: run labels only
            data = {"runs": data}
        return Labels(
            runs={str(k): RunLabel(_opt_bool(v.get("right")), str(v.get("note", ""))) for k, v in
                  dict(data.get("runs", {})).items()},
            claims={str(k): ClaimLabel(_opt_bool(v.get("right")), str(v.get("note", ""))) for k, v in
                    dict(data.get("claims", {})).items()},
            items={str(k): ItemLabel(_opt_bool(v.get("relevant")), str(v.get("note", ""))) for k, v in
                   dict(data.get("items", {})).items()})
    except (ValueError, TypeError, AttributeError) as exc:
        raise EvaluationError(f"{path} is not a file of human labels ({exc})",
                              hint="fix or move it away; it holds only the labels") from exc


def _save(folder: str | Path, kind: str, key: str, label: RunLabel | ClaimLabel | ItemLabel) -> Path:
    """Set (or, with neither a verdict nor a note, remove) one label; atomic rewrite."""
    labels = load_labels(folder)
    table: dict[str, Any] = getattr(labels, kind)
    verdict = label.relevant if isinstance(label, ItemLabel) else label.right
    if verdict is None and not label.note.strip():
        table.pop(key, None)
    else:
        table[key] = label
    path = Path(folder) / LABELS_FILE
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(labels.to_dict(), indent=2, ensure_ascii=False), encoding="utf-8")
    tmp.replace(path)
    return path


def save_label(folder: str | Path, key: str, label: RunLabel) -> Path:
    return _save(folder, "runs", key, label)


def save_claim_label(folder: str | Path, key: str, label: ClaimLabel) -> Path:
    return _save(folder, "claims", key, label)


def save_item_label(folder: str | Path, key: str, label: ItemLabel) -> Path:
    return _save(folder, "items", key, label)


# --- agreement -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Agreement:
    n: int
    agreement: float | None  # share of the n that agree
    kappa: float | None

    def to_dict(self) -> dict[str, Any]:
        r = lambda x: None if x is None else round(x, 6)  # noqa: E731
        return {"n": self.n, "agreement": r(self.agreement), "kappa": r(self.kappa)}

    def line(self, what: str = "run") -> str:
        if not self.n:
            return f"no labelled {what} with an automatic verdict yet"
        kappa = "undefined (one answer every time)" if self.kappa is None else f"{self.kappa:.2f}"
        return f"n = {self.n}, agreement {100 * self.agreement:.0f}%, Cohen's κ {kappa}"  # type: ignore[operator]


def agreement(pairs: Iterable[tuple[bool, bool]]) -> Agreement:
    """(automatic, human) verdicts -> n, observed agreement, Cohen's κ."""
    pairs = list(pairs)
    n = len(pairs)
    if not n:
        return Agreement(0, None, None)
    po = sum(a == h for a, h in pairs) / n
    a_yes = sum(a for a, _h in pairs) / n
    h_yes = sum(h for _a, h in pairs) / n
    pe = a_yes * h_yes + (1 - a_yes) * (1 - h_yes)
    return Agreement(n, po, None if pe >= 1.0 else (po - pe) / (1 - pe))


def labelled_pairs(rows: Iterable[Any], labels: Labels) -> list[tuple[bool, bool]]:
    """(row.correct, human right) for the rows (failure rows or eval records) that have both."""
    out = []
    for r in rows:
        lab = labels.run(r.question, r.method, r.answer, getattr(r, "qid", ""))
        correct = getattr(r, "correct", None)
        if lab is not None and lab.right is not None and correct is not None:
            out.append((bool(correct), lab.right))
    return out


JUDGED = ("supported", "contradicted", "not_found")  # a claim label the judge decided (not "unparsed")


def claim_pairs(claims: Iterable[tuple[str, str, str]], labels: Labels) -> list[tuple[bool, bool]]:
    """(judge said supported, the person says supported) for each labelled claim given as
    (run key, claim text, judge label)."""
    out = []
    for run_key, text, judge in claims:
        lab = labels.claim(run_key, text)
        if lab is None or lab.right is None or judge not in JUDGED:
            continue
        said = judge == "supported"
        out.append((said, said if lab.right else not said))
    return out


def record_claims(records: Iterable[Any]) -> list[tuple[str, str, str]]:
    """(run key, claim text, judge label) of every claim of evaluation records (their verdict dicts)."""
    out: list[tuple[str, str, str]] = []
    for rec in records:
        if getattr(rec, "error", ""):
            continue
        key = label_key(rec.question, rec.method, rec.answer)
        out.extend((key, str(c.get("text", "")), str(c.get("label", "")))
                   for c in (rec.verdict or {}).get("claims", []))
    return out


@dataclass(frozen=True)
class RunLabels:
    """The labels of one run, as the pages and the case file show them."""

    key: str
    run: RunLabel | None
    claims: dict[str, ClaimLabel]  # claim text -> label
    items: dict[str, ItemLabel]  # item id -> label

    def __bool__(self) -> bool:
        return self.run is not None or bool(self.claims) or bool(self.items)

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "run": self.run.to_dict() if self.run else None,
                "claims": {t: c.to_dict() for t, c in self.claims.items()},
                "items": {i: v.to_dict() for i, v in self.items.items()}}


def for_run(labels: Labels, question: str, method: str, answer: str, claims: Iterable[str] = ()) -> RunLabels:
    key = label_key(question, method, answer)
    found = {t: lab for t in claims if (lab := labels.claim(key, t)) is not None}
    return RunLabels(key, labels.run(question, method, answer), found, labels.items_of(key))


def verdict_text(right: bool | None, yes: str = "right", no: str = "wrong") -> str:
    return "no verdict" if right is None else (yes if right else no)
