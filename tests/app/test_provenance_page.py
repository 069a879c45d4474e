"""Results know where they came from (kgviz.ui.provenance, kgviz.ui.state): a kept result is drawn
only under the workspace, LLM and embedder it was made with, says which they were, and after a
switch is replaced by a warning naming what changed, with Re-run and switch-back buttons; Home's
offline / recorded choice selects its own workspace and embedder both ways."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from kgviz.ui.state import LLM_PRESETS
from test_app_pages import _button, all_text, new_app, texts
from test_recorded_sample_page import recording  # noqa: F401 - the fixture

DEMO = "kgviz_demo_result"
ANTHROPIC = LLM_PRESETS[1]


def _demo_page() -> None:
    """A page that keeps one result and shows it through the one provenance call."""
    import streamlit as st

    from kgviz.ui import provenance, state

    demo = "kgviz_demo_result"  # AppTest runs this function's source alone: no module globals
    ctx = state.current_context()
    state.take_rerun_requests()  # what the shared sidebar does first on every page
    if provenance.run_wanted(st.button("Make"), demo):
        provenance.keep(demo, f"result #{st.session_state.get('n', 0) + 1}", ctx)
        st.session_state["n"] = st.session_state.get("n", 0) + 1
    if demo in st.session_state and provenance.mark(ctx, "demo result", demo):
        st.text(st.session_state[demo])


def _demo(app_env: Path) -> AppTest:
    at = AppTest.from_function(_demo_page, args=(), default_timeout=30)
    at.session_state["kgviz_workspace"] = str(app_env)
    at.session_state["kgviz_llm_choice"] = "offline"
    return at.run()


def _shown(at: AppTest) -> list[str]:
    return texts(at, "text")


def test_a_result_is_shown_with_its_origin_and_hidden_after_a_switch(app_env: Path, tmp_path: Path) -> None:
    at = _demo(app_env)
    _button(at, "Make").click().run()
    assert _shown(at) == ["result #1"]
    caption = " ".join(texts(at, "caption")).replace("\\", "")
    assert "from workspace default · LLM offline · embedder hashing-768 · made " in caption

    other = tmp_path / "other-ws"
    at.session_state["kgviz_workspace"] = str(other)
    at.run()
    assert _shown(at) == []  # never drawn under settings it was not made with
    warning = " ".join(texts(at, "warning")).replace("\\", "")
    assert "Your last demo result is from workspace default" in warning
    assert "workspace default → other-ws" in warning and "it is not shown" in warning

    at.session_state["kgviz_llm_choice"] = ANTHROPIC
    at.run()
    warning = " ".join(texts(at, "warning")).replace("\\", "")
    assert f"LLM offline → {ANTHROPIC}" in warning and "workspace default → other-ws" in warning

    _button(at, "Switch back to default / offline").click().run()
    assert Path(at.session_state["kgviz_workspace"]).resolve() == app_env.resolve()
    assert at.session_state["kgviz_llm_choice"] == "offline"
    assert _shown(at) == ["result #1"] and not at.warning


def test_rerun_makes_the_result_again_under_the_current_settings_once(app_env: Path, tmp_path: Path) -> None:
    at = _demo(app_env)
    _button(at, "Make").click().run()
    at.session_state["kgviz_workspace"] = str(tmp_path / "other-ws")
    at.run()
    assert _shown(at) == []
    _button(at, "Re-run with the current settings").click().run()
    assert _shown(at) == ["result #2"] and not at.warning
    assert "from workspace other-ws" in " ".join(texts(at, "caption"))
    at.run()
    at.run()
    assert _shown(at) == ["result #2"]  # the request was used once, not on every later run


def test_a_rerun_request_its_page_could_not_act_on_never_fires_later(app_env: Path) -> None:
    """The request belongs to the run right after the click: a page that stopped before its run
    button (no documents, no question) must not run its action on some later visit."""
    def page() -> None:
        import streamlit as st

        from kgviz.ui import state as s

        s.take_rerun_requests()
        if st.session_state.get("ask"):
            s.ask_rerun("kgviz_demo_result")
            st.session_state["ask"] = False
            return
        st.text(f"asked={s.rerun_asked('kgviz_demo_result')}")

    at = AppTest.from_function(page, default_timeout=30)
    at.session_state["ask"] = True
    at.run()  # asks (like the button callback), nothing reads it in this run
    at.run()  # the next run may act on it
    assert texts(at, "text") == ["asked=True"]
    at.session_state["ask"] = True
    at.run()
    at.run()  # taken at the start of this run ...
    at.run()  # ... and gone in the one after
    assert texts(at, "text") == ["asked=False"]


def test_a_result_without_a_record_is_never_passed_off_as_current(app_env: Path) -> None:
    at = _demo(app_env)
    at.session_state[DEMO] = "kept by an older kgviz"
    at.run()
    assert _shown(at) == []
    assert "from unknown settings" in " ".join(texts(at, "warning"))


def test_records_of_cached_results_are_bounded_but_page_results_stay(app_env: Path) -> None:
    def page() -> None:
        import streamlit as st

        from kgviz.provenance import Provenance
        from kgviz.ui import state

        p = Provenance("/ws", "offline", "hashing-768", 1.0)
        state.keep_result("kgviz_page_result", "R", p)
        for i in range(state.MAX_LOOSE_PROVENANCE + 10):
            state.note_made(f"trace-run-{i}", p)
        records = st.session_state[state.K_MADE]
        st.text(f"{len(records)} {'kgviz_page_result' in records} {'trace-run-0' in records} "
                f"{f'trace-run-{state.MAX_LOOSE_PROVENANCE + 9}' in records}")

    at = AppTest.from_function(page, default_timeout=30).run()
    assert texts(at, "text") == ["65 True False True"]


# --- the real pages ------------------------------------------------------------------------------
def _subheaders(at: AppTest) -> list[str]:
    return [s.value for s in at.subheader]


@pytest.mark.slow
def test_build_compare_and_evaluate_hide_old_results_after_a_switch(app_env: Path) -> None:
    """One sample build (every Kùzu database a process opens stays mapped): a build report, a
    comparison and an evaluation, then a switch of LLM and of workspace on each page."""
    at = new_app().run()
    _button(at, "Load sample data").click().run()
    assert any("Sample built: 15 new documents" in t for t in texts(at, "success")), all_text(at)

    at.switch_page("pages/build.py").run()
    assert "Build report" in _subheaders(at)
    assert any("This build report is from workspace default" in t for t in texts(at, "caption"))

    at.switch_page("pages/compare.py").run()
    for m in [c.key.removeprefix("kgviz_cmp_m_") for c in at.checkbox if (c.key or "").startswith("kgviz_cmp_m_")]:
        if m != "text-rag":
            at.checkbox(key=f"kgviz_cmp_m_{m}").uncheck()
    at.text_input(key="kgviz_cmp_question").set_value("In what year was the Tidewell Line founded?").run()
    _button(at, "Compare").click().run()
    assert not at.exception, at.exception
    assert "Evidence overlay" in _subheaders(at)
    assert any("This comparison is from workspace default" in t for t in texts(at, "caption"))

    at.switch_page("pages/evaluate.py").run()
    at.multiselect(key="kgviz_eval_methods").set_value(["text-rag"])
    at.number_input(key="kgviz_eval_limit").set_value(2)
    at.checkbox(key="kgviz_eval_baselines").uncheck().run()
    _button(at, "Run evaluation").click().run()
    assert not at.exception, at.exception
    assert "Results" in _subheaders(at)

    at.switch_page("pages/trace.py").run()
    at.text_input(key="kgviz_trace_question").set_value("In what year was the Tidewell Line founded?")
    at.selectbox(key="kgviz_trace_method").set_value("text-rag").run()
    _button(at, "Run").click().run()
    assert not at.exception, at.exception
    assert any("This trace is from workspace default · LLM offline · embedder hashing-768" in t
               for t in texts(at, "caption"))

    # another LLM: no page draws a result it judged with the old one
    at.selectbox(key="kgviz_llm_choice").set_value(ANTHROPIC).run()
    assert not [t for t in texts(at, "caption") if "This trace is from" in t]  # runs are kept per settings
    assert any("Press Run" in t for t in texts(at, "info"))
    for page, what, drawn in (("pages/build.py", "build report", "Build report"),
                              ("pages/compare.py", "comparison", "Evidence overlay"),
                              ("pages/evaluate.py", "evaluation", "Results")):
        at.switch_page(page).run()
        assert not at.exception, at.exception
        assert drawn not in _subheaders(at), page
        warning = " ".join(texts(at, "warning")).replace("\\", "")
        assert f"Your last {what} is from workspace default · LLM offline" in warning, page
        assert f"LLM offline → {ANTHROPIC}" in warning, page

    # back to offline on the Evaluate page (the button): its results are drawn again
    _button(at, "Switch back to default / offline").click().run()
    assert "Results" in _subheaders(at)
    assert at.selectbox(key="kgviz_llm_choice").value == "offline"

    # a new, empty workspace: the Build page no longer shows the old build as this one's
    at.switch_page("pages/home.py").run()
    at.text_input(key="kgviz_new_workspace").set_value("empty-one").run()
    _button(at, "Create and switch").click().run()
    at.switch_page("pages/build.py").run()
    assert "Build report" not in _subheaders(at)
    assert "already in the workspace" not in all_text(at)
    warning = " ".join(texts(at, "warning")).replace("\\", "")
    assert "workspace default → empty-one" in warning
    assert not [b for b in at.button if b.label == "Re-run with the current settings"]  # nothing loaded to build
    at.radio[0].set_value("Sample corpus").run()
    _button(at, "Re-run with the current settings").click().run()
    assert not at.exception, at.exception
    assert "Build report" in _subheaders(at)
    caption = " ".join(texts(at, "caption"))
    assert "new documents: 15" in caption and "already in the workspace: 0" in caption
    assert "This build report is from workspace empty-one" in caption


# --- Home: offline / recorded ---------------------------------------------------------------------
def _sidebar(at: AppTest) -> tuple[str, str, str]:
    return (at.session_state["kgviz_workspace"], at.session_state["kgviz_llm_choice"],
            at.session_state["kgviz_embedder"])


def test_home_offline_and_recorded_each_select_their_own_workspace_and_embedder(
        app_env: Path, recording: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    monkeypatch.setenv("KGVIZ_EMBEDDER", "hashing:256")  # the configured embedder differs from the recording's
    at = new_app().run()
    radio = at.radio[0]
    offline, recorded = radio.options
    sample_ws = str(app_env.parent / "sample-recorded")

    radio.set_value(offline).run()
    _button(at, "Load sample data").click().run()
    assert _sidebar(at) == (str(app_env), "offline", "hashing:256")

    at.radio[0].set_value(recorded).run()
    _button(at, "Load sample data").click().run()
    assert _sidebar(at) == (sample_ws, "other (type a spec)", "hashing")
    assert at.session_state["kgviz_llm_custom"] == f"recorded:{recording}"

    at.radio[0].set_value(offline).run()
    _button(at, "Load sample data").click().run()
    assert not at.exception, at.exception
    assert _sidebar(at) == (str(app_env), "offline", "hashing:256")  # not the recording's graph or embedder
    assert any("Sample built: 0 new documents" in t for t in texts(at, "success")), all_text(at)


def test_home_offline_keeps_a_workspace_the_user_chose(app_env: Path, tmp_path: Path) -> None:
    from kgviz.ui import actions

    def page() -> None:
        import streamlit as st

        from kgviz.ui import actions as a

        st.button("offline", on_click=a.choose_sample_replies, args=(None,))
        st.text(st.session_state.get("kgviz_workspace", ""))

    at = AppTest.from_function(page, default_timeout=30)
    mine = str(tmp_path / "lecture-3")
    at.session_state["kgviz_workspace"] = mine
    at.session_state["kgviz_embedder"] = "hashing:64"
    at.run()
    _button(at, "offline").click().run()
    assert texts(at, "text") == [mine] and at.session_state["kgviz_embedder"] == "hashing:64"
    assert actions.RECORDED_WORKSPACE == "sample-recorded"
