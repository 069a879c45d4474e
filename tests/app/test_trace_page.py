"""The Trace page driven headlessly (AppTest, offline, hashing embedder): run a method on the
sample, step through its trace, re-run only on a changed input, and show failures with their
partial trace. Fixtures: tests/app/conftest.py (``app_env``)."""
from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import pytest
from streamlit.testing.v1 import AppTest

import kgviz.run
from kgviz.errors import MethodError
from kgviz.methods import base as methods_base
from kgviz.methods.base import EdgeRef, MethodContext, NodeRef, RetrievedContext, Tracer, param
from kgviz.ui.trace import K_PRESET, NO_PRESET, param_specs
from tests.support.methods import StandInMethod
from test_app_pages import OFFLINE, new_app, texts

PAGE = "pages/trace.py"
QUESTION = "In what year was the Tidewell Line founded?"


def _button(at: AppTest, label: str):  # noqa: ANN202 - AppTest element type
    return next(b for b in at.button if b.label == label)


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


def _player(at: AppTest) -> dict[str, Any]:
    """The data embedded in the Trace player iframe (every step's frame and panel)."""
    page = _graph_page(at)
    m = re.search(r'<script type="application/json" id="kp-data">(.*?)</script>', page, re.S)
    assert m, "the player page embeds its steps as JSON"
    return json.loads(m.group(1))


def _heads(at: AppTest) -> list[str]:
    return [s["panel"]["head"] for s in _player(at)["steps"]]


def test_kg_rag_runs_and_every_step_is_in_the_player(app_env: Path) -> None:
    at = _open_trace(new_app().run())
    sample = at.selectbox(key="kgviz_trace_sample")
    assert QUESTION in sample.options
    sample.set_value(QUESTION).run()  # picking a sample fills the question box
    assert at.text_input(key="kgviz_trace_question").value == QUESTION
    _button(at, "Run").click().run()
    assert not at.exception, at.exception
    data = _player(at)
    total = len(data["steps"])
    assert total >= 6
    # stepping happens in the browser: no Streamlit step buttons or slider any more
    assert not [b for b in at.button if b.label in ("Previous", "Next", "Play")]
    assert _heads(at)[:2] == [f"Step 1 of {total} · llm", f"Step 2 of {total} · seed"]
    plan = data["steps"][0]["panel"]
    assert plan["title"] == "Plan the exploration"
    assert "prompt kg_rag.PLAN" in plan["llm"]["line"] and "offline heuristic: plan" in plan["llm"]["line"]
    # step 1 touches no graph element; step 2 draws the seeds, with positions for every node
    assert data["visuals"][data["steps"][0]["v"]]["nodes"] == []
    seeds = data["visuals"][data["steps"][1]["v"]]["nodes"]
    assert seeds and all(isinstance(data["nodes"][n[0]]["x"], float) for n in seeds)
    # a select step says why: candidates with scores and chosen / rejected marks, best first
    select = next(s["panel"] for s in data["steps"] if s["panel"]["head"].endswith("· select"))
    marks = [r[0] for r in select["rows"]]
    assert "✓ chosen" in marks and "✗ rejected" in marks
    scored = [float(r[2]) for r in select["rows"] if r[2]]
    assert scored == sorted(scored, reverse=True) and scored
    # an evaluate step ("enough to answer?") keeps the previous frame highlighted
    i = next(k for k, s in enumerate(data["steps"]) if "enough to answer" in s["panel"]["title"])
    assert data["steps"][i]["v"] == data["steps"][i - 1]["v"] and data["steps"][i]["panel"]["note"]
    assert data["steps"][0]["panel"]["cost"].startswith("0 LLM call(s)")
    # below the viewer: the final context, the answer (labelled offline) and total usage
    context = next(df.value for df in at.dataframe if "kind" in df.value.columns and "source" in df.value.columns)
    assert set(context["kind"]) <= {"triple", "sentence"} and len(context) > 0
    assert any("1898" in t for t in texts(at, "markdown"))
    assert any(t.startswith(OFFLINE) for t in texts(at, "caption"))
    assert {m.label for m in at.metric} >= {"LLM calls", "cost"}


def test_chunks_and_documents_carry_human_labels(app_env: Path) -> None:
    at = _run(_open_trace(new_app().run(), "text-rag"))
    data = _player(at)
    labels = [n["label"] for n in data["nodes"]]
    assert labels and not any(lab.startswith("doc:") for lab in labels), labels
    assert any(lab.startswith("Tidewell Line: ") for lab in labels), labels
    assert any("doc:" in n["tip"] for n in data["nodes"])  # ids stay in tooltips


def test_param_change_reruns_only_that_method(app_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, dict[str, Any]]] = []
    real = kgviz.run.run_method

    def counting(name: str, question: str, ctx: MethodContext, params: Any = None, **kw: Any) -> kgviz.run.Run:
        calls.append((name, dict(params or {})))
        return real(name, question, ctx, params, **kw)

    monkeypatch.setattr(kgviz.run, "run_method", counting)
    at = _run(_open_trace(new_app().run()))
    assert [c[0] for c in calls] == ["kg-rag"]
    at.run()
    assert len(calls) == 1  # a rerun replays the stored run
    hops = next(n for n in at.number_input if n.key.endswith("|max_hops"))
    hops.set_value(2).run()
    assert [c[0] for c in calls] == ["kg-rag", "kg-rag"] and calls[-1][1]["max_hops"] == 2
    assert _heads(at)[0].startswith("Step 1 of ")  # a new run's player starts at its first step
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
    mode: str = param("a", "'a' or 'b' (test)", choices=("a", "b"), label="Mode of the test")


class _Broken(StandInMethod):
    name: ClassVar[str] = "test-broken"
    title: ClassVar[str] = "Broken on purpose"
    Params: ClassVar[type] = _ModeParams

    def retrieve(self, question: str, ctx: MethodContext, params: Any, tracer: Tracer) -> RetrievedContext:
        tracer.step("seed", "Seed found", f"seed {HOSTILE}", nodes=[NodeRef("e1", "Entity", "seed", HOSTILE)])
        tracer.step("expand", "Expanded", nodes=[NodeRef("e2", "Entity", "candidate", "Two")],
                    edges=[EdgeRef("e1", "e2", "links")])
        raise MethodError(f"the walk broke: {HOSTILE}", hint="try another question")


class _Extras(StandInMethod):
    name: ClassVar[str] = "test-extras"
    title: ClassVar[str] = "Round and channel data"
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
    heads = _heads(at)  # seed, expand, then the recorded error step
    assert heads == ["Step 1 of 3 · seed", "Step 2 of 3 · expand", "Step 3 of 3 · error"]
    page = _graph_page(at)
    assert "<img src=x>" not in page and "**bold** [link]" in json.dumps(_player(at))  # kept as inert text
    captions = texts(at, "caption")
    assert any("No answer: the run failed (offline" in t for t in captions), captions
    # no claim of an answer next to the failure, and no stale "press Run" prompt beside the run
    assert not any("Answered by" in t or "extractive answer" in t for t in captions), captions
    assert not any("Press Run" in t for t in texts(at, "info"))


def test_round_and_channel_budget_extras(app_env: Path, fake_methods: None) -> None:
    at = _run(_open_trace(new_app().run(), "test-extras"))
    panels = [s["panel"] for s in _player(at)["steps"]]
    assert ["activation round", "1"] in panels[0]["facts"] and ["frontier size", "3"] in panels[0]["facts"]
    assert panels[0]["bars"] == []
    bars = panels[2]["bars"]
    assert [b["label"] for b in bars] == ["skeleton channel, in the context: 300 of 1,600 tokens (θ·λ)",
                                          "keyword channel, in the context: 1,200 of 2,400 tokens ((1−θ)·λ)"]
    assert [round(100 * b["fraction"]) for b in bars] == [19, 50]
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
def test_param_specs_take_choices_and_labels_from_the_declaration_not_the_doc() -> None:
    @dataclass(frozen=True)
    class P:
        pick: Literal["x", "y"] = param("x", "'x', 'y' or 'q' (the doc names a value the type does not)")
        listed: str = param("m", "free", choices=("n", "m"), label="A listed field")
        free: str = param("t", "quoted 'u' and 'v' are prose here")

    specs = {s.name: s for s in param_specs(P)}
    assert (specs["pick"].kind, specs["pick"].choices, specs["pick"].label) == ("choice", ("x", "y"), "Pick")
    assert (specs["listed"].choices, specs["listed"].label) == (("n", "m"), "A listed field")
    assert (specs["free"].kind, specs["free"].choices) == ("text", ("t",))


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
        heads = _heads(at)
        assert heads[0].startswith("Step 1 of ") and heads[-1].startswith(f"Step {len(heads)} of {len(heads)} · "), name


def test_preset_list_has_one_defaults_entry(app_env: Path) -> None:
    # "(defaults)" is the page's own entry for the Params defaults; a method preset named "default"
    # would list the same thing twice
    at = _open_trace(new_app().run(), "ket-rag")
    options = list(at.selectbox(key=f"{K_PRESET}|ket-rag").options)
    assert options[0] == NO_PRESET and options.count(NO_PRESET) == 1
    assert not any(o.strip("()").lower() in ("default", "defaults") for o in options[1:]), options
    for name, method in methods_base.registered().items():
        assert "default" not in method.presets, name


def test_inputs_survive_a_visit_to_another_page(app_env: Path) -> None:
    at = _run(_open_trace(new_app().run(), "kg-retriever"))
    at.switch_page("pages/home.py").run()
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    assert at.text_input(key="kgviz_trace_question").value == QUESTION
    assert at.selectbox(key="kgviz_trace_method").value == "kg-retriever"
    assert _player(at)["run"] == "kg-retriever"  # the run is still there, not "Press Run"


def test_the_workspace_lives_in_the_url(app_env: Path) -> None:
    from kgviz.ui.state import K_WORKSPACE

    (app_env.parent / "lecture-3").mkdir(parents=True)
    at = new_app()
    at.query_params["ws"] = "lecture-3"
    at.run()
    assert not at.exception, at.exception
    assert Path(at.session_state[K_WORKSPACE]).name == "lecture-3"  # a reload starts there
    at.selectbox(key=K_WORKSPACE).set_value(str(app_env)).run()
    assert at.query_params["ws"] == ["default"] or at.query_params["ws"] == "default"
    # a name that is not a workspace is ignored (never a path from the URL)
    other = new_app()
    other.query_params["ws"] = "../../etc"
    other.run()
    assert Path(other.session_state[K_WORKSPACE]) == app_env


def test_parameters_have_readable_labels_and_name_the_paper() -> None:
    from kgviz.methods.registry import get_method, list_methods
    from kgviz.methods.base import param_label
    from kgviz.ui.trace import param_help

    for name in list_methods():
        method = get_method(name)
        for spec in param_specs(method.Params):
            label = param_label(method.Params, spec.name)
            assert spec.label == label
            declared = {f.name: f.metadata.get("label") for f in dataclasses.fields(method.Params)}
            assert declared[spec.name] == label, (name, spec.name)  # each real field declares its label
            assert "_" not in label and label[0].isupper(), (name, spec.name, label)
            text = param_help(spec.name, spec.doc, str(method.paper))
            assert not re.search(r"\bpaper 00\d", text), text
            assert f"field `{spec.name}`" in text  # the raw name stays findable (CLI, presets)
    from kgviz.methods.kg_retriever import KGRetrieverParams

    assert param_label(KGRetrieverParams, "lam") == "Entity filter λ"
    assert param_label(KGRetrieverParams, "t_caps") == "What T counts"
    assert "section of the KG-Retriever paper" in param_help("lam", "λ (§3.2.2 Eq. 2)", "002")


def test_presentation_mode_is_kept_in_the_url_and_reaches_the_player(app_env: Path) -> None:
    from kgviz.ui.trace import K_PRESENT, PRESENT_PLAYER

    at = _run(_open_trace(new_app().run()))
    assert _player(at)["present"] is False and "present" not in at.query_params
    assert _player(at)["algo"]["title"].startswith("Chain of Explorations")  # the algorithm box
    at.toggle(key=K_PRESENT).set_value(True).run()
    assert not at.exception, at.exception
    assert at.query_params["present"] in ("1", ["1"])  # a reload or a shared link keeps it
    data = _player(at)
    assert data["present"] is True and data["presentMinLabelPx"] >= 16
    assert f"height:{PRESENT_PLAYER.height}px" in _graph_page(at)  # fits 1280×720 below the header
    lesson = [b for b in at.get("download_button") if "lesson" in b.proto.label.lower()]
    assert len(lesson) == 1
    at.toggle(key=K_PRESENT).set_value(False).run()
    assert "present" not in at.query_params and _player(at)["present"] is False


def test_a_runs_frames_are_made_once_for_its_player_and_its_lesson(app_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The player and the lesson download draw the same frames (``tp.run_frames``: the run's
    labels, facts' links and layout): made once per run, not again for the lesson or when the
    presentation setting changes."""
    from kgviz.ui.trace import K_PRESENT
    from kgviz.viz import trace_player as tp

    calls: list[int] = []
    real = tp.run_frames

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(len(args[0]))
        return real(*args, **kwargs)
    monkeypatch.setattr(tp, "run_frames", counted)
    at = _run(_open_trace(new_app().run()))
    assert [b for b in at.get("download_button") if "lesson" in b.proto.label.lower()]
    assert len(calls) == 1, calls
    at.toggle(key=K_PRESENT).set_value(True).run()
    assert not at.exception and _player(at)["present"] is True
    assert len(calls) == 1, calls
