"""The Evaluate page's judge check (issue 22.3): the two rates kgviz.evaluate.judge_check computed,
as `kgviz eval --json` prints them."""
from __future__ import annotations

from streamlit.testing.v1 import AppTest


def _panel_app() -> None:
    from kgviz.evaluate.report import summarise
    from kgviz.evaluate.runner import EvalRecord
    from kgviz.ui.evaluate import judge_check_panel

    def rec(qid: str, em: float, f1: float, label: str) -> EvalRecord:
        return EvalRecord(qid=qid, question="q?", answers=["g"], method="text-rag", params_hash="h", answer="a",
                          error="", metrics={"em": em, "f1": f1, "acc": em, "coverage": 1.0},
                          hallucinated=label != "supported", abstained=False,
                          verdict={"judge": "offline check (weaker)", "labels": [label]})

    recs = [rec("q1", 1, 1, "supported"), rec("q2", 1, 1, "not_found"), rec("q3", 0, 0, "supported"),
            rec("q4", 0, 0.1, "not_found"), rec("q5", 0, 0, "not_found"), rec("q6", 0, 0, "not_found")]
    judge_check_panel(summarise(recs, ["text-rag"], n_boot=20))


def test_the_page_shows_both_judge_rates() -> None:
    at = AppTest.from_function(_panel_app, default_timeout=60).run()
    assert not at.exception, at.exception
    text = " ".join(m.value for m in at.markdown).replace("\\", "")  # markdown escapes undone
    assert "Judge check" in text and "offline check (weaker)" in text
    assert "right answers (EM 1) judged supported: 50.0 % (1 of 2)" in text
    assert "wrong answers (EM 0, F1 < 0.5) judged supported: 25.0 % (1 of 4)" in text
