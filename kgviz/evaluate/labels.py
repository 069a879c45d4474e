"""Human labels of runs: a person marks one run's answer right or wrong and may add a note.

Labels live in the workspace folder (``human_labels.json`` beside graph.kuzu), so they survive an
app restart and a rebuild (the file is not part of the graph). A label belongs to one answer: its
key is (question id, method, a hash of the answer text), so a re-run that answers the same gets the
label back and one that answers differently is unlabelled (the person judged the other answer).

Agreement of the automatic correctness mark (kgviz.verify.outcome: EM, or the gold answer
contained) with the human labels: n, the share that agree, and Cohen's κ (agreement beyond what
the two raters' own yes/no rates give by chance; None when chance agreement is 1, e.g. both said
"right" every time, where κ is undefined).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from kgviz.errors import EvaluationError

LABELS_FILE = "human_labels.json"


@dataclass(frozen=True)
class RunLabel:
    right: bool | None  # None: only a note
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def label_key(qid: str, method: str, answer: str) -> str:
    return f"{qid}|{method}|{hashlib.sha256(answer.encode('utf-8')).hexdigest()[:16]}"


def load_labels(folder: str | Path) -> dict[str, RunLabel]:
    path = Path(folder) / LABELS_FILE
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {str(k): RunLabel(None if v.get("right") is None else bool(v["right"]), str(v.get("note", "")))
                for k, v in dict(data).items()}
    except (ValueError, TypeError, AttributeError) as exc:
        raise EvaluationError(f"{path} is not a file of human labels ({exc})",
                              hint="fix or move it away; it holds only the labels") from exc


def save_label(folder: str | Path, key: str, label: RunLabel) -> Path:
    """Set (or, with neither a verdict nor a note, remove) one label; atomic rewrite."""
    labels = load_labels(folder)
    if label.right is None and not label.note.strip():
        labels.pop(key, None)
    else:
        labels[key] = label
    path = Path(folder) / LABELS_FILE
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({k: v.to_dict() for k, v in labels.items()}, indent=2, ensure_ascii=False),
                   encoding="utf-8")
    tmp.replace(path)
    return path


@dataclass(frozen=True)
class Agreement:
    n: int
    agreement: float | None  # share of the n that agree
    kappa: float | None

    def to_dict(self) -> dict[str, Any]:
        r = lambda x: None if x is None else round(x, 6)  # noqa: E731
        return {"n": self.n, "agreement": r(self.agreement), "kappa": r(self.kappa)}

    def line(self) -> str:
        if not self.n:
            return "no labelled run with an automatic verdict yet"
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


def labelled_pairs(rows: Iterable[Any], labels: Mapping[str, RunLabel]) -> list[tuple[bool, bool]]:
    """(row.correct, human right) for the rows that have both."""
    out = []
    for r in rows:
        lab = labels.get(label_key(r.qid, r.method, r.answer))
        if lab is not None and lab.right is not None and r.correct is not None:
            out.append((bool(r.correct), lab.right))
    return out
