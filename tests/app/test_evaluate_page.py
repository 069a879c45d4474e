"""The Evaluate page driven headlessly (AppTest, offline, hashing embedder): a small evaluation on
the sample, its tables and charts, a re-run that reuses results, the equal-budget run with its
baselines and coverage-vs-context-tokens chart, a bad QA upload, and handing a question to
Compare. Fixtures: tests/app/conftest.py (``app_env``)."""
from __future__ import annotations

import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

from test_app_pages import new_app, texts

PAGE = "pages/evaluate.py"
METHODS = ["text-rag", "kg-retriever", "no-retrieval"]


def _button(at: AppTest, label: str):  # noqa: ANN202 - AppTest element type
    return next(b for b in at.button if b.label == label)


def _open(at: AppTest) -> AppTest:
    _button(at, "Load sample data").click().run()
    assert any("Sample built" in t for t in texts(at, "success")), texts(at, "error")
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    return at


def test_evaluate_page_runs_small_eval_and_shows_results(app_env: Path) -> None:
    at = _open(new_app().run())
    at.multiselect(key="kgviz_eval_methods").set_value(METHODS).run()
    at.number_input(key="kgviz_eval_limit").set_value(4).run()
    assert any("4 questions × 5 methods = 20 runs" in t for t in texts(at, "caption"))  # + bm25, dense
    at.checkbox(key="kgviz_eval_baselines").uncheck().run()
    assert any("4 questions × 3 methods = 12 runs" in t for t in texts(at, "caption"))
    _button(at, "Run evaluation").click().run()
    assert not at.exception, at.exception
    assert not at.error, texts(at, "error")
    frames = at.dataframe
    summary = frames[0].value
    assert list(summary["method"]) == METHODS
    assert list(summary["n of N"]) == ["4 of 4"] * 3 and list(summary["failed"]) == [0, 0, 0]
    assert summary.loc[summary["method"] == "no-retrieval", "Abstention %"].iloc[0].startswith("100.0")
    charts = at.get("plotly_chart")
    # metric bars, coverage vs context tokens, quality vs cost, hallucination vs coverage, heatmap,
    # failure taxonomy (kgviz.ui.failures)
    assert len(charts) == 6
    bars = json.loads(charts[0].proto.spec)
    assert {t["name"] for t in bars["data"]} == set(METHODS)
    assert all("error_y" in t for t in bars["data"])
    # one colour per method, the same in the bars and the scatters (kgviz.viz.palette)
    from kgviz.viz.palette import method_colour

    assert {t["name"]: t["marker"]["color"] for t in bars["data"]} == {m: method_colour(m) for m in METHODS}
    scatter = json.loads(charts[2].proto.spec)
    assert {t["name"]: t["marker"]["color"] for t in scatter["data"]} == {m: method_colour(m) for m in METHODS}
    # offline results are labelled as such, with the weaker judge named
    notes = texts(at, "info")
    assert any("offline heuristics" in t and "weaker than an LLM judge" in t for t in notes), notes
    heat = json.loads(charts[4].proto.spec)
    assert heat["data"][0]["type"] == "heatmap" and len(heat["data"][0]["y"]) == 3
    progress = at.get("progress")
    assert progress and "done: 12 run now, 0 reused" in str(progress[-1].proto.text)

    # a second run with one more question reuses the 12 finished runs
    at.number_input(key="kgviz_eval_limit").set_value(5).run()
    _button(at, "Run evaluation").click().run()
    assert not at.exception, at.exception
    assert "done: 3 run now, 12 reused" in str(at.get("progress")[-1].proto.text)
    assert list(at.dataframe[0].value["n of N"]) == ["5 of 5"] * 3


def test_equal_budget_run_shows_baselines_and_coverage_vs_context_tokens(app_env: Path) -> None:
    at = _open(new_app().run())
    at.multiselect(key="kgviz_eval_methods").set_value(["kg-retriever"]).run()
    at.number_input(key="kgviz_eval_limit").set_value(3).run()
    at.number_input(key="kgviz_eval_budget").set_value(300).run()
    _button(at, "Run evaluation").click().run()
    assert not at.exception, at.exception
    summary = at.dataframe[0].value
    assert list(summary["method"]) == ["kg-retriever", "bm25", "dense"]  # the baselines joined at B
    tokens = {m: float(t) for m, t in zip(summary["method"], summary["Context tokens (median)"])}
    assert all(0 < tokens[m] <= 300 for m in ("bm25", "dense"))
    assert any("every method's context budget 300 tokens" in t for t in texts(at, "caption"))
    charts = at.get("plotly_chart")
    assert len(charts) == 6  # one budget in the results: no coverage-by-budget chart yet (+ the failure taxonomy)
    cov = json.loads(charts[1].proto.spec)
    assert "Coverage vs context tokens" in cov["layout"]["title"]["text"]
    points = {t["name"]: (t["x"][0], t["y"][0]) for t in cov["data"]}
    assert {m: x for m, (x, _y) in points.items()} == tokens  # x = the table's median context tokens
    cov_pct = {m: float(c.split()[0]) for m, c in zip(summary["method"], summary["Coverage %"])}
    assert {m: round(y, 1) for m, (_x, y) in points.items()} == cov_pct
    assert any(s.get("x0") == 300 for s in cov["layout"]["shapes"])  # the budget line

    # a second budget on the same questions: coverage by budget appears, one line per method
    at.number_input(key="kgviz_eval_budget").set_value(600).run()
    _button(at, "Run evaluation").click().run()
    assert not at.exception, at.exception
    charts = at.get("plotly_chart")
    assert len(charts) == 7
    lines = json.loads(charts[2].proto.spec)
    assert "Coverage by context budget" in lines["layout"]["title"]["text"]
    assert {t["name"]: t["x"] for t in lines["data"]} == {m: [300, 600] for m in ("kg-retriever", "bm25", "dense")}


def test_evaluate_page_names_bad_lines_of_an_upload(app_env: Path) -> None:
    at = _open(new_app().run())
    at.radio(key="kgviz_eval_source").set_value("Path on the server").run()
    bad = app_env.parent / "bad.jsonl"
    bad.parent.mkdir(parents=True, exist_ok=True)
    bad.write_text('{"id": "a", "question": "Q?", "answers": ["x"]}\n{oops\n', encoding="utf-8")
    at.text_input(key="kgviz_eval_path").set_value(str(bad)).run()
    assert not at.exception, at.exception
    errors = texts(at, "error")
    assert errors and "line 2" in errors[0] and "invalid JSON" in errors[0]


def test_picked_question_opens_in_compare(app_env: Path) -> None:
    at = _open(new_app().run())
    at.multiselect(key="kgviz_eval_methods").set_value(["text-rag"]).run()
    at.number_input(key="kgviz_eval_limit").set_value(2).run()
    _button(at, "Run evaluation").click().run()
    pick = at.selectbox(key="kgviz_eval_pick")
    pick.set_value("s02").run()
    _button(at, "Open in Compare").click().run()
    assert not at.exception, at.exception
    assert at.text_input(key="kgviz_cmp_question").value == "How tall is the tower of Skellan Point Lighthouse?"
    assert at.text_input(key="kgviz_cmp_gold").value == "38 metres"


def test_failed_runs_are_a_banner_never_numbers(app_env: Path, monkeypatch) -> None:  # noqa: ANN001
    """A method whose every run fails: counted with its error in a banner, n/a in the table, no bar,
    no point, no paired test; the per-question view shows the failure, not a score."""
    import kgviz.evaluate.runner as runner

    real = runner.run_method

    def flaky(name: str, *a, **kw):  # noqa: ANN002, ANN003, ANN202
        run = real(name, *a, **kw)
        if name == "kg-retriever":
            run.error = "ProviderTimeoutError: the provider did not answer within 60 s"
        return run

    monkeypatch.setattr(runner, "run_method", flaky)
    at = _open(new_app().run())
    at.multiselect(key="kgviz_eval_methods").set_value(METHODS).run()
    at.number_input(key="kgviz_eval_limit").set_value(3).run()
    at.checkbox(key="kgviz_eval_baselines").uncheck().run()
    _button(at, "Run evaluation").click().run()
    assert not at.exception, at.exception
    banner = " ".join(texts(at, "error"))
    assert "3 of 9 runs failed" in banner and "ProviderTimeoutError" in banner and "kg-retriever" in banner
    summary = at.dataframe[0].value.set_index("method")
    row = summary.loc["kg-retriever"]
    assert row["n of N"] == "0 of 3" and row["failed"] == 3
    assert row["EM %"] == row["Coverage %"] == row["Hallucination %"] == row["Context tokens (median)"] == "n/a"
    assert summary.loc["text-rag", "n of N"] == "3 of 3"
    charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    assert "kg-retriever" not in {t["name"] for t in charts[0]["data"]}  # no bar at 0
    for scatter in charts[1:4]:
        assert "kg-retriever" not in {t.get("name") for t in scatter["data"]}
    comparisons = at.dataframe[1].value
    assert "kg-retriever" not in set(comparisons["A"]) | set(comparisons["B"])
    per_question = at.dataframe[2].value.set_index("method")
    assert per_question.loc["kg-retriever", "verdict"] == "method failed"
    assert per_question.loc["kg-retriever", "answer"].startswith("error: ProviderTimeoutError")
    assert per_question.loc["kg-retriever", "EM"] == per_question.loc["kg-retriever", "F1"] == ""  # no score


def test_recorded_sample_runs_with_the_pages_defaults(app_env: Path) -> None:
    """Home -> recorded sample -> Evaluate -> Run with every default: the recorded methods at their
    own budgets; the 8 runs the recording does not cover (ket-rag on s07-s14) are named in a
    warning, run nowhere and count in no mean; the one recorded run that failed (s04 kg-retriever:
    the 0.5B answered with a context item's number) is named in the banner and in no mean; a
    grounded wrong answer is named as such."""
    at = new_app().run()
    radio = at.radio[0]
    radio.set_value(next(o for o in radio.options if o.startswith("recorded from"))).run()
    _open(at)
    assert at.checkbox(key="kgviz_eval_equal").value is False
    assert set(at.multiselect(key="kgviz_eval_methods").value) == {"text-rag", "no-retrieval", "kg-retriever",
                                                                   "ket-rag", "kg-rag", "kg-infused"}
    _button(at, "Run evaluation").click().run()
    assert not at.exception, at.exception
    warnings = texts(at, "warning")
    assert len(warnings) == 1 and "covers 76 of 84 runs" in warnings[0], warnings
    errors = texts(at, "error")
    assert len(errors) == 1 and "1 of 76 runs failed" in errors[0] and "context item" in errors[0], errors
    summary = at.dataframe[0].value.set_index("method")
    assert summary.loc["kg-retriever", "n of N"] == "13 of 14" and summary.loc["kg-retriever", "failed"] == 1
    assert summary.loc["ket-rag", "n of N"] == "6 of 6 (8 not recorded)" and summary.loc["ket-rag", "failed"] == 0
    others = summary.drop(["kg-retriever", "ket-rag"])
    assert list(others["n of N"]) == ["14 of 14"] * 4 and list(others["failed"]) == [0] * 4
    assert any("judge generously" in t for t in texts(at, "info"))  # the LLM judge's caution
    at.selectbox(key="kgviz_eval_pick").set_value("s03").run()
    per_question = at.dataframe[2].value.set_index("method")  # [-1] is now the failure table
    # the recorded text-rag answers "Ventholm" (gold Tarrow), supported by its context
    assert per_question.loc["text-rag", "answer"] == "Ventholm"
    assert per_question.loc["text-rag", "verdict"] == "grounded but wrong"
    assert per_question.loc["text-rag", "correct"].startswith("✗ does not match gold")
    assert per_question.loc["text-rag", "grounded"].startswith("✓")


def _fx_table(at: AppTest):  # noqa: ANN202 - the failure table is the page's last dataframe
    return at.dataframe[-1].value


def test_failure_explorer_filters_saves_reopens_and_opens_a_row_in_trace(app_env: Path) -> None:
    """The failure section: taxonomy counts that sum to each method's failures, the "gold in
    context but wrong" filter for one method, saved by name in the workspace folder, reopened in a
    new session, a row opened in Trace and the filter still there on coming back."""
    from kgviz.evaluate import failures as fx
    from kgviz.ui import failures as uf

    at = _open(new_app().run())
    at.multiselect(key="kgviz_eval_methods").set_value(METHODS).run()
    at.number_input(key="kgviz_eval_limit").set_value(6).run()
    at.checkbox(key="kgviz_eval_baselines").uncheck().run()
    _button(at, "Run evaluation").click().run()
    assert not at.exception, at.exception
    rows = fx.rows_of(at.session_state["kgviz_eval_outcome"][0].records)
    assert len(rows) == 18
    chart = json.loads(at.get("plotly_chart")[-1].proto.spec)
    assert {t["name"] for t in chart["data"]} == set(METHODS) and all("error_y" in t for t in chart["data"])
    tax = at.dataframe[3].value.set_index("method")
    for m in METHODS:  # failures = the runs not correct; the table's stage counts add up to them
        stage_cells = [v for k, v in tax.loc[m].items() if k not in ("runs", "failures") and isinstance(v, str)]
        assert sum(int(v.split(" · ")[0]) for v in stage_cells) == tax.loc[m, "failures"]
        assert tax.loc[m, "failures"] == sum(r.stage != "correct" for r in rows if r.method == m)
    assert len(_fx_table(at)) == 18
    # one example per (method, stage) opens in Compare
    example = at.selectbox(key=uf.K + "example")
    label = example.options[0]
    method, rest = label.split(" · ", 1)
    qid = rest.rsplit(": ", 1)[1]
    assert next(r for r in rows if (r.qid, r.method) == (qid, method)).stage == rest.rsplit(": ", 1)[0]

    at.multiselect(key=uf.K + "methods").set_value(["text-rag"]).run()
    at.checkbox(key=uf.K + "gold_ctx").check().run()
    want = [(r.qid, r.method) for r in rows if r.method == "text-rag" and r.gold_in_context and r.correct is False]
    table = _fx_table(at)
    assert list(zip(table["qid"], table["method"])) == want
    assert any(f"{len(want)} of 18 runs" in t for t in texts(at, "caption"))
    at.text_input(key=uf.K + "name").set_value("text-rag had it").run()
    _button(at, "Save").click().run()
    assert not at.exception, at.exception
    saved = fx.load_filters(app_env)  # the workspace folder, beside graph.kuzu
    assert saved["text-rag had it"] == fx.FailureFilter(methods=("text-rag",), gold_in_context_wrong=True)

    # a new session (a reload): run again (all reused), reopen the filter by name
    at = _open(new_app().run())
    at.multiselect(key="kgviz_eval_methods").set_value(METHODS).run()
    at.number_input(key="kgviz_eval_limit").set_value(6).run()
    at.checkbox(key="kgviz_eval_baselines").uncheck().run()
    _button(at, "Run evaluation").click().run()
    assert len(_fx_table(at)) == 18
    at.selectbox(key=uf.K + "saved").set_value("text-rag had it").run()
    _button(at, "Open saved filter").click().run()
    assert not at.exception, at.exception
    assert at.checkbox(key=uf.K + "gold_ctx").value is True
    assert list(zip(_fx_table(at)["qid"], _fx_table(at)["method"])) == want

    assert want, "the sample has no text-rag run with the gold in context and a wrong answer"
    if want:  # a row opens in Trace; back on Evaluate the filter is still applied
        at.selectbox(key=uf.K + "row").set_value(f"{want[0][0]} · text-rag").run()
        _button(at, "Open row in Trace").click().run()
        assert not at.exception, at.exception
        question = next(r.question for r in rows if (r.qid, r.method) == want[0])
        assert at.session_state["kgviz_trace_question"] == question
        at.switch_page(PAGE).run()
        assert not at.exception, at.exception
        assert list(zip(_fx_table(at)["qid"], _fx_table(at)["method"])) == want
    # the first example (method · stage: qid) opens its question in Compare
    _button(at, "Open example in Compare").click().run()
    assert not at.exception, at.exception
    assert at.text_input(key="kgviz_cmp_question").value == next(r.question for r in rows if r.qid == qid)


def test_human_labels_change_the_agreement_and_survive_a_new_session(app_env: Path) -> None:
    from kgviz.evaluate import failures as fx
    from kgviz.evaluate import labels as lb
    from kgviz.ui import failures as uf

    def run_eval() -> AppTest:
        at = _open(new_app().run())
        at.multiselect(key="kgviz_eval_methods").set_value(["text-rag"]).run()
        at.number_input(key="kgviz_eval_limit").set_value(3).run()
        at.checkbox(key="kgviz_eval_baselines").uncheck().run()
        _button(at, "Run evaluation").click().run()
        assert not at.exception, at.exception
        return at

    def agreement_caption(at: AppTest) -> str:
        return next(t for t in texts(at, "caption") if "human labels vs" in t)

    at = run_eval()
    assert "no labelled run" in agreement_caption(at)
    rows = {f"{r.qid} · {r.method}": r for r in fx.rows_of(at.session_state["kgviz_eval_outcome"][0].records)}
    first, second = list(rows)[:2]
    # label the first as the automatic mark says, the second the opposite
    for name, agree in ((first, True), (second, False)):
        at.selectbox(key=uf.K + "row").set_value(name).run()
        auto = rows[name].correct
        verdict = "right" if (auto if agree else not auto) else "wrong"
        at.radio(key=uf.K + "label_right").set_value(verdict).run()
        at.text_input(key=uf.K + "label_note").set_value(f"note on {name}").run()
        _button(at, "Save label").click().run()
        assert not at.exception, at.exception
    assert "n = 2, agreement 50%" in agreement_caption(at)
    table = at.dataframe[-1].value.set_index("qid")
    assert table.loc[rows[second].qid, "human_note"] == f"note on {second}"
    saved = {lb.label_key(r.question, r.method, r.answer) for r in (rows[first], rows[second])}
    assert set(lb.load_labels(app_env).runs) == saved  # in the workspace folder, beside graph.kuzu

    at = run_eval()  # a new session: the labels are read back from the workspace
    assert "n = 2, agreement 50%" in agreement_caption(at)
    at.selectbox(key=uf.K + "row").set_value(second).run()
    assert at.text_input(key=uf.K + "label_note").value == f"note on {second}"
