"""The Trace page driven headlessly (AppTest, offline, hashing embedder): run a method on the
sample, step through its trace, re-run only on a changed input, and show failures with their
partial trace. Fixtures: tests/app/conftest.py (``app_env``)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest
from streamlit.testing.v1 import AppTest

import kgviz.run
from kgviz.errors import MethodError
from kgviz.methods import base as methods_base
from kgviz.methods.base import EdgeRef, MethodContext, NodeRef, RetrievedContext, Tracer, param
from kgviz.ui.trace import K_PRESET, K_STEP, NO_PRESET, param_specs, str_choices
from test_app_pages import OFFLINE, new_app, texts

PAGE = "pages/trace.py"
QUESTION = "In what year was the Tidewell Line founded?"


def _button(at: AppTest, label: str):  # noqa: ANN202 - AppTest element type
    return next(b for b in at.button if b.label == label)


def _step_header(at: AppTest) -> str:
    return next(t for t in texts(at, "markdown") if t.startswith("**Step "))


def _graph_page(at: AppTest) -> str:
    frames = at.get("iframe")
    assert len(frames) == 1
    return str(frames[0].proto.srcdoc)


def _open_trace(at: AppTest, method: str = "kg-rag") -> AppTest:
    _button(at, "Load sample data").click().run()
    assert any("Sample built" in t for t in texts(at, "success")), texts(at, "error")
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    at.selectbox(key="kgviz_trace_method").set_value(method).run()
    return at


def _run(at: AppTest, question: str = QUESTION) -> AppTest:
    at.text_input(key="kgviz_trace_question").set_value(question).run()
    _button(at, "Run").click().run()
    assert not at.exception, at.exception
    return at


def test_kg_rag_runs_and_steps_through_the_trace(app_env: Path) -> None:
    at = _open_trace(new_app().run())
    sample = at.selectbox(key="kgviz_trace_sample")
    assert QUESTION in sample.options
    sample.set_value(QUESTION).run()  # picking a sample fills the question box
    assert at.text_input(key="kgviz_trace_question").value == QUESTION
    _button(at, "Run").click().run()
    assert not at.exception, at.exception
    total = int(at.slider(key=K_STEP).max)
    assert total >= 6
    assert _step_header(at) == f"**Step 1 of {total} · llm**"
    assert "Plan the exploration" in texts(at, "markdown")[texts(at, "markdown").index(_step_header(at)) + 1]
    # the plan step is an LLM task: offline, the heuristic is named
    assert any("prompt kg\\_rag.PLAN" in t and "offline heuristic: plan" in t for t in texts(at, "caption"))
    assert [e.label for e in at.expander if e.label in ("Rendered prompt", "Raw output")] == ["Rendered prompt",
                                                                                              "Raw output"]
    assert _button(at, "Previous").disabled
    assert not at.get("iframe") and any("Nothing on the graph yet" in t for t in texts(at, "info"))
    _button(at, "Next").click().run()
    assert _step_header(at) == f"**Step 2 of {total} · seed**"
    second = _graph_page(at)
    assert "vis.Network" in second
    _button(at, "Next").click().run()
    assert at.slider(key=K_STEP).value == 3 and _graph_page(at) != second
    _button(at, "Previous").click().run()
    assert at.slider(key=K_STEP).value == 2 and _graph_page(at) == second  # same step, same picture
    at.slider(key=K_STEP).set_value(4).run()
    assert _step_header(at) == f"**Step 4 of {total} · score**"
    scores = next(df.value for df in at.dataframe if "score" in df.value.columns and "label" in df.value.columns)
    assert list(scores["score"]) == sorted(scores["score"], reverse=True) and len(scores) > 0
    step_cost = next(df.value for df in at.dataframe if "input tokens" in df.value.columns)
    assert int(step_cost["calls"].iloc[0]) == 0
    # below the viewer: the final context, the answer (labelled offline) and total usage
    context = next(df.value for df in at.dataframe if "kind" in df.value.columns and "source" in df.value.columns)
    assert set(context["kind"]) <= {"triple", "sentence"} and len(context) > 0
    assert any("1898" in t for t in texts(at, "markdown"))
    assert any(t.startswith(OFFLINE) for t in texts(at, "caption"))
    assert {m.label for m in at.metric} >= {"LLM calls", "cost"}


def test_play_advances_and_stops_at_the_last_step(app_env: Path) -> None:
    at = _run(_open_trace(new_app().run()))
    total = int(at.slider(key=K_STEP).max)
    _button(at, "Play").click().run()
    assert at.slider(key=K_STEP).value == 2 and _button(at, "Stop")  # playing: one step per tick
    _button(at, "Stop").click().run()
    assert at.slider(key=K_STEP).value == 2 and _button(at, "Play")
    at.slider(key=K_STEP).set_value(total - 1).run()
    _button(at, "Play").click().run()
    assert at.slider(key=K_STEP).value == total
    assert _button(at, "Play") and _button(at, "Next").disabled  # stopped at the end
    assert not at.exception


def test_param_change_reruns_only_that_method(app_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, dict[str, Any]]] = []
    real = kgviz.run.run_method

    def counting(name: str, question: str, ctx: MethodContext, params: Any = None, **kw: Any) -> kgviz.run.Run:
        calls.append((name, dict(params or {})))
        return real(name, question, ctx, params, **kw)

    monkeypatch.setattr(kgviz.run, "run_method", counting)
    at = _run(_open_trace(new_app().run()))
    assert [c[0] for c in calls] == ["kg-rag"]
    _button(at, "Next").click().run()
    at.slider(key=K_STEP).set_value(3).run()
    assert len(calls) == 1  # stepping replays the stored run
    hops = next(n for n in at.number_input if n.key.endswith("|max_hops"))
    hops.set_value(2).run()
    assert [c[0] for c in calls] == ["kg-rag", "kg-rag"] and calls[-1][1]["max_hops"] == 2
    assert at.slider(key=K_STEP).value == 1  # a new run starts at its first step
    next(n for n in at.number_input if n.key.endswith("|max_hops")).set_value(5).run()
    assert len(calls) == 2  # back to the first setting: cached
    at.selectbox(key="kgviz_trace_method").set_value("text-rag").run()
    assert [c[0] for c in calls] == ["kg-rag", "kg-rag", "text-rag"]
    at.selectbox(key="kgviz_trace_method").set_value("kg-rag").run()
    assert len(calls) == 3 and not at.exception
    # with auto re-run off a changed input waits for Run
    at.toggle(key="kgviz_trace_auto").set_value(False).run()
    next(n for n in at.number_input if n.key.endswith("|max_hops")).set_value(3).run()
    assert len(calls) == 3 and any("Press Run" in t for t in texts(at, "info"))
    _button(at, "Run").click().run()
    assert len(calls) == 4


# --- a failing method and a method with KET-RAG / KG-Infused extras ---------------------------------
HOSTILE = "**bold** [link](https://tracker.example/x) <img src=x>"


@dataclass(frozen=True)
class _ModeParams:
    mode: str = param("a", "'a' or 'b' (test)")


class _Broken:
    name: ClassVar[str] = "test-broken"
    title: ClassVar[str] = "Broken on purpose"
    paper: ClassVar[str] = "test"
    Params: ClassVar[type] = _ModeParams
    presets: ClassVar[dict[str, Any]] = {}

    def retrieve(self, question: str, ctx: MethodContext, params: Any, tracer: Tracer) -> RetrievedContext:
        tracer.step("seed", "Seed found", f"seed {HOSTILE}", nodes=[NodeRef("e1", "Entity", "seed", HOSTILE)])
        tracer.step("expand", "Expanded", nodes=[NodeRef("e2", "Entity", "candidate", "Two")],
                    edges=[EdgeRef("e1", "e2", "links")])
        raise MethodError(f"the walk broke: {HOSTILE}", hint="try another question")


class _Extras:
    name: ClassVar[str] = "test-extras"
    title: ClassVar[str] = "Round and channel data"
    paper: ClassVar[str] = "test"
    Params: ClassVar[type] = _ModeParams
    presets: ClassVar[dict[str, Any]] = {"b-preset": _ModeParams(mode="b")}

    def retrieve(self, question: str, ctx: MethodContext, params: Any, tracer: Tracer) -> RetrievedContext:
        tracer.step("expand", "Round 1", nodes=[NodeRef("e1", "Entity", "seed", "One")],
                    data={"round": 1, "frontier": ["e1", "e2", "e3"]})
        tracer.step("seed", "Skeleton", data={"channel": "skeleton", "used": 300, "budget": 1600})
        tracer.step("seed", "Keywords", data={"channel": "keyword", "used": 1200, "budget": 2400})
        return RetrievedContext()


@pytest.fixture
def fake_methods(monkeypatch: pytest.MonkeyPatch) -> None:
    registry = methods_base._METHODS
    monkeypatch.setitem(registry, _Broken.name, _Broken)
    monkeypatch.setitem(registry, _Extras.name, _Extras)


def test_failing_method_shows_partial_trace_and_error(app_env: Path, fake_methods: None) -> None:
    at = _run(_open_trace(new_app().run(), "test-broken"))
    errors = texts(at, "error")
    assert len(errors) == 1 and "the walk broke" in errors[0] and "try another question" in errors[0]
    assert "partial" in errors[0] and "](" not in errors[0] and "**" not in errors[0]
    assert not at.exception  # a message, no stack trace
    assert int(at.slider(key=K_STEP).max) == 3  # seed, expand, then the recorded error step
    assert _step_header(at) == "**Step 1 of 3 · seed**"
    assert not any("](" in t or "**bold" in t for t in texts(at, "markdown") if "bold" in t)
    at.slider(key=K_STEP).set_value(3).run()
    assert _step_header(at) == "**Step 3 of 3 · error**"
    captions = texts(at, "caption")
    assert any("No answer: the run failed (offline" in t for t in captions), captions
    # no claim of an answer next to the failure, and no stale "press Run" prompt beside the run
    assert not any("Answered by" in t or "extractive answer" in t for t in captions), captions
    assert not any("Press Run" in t for t in texts(at, "info"))


def test_round_and_channel_budget_extras(app_env: Path, fake_methods: None) -> None:
    at = _run(_open_trace(new_app().run(), "test-extras"))
    assert {m.label: m.value for m in at.metric}.get("Activation round") == "1"
    assert {m.label: m.value for m in at.metric}.get("Frontier size") == "3"
    assert not at.get("progress")
    at.slider(key=K_STEP).set_value(3).run()
    bars = [b.proto.text for b in at.get("progress")]
    assert bars == ["skeleton channel: 300 of 1,600 tokens", "keyword channel: 1,200 of 2,400 tokens"]
    assert [b.proto.value for b in at.get("progress")] == [18, 50]
    # str params become a selectbox of the values the doc names; presets set the starting value
    mode = next(s for s in at.selectbox if s.key.endswith("|mode"))
    assert mode.options == ["a", "b"] and mode.value == "a"
    at.selectbox(key="kgviz_trace_preset|test-extras").set_value("b-preset").run()
    assert next(s for s in at.selectbox if s.key.endswith("|mode")).value == "b"


def test_empty_workspace_says_what_to_do(app_env: Path) -> None:
    at = new_app().run()
    at.switch_page(PAGE).run()
    assert not at.exception
    assert any("no entities yet" in t for t in texts(at, "info"))


# --- the parameter form, without a page ------------------------------------------------------------
def test_str_choices_from_docs_literals_and_metadata() -> None:
    assert str_choices("'paper': all sub-chunks; 'code': best first", "paper") == ("paper", "code")
    doc = "'hybrid' (ours) | 'dense' (the paper; presets 'paper' and 'code') | 'bm25' (ours)"
    assert str_choices(doc, "hybrid") == ("hybrid", "dense", "bm25")
    assert str_choices("what T caps: 'triples' (§3 'maximum of retrieved triples') or 'entities'",
                       "triples") == ("triples", "entities")
    assert str_choices("free text", "x") == ("x",)
    assert str_choices("ignored 'y'", "x", declared=("x", "z")) == ("x", "z")


def test_param_specs_cover_every_registered_method() -> None:
    from kgviz.methods.registry import get_method, list_methods

    kinds: set[str] = set()
    for name in list_methods():
        method = get_method(name)
        specs = param_specs(method.Params)
        for spec in specs:
            kinds.add(spec.kind)
            if spec.kind == "choice":
                assert spec.default in spec.choices and len(spec.choices) >= 2
                for preset in method.presets.values():  # every preset's value is offered
                    assert getattr(preset, spec.name) in spec.choices, (name, spec.name)
    assert {"bool", "int", "float"} <= kinds


def test_every_registered_method_traces_without_an_exception(app_env: Path) -> None:
    """Smoke test over the real methods on the sample: each run ends in a stepable trace (a
    method failing on this graph shows its error, never a stack trace)."""
    from kgviz.methods.registry import list_methods

    at = _run(_open_trace(new_app().run()))
    for name in list_methods():
        at.selectbox(key="kgviz_trace_method").set_value(name).run()  # auto re-run after the first
        assert not at.exception, (name, at.exception)
        assert _step_header(at).startswith("**Step 1 of "), name
        last = at.get("slider")
        if last and last[-1].key == K_STEP:
            last[-1].set_value(int(last[-1].max)).run()
            assert not at.exception, (name, at.exception)


def test_preset_list_has_one_defaults_entry(app_env: Path) -> None:
    # "(defaults)" is the page's own entry for the Params defaults; a method preset named "default"
    # would list the same thing twice
    at = _open_trace(new_app().run(), "ket-rag")
    options = list(at.selectbox(key=f"{K_PRESET}|ket-rag").options)
    assert options[0] == NO_PRESET and options.count(NO_PRESET) == 1
    assert not any(o.strip("()").lower() in ("default", "defaults") for o in options[1:]), options
    for name, method in methods_base.registered().items():
        assert "default" not in method.presets, name
